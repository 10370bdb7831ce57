import { afterAll, describe, expect, it, vi } from "vitest";
import { createPawl, ValidationError } from "../../../src/index.js";
import { databaseUrl, dropSchema, testPool, uniqueSchema } from "../../helpers/db.js";
import {
  isLockConflict,
  loadMigrations,
  migrate,
  migrationScript,
} from "../../../src/store/migrations/migrate.js";

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

  it("runs again when PostgreSQL aborts it to break a deadlock with a running node's write", async () => {
    const schema = uniqueSchema("mig");
    schemas.push(schema);
    const s = `"${schema}"`;
    // A schema as the previous release left it (version 11): what is pending alters the live table (0012)
    // before it alters the finished table (0016).
    await pool.query(
      migrationScript(
        schema,
        loadMigrations().filter((m) => m.version <= 11),
      ),
    );
    // A running node's completion as its cached plan takes its locks: the finished table, then the live one.
    const writer = await pool.connect();
    try {
      await writer.query("BEGIN");
      // The migration's deadlock check runs first and finds the cycle, so the migration is the victim.
      await writer.query("SET LOCAL deadlock_timeout = '60s'");
      await writer.query(`LOCK TABLE ${s}.scheduler_job_finished IN ROW EXCLUSIVE MODE`);
      const migrating = migrate(pool, schema);
      await vi.waitFor(
        async () => {
          const { rows } = await pool.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_locks
             WHERE relation = '${s}.scheduler_job_finished'::regclass AND NOT granted`,
          );
          expect(rows[0]!.n).toBe(1);
        },
        { timeout: 10_000, interval: 20 },
      );
      // The migration holds the live table and waits for the finished one; the write now waits for it.
      await writer.query(`LOCK TABLE ${s}.scheduler_job_queue IN ROW EXCLUSIVE MODE`);
      await writer.query("COMMIT");
      const result = await migrating;
      expect(result.applied).toEqual(expect.arrayContaining([12, 16]));
    } finally {
      writer.release();
    }
  });

  it("retries only errors that abort it over a lock", () => {
    expect(isLockConflict({ code: "40P01" })).toBe(true); // deadlock detected
    expect(isLockConflict({ code: "55P03" })).toBe(true); // lock not available (lock_timeout)
    expect(isLockConflict({ code: "42P07" })).toBe(false); // relation already exists
    expect(isLockConflict({ code: "42501" })).toBe(false); // insufficient privilege
    expect(isLockConflict(new Error("Connection terminated unexpectedly"))).toBe(false);
    expect(isLockConflict(null)).toBe(false);
  });
});
