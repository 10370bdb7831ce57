/**
 * Applies the numbered plain-SQL files of migrations/ to one schema. All of it runs in one transaction
 * under an advisory lock keyed by the schema, so nodes that start together serialise here and each
 * migration is applied exactly once; a version table records what ran.
 *
 * On a live database a migration's locks can close a cycle with the nodes' own statements: a schema a
 * previous release migrated has its live table altered (ACCESS EXCLUSIVE) before 0016 alters the finished
 * table, while a completion of a running node holds the finished table and waits for the live one (a
 * cached plan locks the table it inserts into first). PostgreSQL then aborts one side. When that side is
 * the migration, everything it did is rolled back, so {@link migrate} simply runs it again, a few times,
 * with a short backoff; the other side is a node's write, which the node retries.
 *
 * The SQL comes from migrations.generated.ts (scripts/gen-migrations.ts writes it from migrations/), not
 * from the files: a bundled or single-file deploy has no migrations/ folder beside the code. The same
 * statements serve {@link migrate} and {@link migrationScript} (`pawl migrate --print`), so the printed
 * script is what a node would run.
 */
import type pg from "pg";
import { BEGIN_READ_COMMITTED, inHeldTransaction } from "../../db/held-client.js";
import { retryDelayMs, type RetryPolicy } from "../../logic/backoff.js";
import { migrations } from "./migrations.generated.js";
import { quoteSchema } from "../../db/schema-name.js";
import type { Queryable } from "../../db/sql.js";
import { isBreaking, type Migration } from "./migration.js";

export type { Migration };


/** What {@link migrate} did. */
export interface MigrateResult {
  /** Versions applied by this call, in order. */
  applied: number[];
  /** The schema's version after the call. */
  version: number;
}

/** Where a schema stands, from {@link migrationStatus}. */
export interface MigrationStatus {
  /** The newest version applied (0 when the schema or its version table does not exist). */
  version: number;
  /** The migrations this package has that the schema has not had yet, in order. */
  pending: Migration[];
  /** Versions the schema has that this package does not know (a newer pawl migrated it). */
  unknown: number[];
  /** Of `unknown`, those recorded as breaking: nodes of this release must not run beside them. */
  unknownBreaking: number[];
  /** The newest version this package knows (what a node of this release needs). */
  required: number;
}

/** Every migration this package ships, sorted by version (embedded at build time). */
export function loadMigrations(): Migration[] {
  return [...migrations];
}

/** The lock key: hashtext of it keys the lock by schema, so two schemas migrate independently. */
const lockKey = (schema: string) => `pawl.migrate.${schema}`;

/** The statements that prepare the schema and its version table, before any migration. */
function preamble(s: string): string[] {
  return [
    `CREATE SCHEMA IF NOT EXISTS ${s}`,
    `CREATE TABLE IF NOT EXISTS ${s}.pawl_migrations (
         version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
  ];
}

/** A migration's SQL for one schema. */
const migrationSql = (m: Migration, s: string) => m.sql.replaceAll("{{schema}}", s);

/**
 * Reads which migrations `schema` has had, without changing anything and without taking the migration
 * lock (a migration running meanwhile commits all or nothing, so the answer is one or the other).
 *
 * @example
 * ```ts
 * const { pending } = await migrationStatus(pool, "pawl");
 * if (pending.length > 0) console.error("run pawl migrate");
 * ```
 */
export async function migrationStatus(db: Queryable, schema: string): Promise<MigrationStatus> {
  const s = quoteSchema(schema);
  const exists = await db.query<{ t: string | null }>("SELECT to_regclass($1)::text AS t", [
    `${s}.pawl_migrations`,
  ]);
  const have = new Set<number>();
  const breaking = new Set<number>();
  if (exists.rows[0]?.t) {
    // to_jsonb reads `breaking` whether or not the column exists yet (it came with 0012).
    const done = await db.query<{ version: number; breaking: boolean | null }>(
      `SELECT version, (to_jsonb(m) ->> 'breaking')::boolean AS breaking FROM ${s}.pawl_migrations m`,
    );
    for (const r of done.rows) {
      have.add(r.version);
      if (r.breaking === true) breaking.add(r.version);
    }
  }
  const known = new Set(migrations.map((m) => m.version));
  const unknown = [...have].filter((v) => !known.has(v)).sort((a, b) => a - b);
  return {
    version: Math.max(0, ...have),
    pending: migrations.filter((m) => !have.has(m.version)),
    unknown,
    unknownBreaking: unknown.filter((v) => breaking.has(v)),
    required: Math.max(0, ...known),
  };
}

/**
 * The SQL script that applies `pending` to `schema` as {@link migrate} would: one transaction, the same
 * advisory lock, the version table, each migration followed by its version row. For reviewing, or for
 * applying by hand (`psql -v ON_ERROR_STOP=1 -f`) where the application's role may not create tables.
 *
 * @example
 * ```ts
 * const { pending } = await migrationStatus(pool, "pawl");
 * process.stdout.write(migrationScript("pawl", pending));
 * ```
 */
export function migrationScript(schema: string, pending: readonly Migration[]): string {
  const s = quoteSchema(schema);
  // The schema name is validated (lower-case letters, digits, _), so it is safe inside a literal.
  const parts = [
    `-- pawl migrations for schema ${s}: ${pending.map((m) => m.name).join(", ") || "none pending"}`,
    // Read committed whatever the session's default: the lock is taken before the versions are read.
    `${BEGIN_READ_COMMITTED};`,
    `SELECT pg_advisory_xact_lock(hashtext('${lockKey(schema)}'));`,
    ...preamble(s).map((sql) => `${sql};`),
  ];
  for (const m of pending) {
    parts.push(
      "",
      `-- ${m.name}`,
      migrationSql(m, s).trimEnd(),
      `INSERT INTO ${s}.pawl_migrations (version, name) VALUES (${m.version}, '${m.name}');`,
      ...(isBreaking(m) ? [`UPDATE ${s}.pawl_migrations SET breaking = true WHERE version = ${m.version};`] : []),
    );
  }
  parts.push("", "COMMIT;", "");
  return parts.join("\n");
}

/**
 * Brings `schema` up to the newest migration. Idempotent and safe to call from many nodes at once, and
 * under running nodes: a transaction PostgreSQL aborts over a lock (a deadlock, a `lock_timeout`) is run
 * again, up to five times in all.
 *
 * @example
 * ```ts
 * const { applied } = await migrate(pool, "pawl");
 * ```
 */
export async function migrate(pool: pg.Pool, schema: string): Promise<MigrateResult> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await migrateOnce(pool, schema);
    } catch (error) {
      if (attempt >= migrateAttempts || !isLockConflict(error)) throw error;
      const delayMs = retryDelayMs(attempt, migrateRetryPolicy, Math.random());
      await new Promise((resolve) => setTimeout(resolve, delayMs));
    }
  }
}

/** Tries of {@link migrate} when PostgreSQL aborts it over a lock (see the module comment). */
const migrateAttempts = 5;

/** 200 ms, doubling, jittered by half: a node's write that won the deadlock commits well within it. */
const migrateRetryPolicy: RetryPolicy = { baseMs: 200, factor: 2, maxMs: 2_000, jitter: 0.5 };

/**
 * Whether an error aborted the migration transaction over a lock, so that running it again can pass:
 * SQLSTATE 40P01 (deadlock detected) or 55P03 (lock not available, a `lock_timeout` the role sets).
 *
 * @example
 * ```ts
 * isLockConflict({ code: "40P01" }); // true
 * isLockConflict({ code: "42P07" }); // false: relation already exists
 * ```
 */
export function isLockConflict(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === "40P01" || code === "55P03";
}

/** One try of {@link migrate}: one transaction. */
async function migrateOnce(pool: pg.Pool, schema: string): Promise<MigrateResult> {
  const s = quoteSchema(schema);
  return inHeldTransaction(pool, async (client) => {
    await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [lockKey(schema)]);
    for (const sql of preamble(s)) await client.query(sql);
    const done = await client.query<{ version: number }>(`SELECT version FROM ${s}.pawl_migrations`);
    const have = new Set(done.rows.map((r) => r.version));
    const applied: number[] = [];
    for (const m of migrations) {
      if (have.has(m.version)) continue;
      await client.query(migrationSql(m, s));
      await client.query(`INSERT INTO ${s}.pawl_migrations (version, name) VALUES ($1, $2)`, [
        m.version,
        m.name,
      ]);
      if (isBreaking(m)) {
        await client.query(`UPDATE ${s}.pawl_migrations SET breaking = true WHERE version = $1`, [m.version]);
      }
      applied.push(m.version);
    }
    const version = Math.max(0, ...have, ...applied);
    return { applied, version };
  });
}
