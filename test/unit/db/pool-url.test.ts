import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { resolveConfig } from "../../../src/input/config.js";
import { poolConnectionString } from "../../../src/db/pool-url.js";

// Pools are built but never connected: pg.Pool opens nothing until a query.
const pools: pg.Pool[] = [];
function pool(config: pg.PoolConfig): pg.Pool {
  const p = new pg.Pool(config);
  pools.push(p);
  return p;
}
afterEach(async () => {
  for (const p of pools.splice(0)) await p.end();
});

describe("poolConnectionString", () => {
  it.each<[string, pg.PoolConfig, string | undefined]>([
    ["its connectionString", { connectionString: "postgres://a@h:6543/app" }, "postgres://a@h:6543/app"],
    [
      "fields",
      { host: "db", port: 5433, user: "u", password: "p w", database: "app" },
      "postgres://u:p%20w@db:5433/app",
    ],
    ["a database alone", { database: "test" }, "postgres:///test"],
    [
      "a socket directory",
      { host: "/var/run/postgresql", database: "app" },
      "postgres:///app?host=%2Fvar%2Frun%2Fpostgresql",
    ],
    ["a password function", { host: "db", password: () => "secret" }, undefined],
    ["nothing set", {}, undefined],
    ["a database name pg cannot read from a URL", { host: "db", database: "a?b" }, undefined],
  ])("%s", (_name, config, expected) => {
    expect(poolConnectionString(pool(config))).toBe(expected);
  });

  it("a URL made from fields names the same server and database when pg parses it back", () => {
    const url = poolConnectionString(pool({ host: "db", port: 5433, user: "u@x", database: "a/b c%" }));
    const back = new pg.Client({ connectionString: url });
    expect([back.host, back.port, back.user, back.database]).toEqual(["db", 5433, "u@x", "a/b c%"]);
  });
});

describe("resolveConfig with the user's pool", () => {
  const saved = process.env.DATABASE_URL;
  afterEach(() => {
    if (saved === undefined) delete process.env.DATABASE_URL;
    else process.env.DATABASE_URL = saved;
  });

  it("takes the pool's database for pawl's own connections, before DATABASE_URL", () => {
    process.env.DATABASE_URL = "postgres://elsewhere/other";
    const c = resolveConfig({ pool: pool({ connectionString: "postgres://u@h:5432/jobs" }) });
    expect(c.connectionString).toBe("postgres://u@h:5432/jobs");
  });

  it("an explicit connectionString still wins", () => {
    const c = resolveConfig({
      pool: pool({ connectionString: "postgres://u@h:5432/jobs" }),
      connectionString: "postgres://u@h:5432/listen",
    });
    expect(c.connectionString).toBe("postgres://u@h:5432/listen");
  });

  it("falls back to DATABASE_URL when the pool's settings are not a URL", () => {
    process.env.DATABASE_URL = "postgres://fallback/db";
    const c = resolveConfig({ pool: pool({ host: "db", password: () => "x" }) });
    expect(c.connectionString).toBe("postgres://fallback/db");
  });
});
