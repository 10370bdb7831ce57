/**
 * `preparedStatements` and `directConnectionString`: defaults, environment variables and refusals, as
 * resolveConfig reads them (docs/deployment.md#transaction-poolers).
 */
import pg from "pg";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { coordinatorFor, resolveConfig, type PawlConfig } from "../../../src/input/config.js";
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

describe("the default coordinator", () => {
  afterEach(() => {
    if (saved.PAWL_COORDINATOR === undefined) delete process.env.PAWL_COORDINATOR;
    else process.env.PAWL_COORDINATOR = saved.PAWL_COORDINATOR;
  });

  const urlPool = new pg.Pool({ connectionString: "postgres://app@db:5432/app" });
  // A password function cannot be written into a URL: pawl cannot tell where LISTEN should go.
  const opaquePool = new pg.Pool({ host: "db", password: () => "secret" });
  afterAll(async () => {
    await Promise.all([urlPool.end(), opaquePool.end()]);
  });

  it.each([
    ["only a connection string", { connectionString: "postgres://app@db/app" }, "auto"],
    ["nothing at all", {}, "auto"],
    ["a pool with a URL", { pool: urlPool }, "auto"],
    ["a pool without one", { pool: opaquePool }, "none"],
    [
      "a pool without one, and connectionString",
      { pool: opaquePool, connectionString: "postgres://db/app" },
      "auto",
    ],
    [
      "a pool without one, and a direct URL",
      { pool: opaquePool, directConnectionString: "postgres://db/app" },
      "auto",
    ],
    ["a chosen one", { coordinator: "none" }, "none"],
    ["the embedded database", { connectionString: "pglite://memory" }, "in-memory"],
  ] as const)("with %s is %s", (_name, config, expected) => {
    delete process.env.PAWL_COORDINATOR;
    expect(resolveConfig(config as PawlConfig).coordinator).toBe(expected);
  });

  it("PAWL_COORDINATOR replaces it, and auto on the embedded database means in-memory", () => {
    process.env.PAWL_COORDINATOR = "none";
    expect(resolveConfig({}).coordinator).toBe("none");
    process.env.PAWL_COORDINATOR = "auto";
    expect(resolveConfig({ connectionString: "pglite://memory" }).coordinator).toBe("in-memory");
  });
});
