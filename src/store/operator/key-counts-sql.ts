/**
 * The concurrency keys' running counts checked against the rows (`pawl doctor`, docs/fairness.md#doctor).
 *
 * A key's count is the sum of its deltas in scheduler_concurrency_running, written by the lease triggers
 * (migrations 0011, 0013) in the transaction that changes a row, so it cannot drift through pawl's own
 * writes. It can through what bypasses them: a delta row deleted or a trigger disabled by hand
 * (`session_replication_role = replica`, a logical restore), a restore of one table without the other.
 * The truth is the leased rows that count: PENDING with a lease (`picked_by`), a key and a limit.
 *
 * The check is one statement, so the deltas and the rows are read in one snapshot: a lease change is one
 * transaction that writes both, so in-flight work never shows as drift. The repair runs in one transaction
 * that first takes each drifted key's claim lock (the one the keyed claim takes, migration 0013), in key
 * order: a claim skips a key it cannot lock, so no claim counts the key or folds its deltas meanwhile. Then
 * one statement replaces the key's deltas with the count of its rows, again in one snapshot; a lease change
 * committing after that snapshot adds its delta on top of a count that did not include it.
 */
import type pg from "pg";
import { inHeldTransaction } from "../../db/held-client.js";
import type { Queryable, Tables } from "../../db/sql.js";

/** One key whose count disagrees with its rows. */
export interface KeyCountDrift {
  /** The concurrency key. */
  key: string;
  /** The running count pawl keeps (the sum of the key's deltas). */
  counted: number;
  /** The leased rows of the key that count against its limit. */
  actual: number;
}

/** The leased rows that count against a key's limit (the rule of migration 0013's lease trigger). */
const countedRowsSql = (t: Tables): string =>
  `SELECT concurrency_key AS key, count(*)::int AS n FROM ${t.jobs}
   WHERE status = 'PENDING' AND picked_by IS NOT NULL AND concurrency_key IS NOT NULL
     AND concurrency_limit IS NOT NULL`;

const runningTable = (t: Tables): string => `${t.s}.scheduler_concurrency_running`;

/**
 * Every key whose count differs from its rows, in key order (reads only, one snapshot).
 *
 * @example
 * ```ts
 * const drift = await readKeyCountDrift(pool, tablesFor("pawl"));
 * // [{ key: "tenant-7", counted: 3, actual: 1 }]
 * ```
 */
export async function readKeyCountDrift(db: Queryable, t: Tables): Promise<KeyCountDrift[]> {
  const res = await db.query<KeyCountDrift>(
    `WITH counted AS (
       SELECT concurrency_key AS key, sum(delta)::int AS n FROM ${runningTable(t)} GROUP BY concurrency_key
     ), actual AS (${countedRowsSql(t)} GROUP BY concurrency_key)
     SELECT coalesce(c.key, a.key) AS key, coalesce(c.n, 0) AS counted, coalesce(a.n, 0) AS actual
     FROM counted c FULL JOIN actual a ON a.key = c.key
     WHERE coalesce(c.n, 0) <> coalesce(a.n, 0)
     ORDER BY 1`,
  );
  return res.rows;
}

/**
 * Sets every drifted key's count to its rows (see the file's summary for the locking), in one
 * transaction; returns the keys it changed, as found under their locks.
 */
export function repairKeyCounts(pool: pg.Pool, t: Tables): Promise<KeyCountDrift[]> {
  return inHeldTransaction(pool, (db) => repairKeyCountsOn(db, t));
}

/** {@link repairKeyCounts} inside a transaction the caller holds on `db`. */
export async function repairKeyCountsOn(db: Queryable, t: Tables): Promise<KeyCountDrift[]> {
  const found = await readKeyCountDrift(db, t);
  if (found.length === 0) return [];
  const keys = found.map((d) => d.key);
  // Blocking, in key order: claimers only try these locks, so they skip the keys and never deadlock
  // with this, and two repairs queue one behind the other.
  await db.query(
    `SELECT pg_advisory_xact_lock(hashtext('pawl keys ' || $2), hashtext(k))
       FROM unnest($1::text[]) AS k ORDER BY k`,
    [keys, t.s],
  );
  const res = await db.query<KeyCountDrift>(
    `WITH keys AS (SELECT unnest($1::text[]) AS key),
       gone AS (
         DELETE FROM ${runningTable(t)} r USING keys k WHERE r.concurrency_key = k.key
         RETURNING r.concurrency_key AS key, r.delta
       ), counted AS (SELECT key, sum(delta)::int AS n FROM gone GROUP BY key),
       actual AS (${countedRowsSql(t)} AND concurrency_key = ANY($1::text[]) GROUP BY concurrency_key),
       fixed AS (
         INSERT INTO ${runningTable(t)} (concurrency_key, delta)
         SELECT key, n FROM actual WHERE n <> 0
       )
       SELECT k.key, coalesce(c.n, 0) AS counted, coalesce(a.n, 0) AS actual
       FROM keys k LEFT JOIN counted c ON c.key = k.key LEFT JOIN actual a ON a.key = k.key
       WHERE coalesce(c.n, 0) <> coalesce(a.n, 0)
       ORDER BY 1`,
    [keys],
  );
  return res.rows;
}
