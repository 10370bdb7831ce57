/**
 * src/store/migrations/migrations.generated.ts must match migrations/*.sql: pawl loads its migrations from that
 * module, never from the files, so a migration added without regenerating would silently not run. The
 * failure message names the command that fixes it.
 */
import { describe, expect, it } from "vitest";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  generatedPath,
  readMigrationFiles,
  regenerateCommand,
  renderMigrationsModule,
} from "../../../scripts/gen-migrations.js";
import { loadMigrations } from "../../../src/store/migrations/migrate.js";

describe("the generated migrations module", () => {
  it("is up to date with migrations/", () => {
    const expected = renderMigrationsModule(readMigrationFiles());
    const actual = readFileSync(generatedPath, "utf8");
    expect(
      actual === expected,
      `src/store/migrations/migrations.generated.ts is out of date with migrations/: run \`${regenerateCommand}\` and commit the result`,
    ).toBe(true);
  });

  it("is what migrate applies: every file, in order, with its exact SQL", () => {
    const files = readMigrationFiles();
    expect(files.length).toBeGreaterThan(0);
    expect(loadMigrations()).toEqual(files);
    expect(files.map((f) => f.version)).toEqual([...files.map((f) => f.version)].sort((a, b) => a - b));
  });

  it("keeps backticks, backslashes and ${ in SQL as they are", () => {
    const sql = "SELECT '`a`', E'\\\\n', '${x}', $$ $1 $$; -- \\`\n";
    const text = renderMigrationsModule([{ version: 7, name: "0007_odd.sql", sql }]);
    // The array literal is plain JavaScript once the type annotation is gone.
    const literal = text.slice(text.indexOf("= [") + 2);
    const evaluated = new Function(`return ${literal}`)() as { sql: string }[];
    expect(evaluated[0]?.sql).toBe(sql);
  });

  describe("reading migrations/", () => {
    it("refuses a .sql file that is not named NNNN_description.sql, instead of skipping it", () => {
      const dir = mkdtempSync(join(tmpdir(), "pawl-mig-"));
      try {
        writeFileSync(join(dir, "0001_init.sql"), "SELECT 1;\n");
        writeFileSync(join(dir, "5_finished.sql"), "SELECT 1;\n");
        expect(() => readMigrationFiles(dir)).toThrow(
          "migrations/5_finished.sql: name it NNNN_description.sql",
        );
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it("refuses two files with one number", () => {
      const dir = mkdtempSync(join(tmpdir(), "pawl-mig-"));
      try {
        writeFileSync(join(dir, "0005_a.sql"), "SELECT 1;\n");
        writeFileSync(join(dir, "0005_b.sql"), "SELECT 1;\n");
        writeFileSync(join(dir, "README.md"), "not a migration\n");
        expect(() => readMigrationFiles(dir)).toThrow("share the number 5");
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
});
