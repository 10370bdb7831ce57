/**
 * `preparedStatements` and `directConnectionString`: defaults, environment variables and refusals, as
 * resolveConfig reads them (docs/deployment.md#transaction-poolers).
 */
import { afterEach, describe, expect, it } from "vitest";
import { coordinatorFor, resolveConfig } from "../../../src/input/config.js";
import { ValidationError } from "../../../src/core/errors.js";
import { named, tablesFor } from "../../../src/db/sql.js";

const saved = { ...process.env };
afterEach(() => {
  for (const k of ["PAWL_PREPARED_STATEMENTS", "PAWL_DIRECT_DATABASE_URL"]) {
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
  }
});

describe("preparedStatements", () => {
  it.each([
    [{}, undefined, true],
    [{ preparedStatements: false }, undefined, false],
    [{}, "false", false],
    [{}, "off", false],
    [{}, "true", true],
    [{ preparedStatements: true }, "false", true],
  ] as const)("%j with env %s resolves to %s", (config, env, expected) => {
    if (env !== undefined) process.env.PAWL_PREPARED_STATEMENTS = env;
    expect(resolveConfig(config).preparedStatements).toBe(expected);
  });

  it("refuses what is not a boolean, naming the option", () => {
    expect(() => resolveConfig({ preparedStatements: "no" as unknown as boolean })).toThrow(
      /preparedStatements/,
    );
    process.env.PAWL_PREPARED_STATEMENTS = "maybe";
    expect(() => resolveConfig({})).toThrow(/PAWL_PREPARED_STATEMENTS=maybe/);
  });

  it("decides whether a statement carries its name", () => {
    expect(named(tablesFor("s"), "x", "SELECT 1")([])).toEqual({
      name: "pawl_s_x",
      text: "SELECT 1",
      values: [],
    });
    expect(named(tablesFor("s", false), "x", "SELECT 1")([1])).toEqual({ text: "SELECT 1", values: [1] });
  });
});

describe("directConnectionString", () => {
  const direct = "postgres://app:secret@db.internal:5432/app";

  it("is what the postgres coordinator listens on; connectionString serves the rest", async () => {
    const c = resolveConfig({
      connectionString: "postgres://app@pooler:6432/app",
      directConnectionString: direct,
    });
    expect(c.directConnectionString).toBe(direct);
    expect(c.connectionString).toBe("postgres://app@pooler:6432/app");
    process.env.PAWL_DIRECT_DATABASE_URL = direct;
    expect(resolveConfig({}).directConnectionString).toBe(direct);
    const coordinator = (await coordinatorFor({ ...c, coordinator: "postgres" })) as unknown as {
      config: { connectionString: string };
    };
    expect(coordinator.config.connectionString).toBe(direct);
  });

  it.each([
    [{ directConnectionString: "db.internal:5432" }, /postgres:\/\/ URL of a direct/],
    [{ directConnectionString: 5432 as unknown as string }, /directConnectionString/],
    [{ connectionString: "pglite://memory", directConnectionString: direct }, /embedded database/],
  ])("refuses %j with a typed error that says what to do", (config, message) => {
    let error: unknown;
    try {
      resolveConfig(config);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).code).toBe("INVALID_CONFIG");
    expect(String(error)).toMatch(message);
    expect(String(error)).not.toContain("secret");
  });
});
