import pg from "pg";
import { randomBytes } from "node:crypto";

/** The database the tests use: DATABASE_URL, or the machine's local `test` database. */
export const databaseUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";

/** A schema name unique to one test file or test, so files can run in parallel. */
export function uniqueSchema(prefix = "t"): string {
  return `${prefix}_${randomBytes(4).toString("hex")}`;
}

/** A small pool for assertions made directly against the database. */
export function testPool(max = 4): pg.Pool {
  const pool = new pg.Pool({ connectionString: databaseUrl, max, connectionTimeoutMillis: 10_000 });
  pool.on("error", () => {});
  return pool;
}

/** Drops a schema created by a test (and everything in it). */
export async function dropSchema(pool: pg.Pool, schema: string): Promise<void> {
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
}
