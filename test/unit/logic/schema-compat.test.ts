/** Whether a release may run on a schema: the table of cases start() and the CLI decide with. */
import { describe, expect, it } from "vitest";
import { schemaVerdict, schemaVerdictMessage, type SchemaFacts } from "../../../src/logic/schema-compat.js";
import { isBreaking } from "../../../src/store/migrations/migration.js";
import { loadMigrations } from "../../../src/store/migrations/migrate.js";

const facts = (f: Partial<SchemaFacts>): SchemaFacts => ({
  schemaVersion: 12,
  requiredVersion: 12,
  pending: [],
  unknown: [],
  unknownBreaking: [],
  ...f,
});

describe("schemaVerdict", () => {
  it.each([
    ["current", facts({}), "current"],
    ["behind by two", facts({ schemaVersion: 10, pending: ["0011_a.sql", "0012_b.sql"] }), "behind"],
    ["not migrated", facts({ schemaVersion: 0, pending: ["0001_init.sql"] }), "behind"],
    ["ahead, compatible", facts({ schemaVersion: 13, unknown: [13] }), "ahead"],
    [
      "ahead, breaking",
      facts({ schemaVersion: 14, unknown: [13, 14], unknownBreaking: [14] }),
      "incompatible",
    ],
    // A hole (a migration of this release skipped while a newer one ran) is still "behind": migrate fills it.
    ["behind and ahead", facts({ schemaVersion: 13, pending: ["0012_b.sql"], unknown: [13] }), "behind"],
  ])("%s", (_, f, kind) => {
    expect(schemaVerdict(f).kind).toBe(kind);
  });

  it("names both versions and the command to run", () => {
    const f = facts({ schemaVersion: 10, pending: ["0011_a.sql", "0012_b.sql"] });
    const text = schemaVerdictMessage(schemaVerdict(f), f, "pawl", "0.2.0");
    expect(text).toContain("version 10");
    expect(text).toContain("needs version 12");
    expect(text).toContain('"pawl migrate --schema pawl"');
    expect(text).toContain("pawl.migrate()");
    const g = facts({ schemaVersion: 14, unknown: [14], unknownBreaking: [14] });
    expect(schemaVerdictMessage(schemaVerdict(g), g, "pawl", "0.2.0")).toMatch(/deploy the release/);
    expect(schemaVerdictMessage({ kind: "ahead", unknown: [13] }, facts({}), "pawl", "0.2.0")).toBeNull();
  });
});

describe("migration declarations", () => {
  it("every migration from 0012 on says whether the previous release stays correct beside it", () => {
    for (const m of loadMigrations().filter((m) => m.version >= 12)) {
      expect(m.sql, m.name).toMatch(/^-- previous release: (compatible|breaking)/);
    }
  });

  it("reads the breaking marker", () => {
    expect(
      isBreaking({ version: 13, name: "x", sql: "-- previous release: breaking (drops a column)\n" }),
    ).toBe(true);
    expect(isBreaking({ version: 13, name: "x", sql: "-- previous release: compatible\n" })).toBe(false);
  });
});
