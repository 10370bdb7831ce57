/**
 * Rate limits across the cluster (migration 0009): an exact sliding log per key. An admission, in its own
 * transaction:
 * 1. upserts its keys' rows in key order, which locks them (`ON CONFLICT DO UPDATE`), so admissions of a
 *    key are serialised across every node and two keys cannot deadlock;
 * 2. in a second statement (READ COMMITTED: a snapshot taken after the locks, so it sees every admission
 *    committed before), reads the clock (`clock_timestamp()`, not the transaction's `now()`: an admission
 *    that waited for the lock must not record a start earlier than the one it waited for), counts each
 *    key's starts in (t - perMs, t], admits when every key has fewer than its limit, and then records
 *    one start per key at t; the keys' starts that left their window are deleted on the way.
 *
 * A refusal answers the window's next opening: the start that must leave for the key to have room again
 * (the oldest, unless a lowered limit left more than `limit` in the window) plus perMs. The bound is exact
 * in database time: no window of perMs ever holds more than `limit` recorded starts of a key. Cost: three
 * round trips and O(starts in the window) index entries per admission, at most `limit` rows per key.
 */
import type pg from "pg";
import type { RateKey } from "../../logic/rate-limit.js";
import { inHeldTransaction } from "../../db/held-client.js";
import { named, type Queryable, type Tables } from "../../db/sql.js";

/** One key's window as an admission left it. */
export interface RateKeyWindow {
  key: string;
  /** Starts in the window, this admission's included. */
  used: number;
  limit: number;
  /** Whether the key had no room (it refused the admission). */
  full: boolean;
  /** When full: ms until the window has room (store time); 0 otherwise. */
  openInMs: number;
}

/** The store's answer to an admission. */
export interface RateAdmission {
  admitted: boolean;
  /** When refused: ms until every full key has room (the largest opening); 0 when admitted. */
  retryInMs: number;
  /** Each key's window, in key order. */
  keys: RateKeyWindow[];
}

/** A key's window as the read-only views see it ({@link rateWindows}). */
export interface RateWindow {
  key: string;
  /** The limit and window the key was last admitted under. */
  limit: number;
  perMs: number;
  /** Starts in (now - perMs, now]. */
  used: number;
  /** When the window is full: when it has room again; null otherwise. */
  openAt: Date | null;
}

/** The most windows one read returns. */
export const maxRateWindows = 200;

const rateTable = (t: Tables) => `${t.s}.scheduler_rate_limit`;
const startTable = (t: Tables) => `${t.s}.scheduler_rate_limit_start`;

const lockStatement = (t: Tables) =>
  named(
    t,
    "rate_lock",
    `INSERT INTO ${rateTable(t)} (key, max_starts, per_ms)
     SELECT * FROM unnest($1::text[], $2::int[], $3::bigint[]) ORDER BY 1
     ON CONFLICT (key) DO UPDATE SET max_starts = EXCLUDED.max_starts, per_ms = EXCLUDED.per_ms`,
  );

const window = (s: string, now: string, perMs: string) =>
  `${s}.started_at > ${now} - ${perMs} * interval '1 millisecond'`;

const admitStatement = (t: Tables) =>
  named(
    t,
    "rate_admit",
    `WITH clock AS MATERIALIZED (SELECT coalesce($4::timestamptz, clock_timestamp()) AS now),
     k AS (SELECT * FROM unnest($1::text[], $2::int[], $3::bigint[]) AS k(key, lim, per_ms)),
     w AS MATERIALIZED (
       SELECT k.key, k.lim, k.per_ms, c.now,
              (SELECT count(*)::int FROM ${startTable(t)} s
               WHERE s.key = k.key AND ${window("s", "c.now", "k.per_ms")}) AS used
       FROM k, clock c),
     o AS (
       SELECT w.*, CASE WHEN w.used >= w.lim THEN
                (SELECT s.started_at FROM ${startTable(t)} s
                 WHERE s.key = w.key AND ${window("s", "w.now", "w.per_ms")}
                 ORDER BY s.started_at OFFSET w.used - w.lim LIMIT 1) + w.per_ms * interval '1 millisecond'
              END AS opens_at
       FROM w),
     d AS (SELECT coalesce(bool_and(used < lim), false) AS admitted FROM w),
     ins AS (
       INSERT INTO ${startTable(t)} (key, started_at, job_id)
       SELECT w.key, w.now, $5::bigint FROM w, d WHERE d.admitted),
     touched AS (
       UPDATE ${rateTable(t)} r SET admitted_at = c.now FROM clock c, d
       WHERE d.admitted AND r.key = ANY($1::text[])),
     pruned AS (
       DELETE FROM ${startTable(t)} s USING k, clock c
       WHERE s.key = k.key AND NOT (${window("s", "c.now", "k.per_ms")}))
     SELECT o.key, o.lim AS "limit", o.used + (CASE WHEN d.admitted THEN 1 ELSE 0 END) AS used,
            o.used >= o.lim AS full, d.admitted,
            coalesce(greatest(0, extract(epoch FROM o.opens_at - o.now) * 1000), 0)::float8 AS open_in_ms
     FROM o, d ORDER BY o.key`,
  );

interface AdmitRow {
  key: string;
  limit: number;
  used: number;
  full: boolean;
  admitted: boolean;
  open_in_ms: number;
}

/**
 * Admits one attempt of `jobId` under every key of `keys`, or none: see the file's comment. `now` replaces
 * the database's clock (tests); production passes none.
 */
export async function admitRate(
  pool: pg.Pool,
  t: Tables,
  keys: readonly RateKey[],
  jobId: string,
  now?: Date,
): Promise<RateAdmission> {
  if (keys.length === 0) return { admitted: true, retryInMs: 0, keys: [] };
  const sorted = [...keys].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const cols = [sorted.map((k) => k.key), sorted.map((k) => k.limit), sorted.map((k) => k.perMs)];
  const rows = await inHeldTransaction(pool, async (db) => {
    await db.query(lockStatement(t)(cols));
    const res = await db.query<AdmitRow>(admitStatement(t)([...cols, now ?? null, jobId]));
    return res.rows;
  });
  const admitted = rows.length > 0 && rows.every((r) => r.admitted);
  const windows = rows.map((r) => ({
    key: r.key,
    used: r.used,
    limit: r.limit,
    full: r.full,
    openInMs: r.full ? Math.ceil(r.open_in_ms) : 0,
  }));
  const retryInMs = admitted ? 0 : Math.max(0, ...windows.map((w) => w.openInMs));
  return { admitted, retryInMs, keys: windows };
}

/**
 * The windows of the keys `keys` (an SQL text[] expression, NULL for all) as of `now` (an SQL expression):
 * `key`, `limit`, `per_ms`, `used`, `open_at`. Shared by {@link rateWindows} and explain's facts.
 */
export const rateWindowsSql = (t: Tables, keys: string, now: string) =>
  `SELECT r.key, r.max_starts AS "limit", r.per_ms::float8 AS per_ms, w.used,
          CASE WHEN w.used >= r.max_starts THEN w.oldest + r.per_ms * interval '1 millisecond' END AS open_at
   FROM ${rateTable(t)} r,
        LATERAL (SELECT count(*)::int AS used, min(s.started_at) AS oldest FROM ${startTable(t)} s
                 WHERE s.key = r.key AND ${window("s", now, "r.per_ms")}) w
   WHERE ${keys} IS NULL OR r.key = ANY(${keys})
   ORDER BY r.key LIMIT ${maxRateWindows}`;

const windowsStatement = (t: Tables) =>
  named(t, "rate_windows", rateWindowsSql(t, "$1::text[]", "coalesce($2::timestamptz, now())"));

/**
 * The windows of `keys` (all keys when omitted, at most {@link maxRateWindows}), as of `now` (the
 * database's clock when omitted). Reads only.
 */
export async function rateWindows(
  db: Queryable,
  t: Tables,
  keys?: readonly string[],
  now?: Date,
): Promise<RateWindow[]> {
  const res = await db.query<{
    key: string;
    limit: number;
    per_ms: number;
    used: number;
    open_at: Date | null;
  }>(windowsStatement(t)([keys ?? null, now ?? null]));
  return res.rows.map((r) => ({
    key: r.key,
    limit: r.limit,
    perMs: r.per_ms,
    used: r.used,
    openAt: r.open_at,
  }));
}

/**
 * Deletes starts that left their key's window, and the rows of keys with none left whose last admission
 * is more than a window old (an idle payload key must not stay forever). Returns the keys deleted.
 */
export async function pruneRateLimits(db: Queryable, t: Tables): Promise<number> {
  await db.query(
    `DELETE FROM ${startTable(t)} s USING ${rateTable(t)} r
     WHERE s.key = r.key AND NOT (${window("s", "now()", "r.per_ms")})`,
  );
  // A key being admitted is skipped (its row is locked); one admitted since this statement's snapshot is
  // re-checked on its new row, whose admitted_at is recent: a start is never deleted with its key.
  const res = await db.query(
    `DELETE FROM ${rateTable(t)} WHERE key IN (
       SELECT r.key FROM ${rateTable(t)} r
       WHERE r.admitted_at <= now() - r.per_ms * interval '1 millisecond'
         AND NOT EXISTS (SELECT 1 FROM ${startTable(t)} s WHERE s.key = r.key)
       FOR UPDATE SKIP LOCKED)`,
  );
  return res.rowCount ?? 0;
}
