/**
 * Applies the numbered plain-SQL files of migrations/ to one schema. All of it runs in one transaction
 * under an advisory lock keyed by the schema, so nodes that start together serialise here and each
 * migration is applied exactly once; a version table records what ran.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type pg from "pg";
import { inHeldTransaction } from "./held-client.js";
import { quoteSchema } from "./schema-name.js";

/** One migration file. */
export interface Migration {
  /** The number in its file name (0001 -> 1). */
  version: number;
  /** The file name. */
  name: string;
  /** The SQL, with `{{schema}}` placeholders. */
  sql: string;
}

/** What {@link migrate} did. */
export interface MigrateResult {
  /** Versions applied by this call, in order. */
  applied: number[];
  /** The schema's version after the call. */
  version: number;
}

/** Finds migrations/ beside the package.json, from src/ (tsx, vitest) or from dist/src/ (the build). */
function migrationsDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    const candidate = join(dir, "migrations");
    if (existsSync(join(dir, "package.json")) && existsSync(candidate)) return candidate;
    dir = dirname(dir);
  }
  throw new Error("pawl: cannot find the migrations/ folder beside package.json");
}

/** Reads the migration files, sorted by version. File names are `NNNN_description.sql`. */
export function loadMigrations(dir = migrationsDir()): Migration[] {
  return readdirSync(dir)
    .filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f))
    .sort()
    .map((name) => ({ version: Number(name.slice(0, 4)), name, sql: readFileSync(join(dir, name), "utf8") }));
}

/**
 * Brings `schema` up to the newest migration. Idempotent and safe to call from many nodes at once.
 *
 * @example
 * ```ts
 * const { applied } = await migrate(pool, "pawl");
 * ```
 */
export async function migrate(pool: pg.Pool, schema: string): Promise<MigrateResult> {
  const s = quoteSchema(schema);
  const migrations = loadMigrations();
  return inHeldTransaction(pool, async (client) => {
    // hashtext keys the lock by schema, so two schemas in one database migrate independently.
    await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`pawl.migrate.${schema}`]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${s}.pawl_migrations (
         version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    const done = await client.query<{ version: number }>(`SELECT version FROM ${s}.pawl_migrations`);
    const have = new Set(done.rows.map((r) => r.version));
    const applied: number[] = [];
    for (const m of migrations) {
      if (have.has(m.version)) continue;
      await client.query(m.sql.replaceAll("{{schema}}", s));
      await client.query(`INSERT INTO ${s}.pawl_migrations (version, name) VALUES ($1, $2)`, [
        m.version,
        m.name,
      ]);
      applied.push(m.version);
    }
    const version = Math.max(0, ...have, ...applied);
    return { applied, version };
  });
}
