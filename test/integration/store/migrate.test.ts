import { afterAll, describe, expect, it } from "vitest";
import { createPawl, ValidationError } from "../../../src/index.js";
import { databaseUrl, dropSchema, testPool, uniqueSchema } from "../../helpers/db.js";
import { loadMigrations } from "../../../src/store/migrations/migrate.js";

const pool = testPool();
const schemas: string[] = [];
afterAll(async () => {
  for (const s of schemas) await dropSchema(pool, s);
  await pool.end();
});

describe("migrate", () => {
  it("creates the tables once and is idempotent", async () => {
    const schema = uniqueSchema("mig");
    schemas.push(schema);
    const pawl = createPawl({ connectionString: databaseUrl, schema });
    const first = await pawl.migrate();
    const second = await pawl.migrate();
    await pawl.close();
    const all = loadMigrations().map((m) => m.version);
    expect(first.applied).toEqual(all);
    expect(second.applied).toEqual([]);
    expect(second.version).toBe(all.at(-1));
    const tables = await pool.query<{ table_name: string }>(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1",
      [schema],
    );
    expect(tables.rows.map((r) => r.table_name)).toEqual(
      expect.arrayContaining(["scheduler_job_queue", "scheduler_lock", "scheduler_node", "pawl_migrations"]),
    );
  });

  it("is safe when several nodes migrate at once", async () => {
    const schema = uniqueSchema("mig");
    schemas.push(schema);
    const nodes = Array.from({ length: 5 }, () => createPawl({ connectionString: databaseUrl, schema }));
    const results = await Promise.all(nodes.map((n) => n.migrate()));
    await Promise.all(nodes.map((n) => n.close()));
    const applied = results.flatMap((r) => r.applied);
    expect(applied).toEqual(loadMigrations().map((m) => m.version));
    const rows = await pool.query(`SELECT count(*)::int AS n FROM "${schema}".pawl_migrations`);
    expect(rows.rows[0].n).toBe(loadMigrations().length);
  });

  it.each(["", "Bad", "a-b", "pg_x", "x".repeat(64), 'a"; drop table x; --'])(
    "rejects the schema name %j with a typed error",
    (schema) => {
      expect(() => createPawl({ connectionString: databaseUrl, schema })).toThrowError(ValidationError);
    },
  );
});
