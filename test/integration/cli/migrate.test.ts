/**
 * `pawl migrate --check`, `pawl migrate --print` and `pawl --version`, run through the CLI in-process as
 * test/integration/cli/cli.test.ts does. The printed script is applied with plain SQL and must leave the same
 * tables as `pawl migrate`, so --print cannot drift from what a node runs.
 */
import { afterAll, describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { loadMigrations, migrationScript } from "../../../src/store/migrations/migrate.js";
import { databaseUrl, dropSchema, testPool, uniqueSchema } from "../../helpers/db.js";
import { runCli } from "../../helpers/cli.js";

const pool = testPool();
const schemas: string[] = [];
afterAll(async () => {
  for (const s of schemas) await dropSchema(pool, s);
  await pool.end();
});

const fresh = (prefix: string) => {
  const schema = uniqueSchema(prefix);
  schemas.push(schema);
  return schema;
};

const on = (schema: string, ...argv: string[]) =>
  runCli(["migrate", ...argv, "--schema", schema, "--database-url", databaseUrl]);

const all = loadMigrations();

/** The columns of every table in a schema, to compare two schemas' shapes. */
async function shape(schema: string): Promise<string[]> {
  const res = await pool.query<{ c: string }>(
    `SELECT table_name || '.' || column_name || ':' || data_type AS c
       FROM information_schema.columns WHERE table_schema = $1 ORDER BY 1`,
    [schema],
  );
  return res.rows.map((r) => r.c);
}

const schemaExists = async (schema: string) =>
  (await pool.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema])).rowCount === 1;

describe("pawl --version", () => {
  it("prints the version in package.json", async () => {
    const { version } = JSON.parse(readFileSync(new URL("../../../package.json", import.meta.url), "utf8"));
    for (const flag of ["--version", "-V"]) {
      expect(await runCli([flag])).toEqual({ code: 0, stdout: `${version}\n`, stderr: "" });
    }
  });
});

describe("pawl migrate --check", () => {
  it("exits 1 naming every pending migration on a new schema, and creates nothing", async () => {
    const schema = fresh("chk");
    const r = await on(schema, "--check");
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain(`schema ${schema} is at version 0 and has ${all.length} pending migrations`);
    for (const m of all) expect(r.stderr).toContain(m.name);
    expect(r.stderr).toContain('run "pawl migrate"');
    expect(await schemaExists(schema)).toBe(false);

    const asJson = await on(schema, "--check", "--json");
    expect(asJson.code).toBe(1);
    expect(JSON.parse(asJson.stdout)).toEqual({
      schema,
      current: false,
      version: 0,
      pending: all.map((m) => m.name),
      unknown: [],
    });
  });

  it("exits 0 once pawl migrate has run, and 1 again for what a partial schema lacks", async () => {
    const schema = fresh("chk");
    // Bring the schema to the second-last version with the printed script of the older migrations.
    await pool.query(migrationScript(schema, all.slice(0, -1)));
    const last = all.at(-1)!;
    const partial = await on(schema, "--check");
    expect(partial.code).toBe(1);
    expect(partial.stderr).toContain(`has 1 pending migration (${last.name})`);

    expect((await on(schema)).code).toBe(0);
    const current = await on(schema, "--check");
    expect(current).toEqual({
      code: 0,
      stdout: `schema ${schema} is up to date (version ${last.version})\n`,
      stderr: "",
    });
  });

  it("stays 0 when a newer pawl added versions this one does not know, and says so", async () => {
    const schema = fresh("chk");
    expect((await on(schema)).code).toBe(0);
    await pool.query(
      `INSERT INTO "${schema}".pawl_migrations (version, name) VALUES (9999, '9999_future.sql')`,
    );
    const r = await on(schema, "--check");
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("versions this pawl does not know (9999)");
  });

  it("refuses --check with --print as a usage error", async () => {
    const r = await on(fresh("chk"), "--check", "--print");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--check and --print cannot be combined");
  });
});

describe("pawl migrate --print", () => {
  it("prints SQL for the configured schema that leaves what pawl migrate leaves", async () => {
    const printed = fresh("prt");
    const migrated = fresh("prt");
    const r = await on(printed, "--print");
    expect(r.code).toBe(0);
    expect(r.stderr).toBe("");
    expect(r.stdout).not.toContain("{{schema}}");
    expect(r.stdout).toContain(`CREATE SCHEMA IF NOT EXISTS "${printed}"`);
    for (const m of all) expect(r.stdout).toContain(`-- ${m.name}`);
    // Printing applied nothing.
    expect(await schemaExists(printed)).toBe(false);

    await pool.query(r.stdout); // one simple-protocol query, as psql -f would send it
    expect((await on(migrated)).code).toBe(0);
    expect(await shape(printed)).toEqual(await shape(migrated));
    expect((await shape(printed)).length).toBeGreaterThan(0);
    expect((await on(printed, "--check")).code).toBe(0);
  });

  it("prints only what is pending, and a comment when nothing is", async () => {
    const schema = fresh("prt");
    await pool.query(migrationScript(schema, all.slice(0, 1)));
    const r = await on(schema, "--print");
    expect(r.stdout).not.toContain(`-- ${all[0]!.name}`);
    for (const m of all.slice(1)) expect(r.stdout).toContain(`-- ${m.name}`);

    const asJson = JSON.parse((await on(schema, "--print", "--json")).stdout);
    expect(asJson).toMatchObject({ schema, version: 1, pending: all.slice(1).map((m) => m.name) });
    expect(asJson.sql).toBe(r.stdout);

    expect((await on(schema)).code).toBe(0);
    expect(await on(schema, "--print")).toEqual({
      code: 0,
      stdout: `-- schema ${schema} is up to date (version ${all.at(-1)!.version}); nothing to run\n`,
      stderr: "",
    });
  });
});
