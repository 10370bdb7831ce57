/**
 * The load of concurrency keys (migration 0011, docs/fairness.md) in one read: how many keys are active,
 * how many are held at their limit, how many keyed jobs run and wait, and the busiest keys. The metrics
 * (`pawl_concurrency_*`, on their cache window) and the console's overview read it, so neither ever makes
 * a series or a query per key.
 *
 * Every part is bounded, whatever the number of keys or the size of a key's backlog:
 *
 * - The keys come from a skip scan of the keyed index (`scheduler_job_queue_keyed_idx`: one index probe
 *   per distinct key, the keyed claim's own walk), stopped after `maxKeys` keys. A leased row is a PENDING
 *   row too (0008), so every key that runs or waits is found.
 * - Running counts are `pawl_key_running(k)` for each key found: the sum of its rows in the deltas table,
 *   an index read of a few rows (the claim folds them), and the very count explain shows. Not one pass
 *   over the whole deltas table: keys that are gone leave zero-sum rows behind (docs/fairness.md), so that
 *   table grows with every key ever used, while the keys found here are only the live ones.
 * - Per key: one probe for its next due job (the row the keyed claim would try first, whose limit decides
 *   whether the key is held), and a count of its due waiting jobs that stops at `scanCap / keys` rows, so
 *   all the keys together read at most about `scanCap` rows: a key's count that reached it is a lower bound.
 * - The total of waiting keyed jobs is its own scan of the keyed rows (the keyed index, or the table when
 *   most rows are keyed), stopped at `scanCap` rows (exact below it), so one key's huge backlog cannot
 *   hide behind the per-key caps.
 *
 * Worst case: about 3 x `maxKeys` index probes and 2 x `scanCap` rows; with no keyed rows, a few empty
 * index probes.
 */
import { named, type Queryable, type Tables } from "../../db/sql.js";

/** Bounds of {@link readConcurrencyKeys}. */
export interface ConcurrencyKeysBounds {
  /** How many of the busiest keys to return (0 for none). Default 10, at most 1,000. */
  top?: number;
  /** The most keys examined (the skip scan stops there). Default 10,000. */
  maxKeys?: number;
  /** The most waiting rows counted: for the total, and shared among the keys for theirs. Default 100,000. */
  scanCap?: number;
}

/** One key's load. */
export interface KeyLoad {
  /** The concurrency key. */
  key: string;
  /** Its jobs running now, on every node, as the claim counts them against limits (`pawl_key_running`). */
  running: number;
  /**
   * The limit of its next due job (the one the claim checks next); when none waits, the limit of one of
   * its running jobs. Null: that job has no limit.
   */
  limit: number | null;
  /** Its due jobs not running, counted up to {@link ConcurrencyKeys.waitingCapPerKey}. */
  waiting: number;
  /** Whether its next due job waits because the key runs its limit. */
  atLimit: boolean;
}

/** What {@link readConcurrencyKeys} returns. */
export interface ConcurrencyKeys {
  /** Keys with at least one running or due waiting job (of the keys examined). */
  activeKeys: number;
  /** Keys whose next due job waits because the key already runs that job's limit (of the keys examined). */
  keysAtLimit: number;
  /** Keyed jobs running now, on every node, as the claim counts them (of the keys examined). */
  running: number;
  /** Due keyed jobs not running, counted up to `scanCap` (see {@link waitingCapped}). */
  waiting: number;
  /** Whether {@link waiting} reached `scanCap`, so it is a lower bound. */
  waitingCapped: boolean;
  /** Whether there were more keys than `maxKeys`: the key counts and the busiest keys cover the first ones by name. */
  keysCapped: boolean;
  /** Where each key's waiting count stopped this time (`scanCap` shared among the keys examined). */
  waitingCapPerKey: number;
  /** The busiest active keys: most running first, then most waiting, then by key. */
  busiest: KeyLoad[];
  /** The database's time of the read. */
  at: Date;
}

interface Row {
  active: number;
  at_limit: number;
  running: number;
  waiting: number;
  keys_capped: boolean;
  per_key: number;
  busiest:
    { key: string; running: number; limit: number | null; waiting: number; at_limit: boolean }[] | null;
  at: Date;
}

// A due job that waits: PENDING, not leased, scheduled by now (the keyed claim's candidates, any type).
const waitingSql = (a: string) =>
  `${a}.status = 'PENDING' AND ${a}.picked_by IS NULL AND ${a}.scheduled_time <= now()`;

function readSql(t: Tables): string {
  return `WITH RECURSIVE keys(key, n) AS (
       (SELECT concurrency_key, 1 FROM ${t.jobs}
        WHERE status = 'PENDING' AND concurrency_key IS NOT NULL ORDER BY concurrency_key LIMIT 1)
       UNION ALL
       SELECT (SELECT j.concurrency_key FROM ${t.jobs} j
               WHERE j.status = 'PENDING' AND j.concurrency_key IS NOT NULL AND j.concurrency_key > keys.key
               ORDER BY j.concurrency_key LIMIT 1), keys.n + 1
       FROM keys WHERE keys.key IS NOT NULL AND keys.n <= $2
     ),
     listed AS MATERIALIZED (SELECT key FROM keys WHERE key IS NOT NULL AND n <= $2),
     cap AS (SELECT greatest(1, $3::int / greatest(1, count(*)))::int AS per FROM listed),
     per_key AS MATERIALIZED (
       SELECT l.key, r.n AS running, nxt.found, nxt.concurrency_limit AS next_limit, w.waiting,
              nxt.concurrency_limit IS NOT NULL AND r.n >= nxt.concurrency_limit AS at_limit
       FROM listed l
       CROSS JOIN LATERAL (SELECT ${t.s}.pawl_key_running(l.key) AS n) r
       -- The row the keyed claim tries first: a limited one refused stops the key (docs/fairness.md).
       LEFT JOIN LATERAL (
         SELECT true AS found, j.concurrency_limit FROM ${t.jobs} j
         WHERE j.concurrency_key = l.key AND ${waitingSql("j")}
         ORDER BY j.priority DESC, j.scheduled_time, j.id LIMIT 1
       ) nxt ON true
       CROSS JOIN LATERAL (
         SELECT count(*)::int AS waiting FROM (
           SELECT 1 FROM ${t.jobs} j WHERE j.concurrency_key = l.key AND ${waitingSql("j")}
           LIMIT (SELECT per FROM cap)
         ) x
       ) w
     ),
     top AS (
       SELECT * FROM per_key WHERE running > 0 OR waiting > 0
       ORDER BY running DESC, waiting DESC, key LIMIT $1
     )
     SELECT
       (SELECT count(*) FROM per_key WHERE running > 0 OR waiting > 0)::int AS active,
       (SELECT count(*) FROM per_key WHERE at_limit)::int AS at_limit,
       (SELECT coalesce(sum(running), 0) FROM per_key)::int AS running,
       (SELECT count(*) FROM (SELECT 1 FROM ${t.jobs} j
          WHERE j.concurrency_key IS NOT NULL AND ${waitingSql("j")} LIMIT $3) x)::int AS waiting,
       EXISTS (SELECT 1 FROM keys WHERE key IS NOT NULL AND n > $2) AS keys_capped,
       (SELECT per FROM cap) AS per_key,
       (SELECT json_agg(json_build_object(
          'key', top.key, 'running', top.running, 'waiting', top.waiting, 'at_limit', top.at_limit,
          -- Nothing waits: the limit of a running job, among the key's first rows (leased ones come first
          -- in claim order, unless jobs scheduled later sort before them).
          'limit', CASE WHEN top.found THEN top.next_limit ELSE (
            SELECT x.concurrency_limit FROM (
              SELECT j.concurrency_limit, j.picked_by FROM ${t.jobs} j
              WHERE j.status = 'PENDING' AND j.concurrency_key = top.key
              ORDER BY j.priority DESC, j.scheduled_time, j.id LIMIT 100
            ) x WHERE x.picked_by IS NOT NULL LIMIT 1) END)
          ORDER BY top.running DESC, top.waiting DESC, top.key) FROM top) AS busiest,
       now() AS at`;
}

const statements = new WeakMap<Tables, ReturnType<typeof named>>();

/**
 * Reads the load of the concurrency keys in one statement (bounded: see the file's comment).
 *
 * @example
 * ```ts
 * const k = await readConcurrencyKeys(pool, tables, { top: 10 });
 * // { activeKeys: 1200, keysAtLimit: 37, running: 410, waiting: 5210, busiest: [{ key: "tenant-42", ... }] }
 * ```
 */
export async function readConcurrencyKeys(
  db: Queryable,
  t: Tables,
  bounds: ConcurrencyKeysBounds = {},
): Promise<ConcurrencyKeys> {
  const top = Math.min(1000, Math.max(0, Math.floor(bounds.top ?? 10)));
  const maxKeys = Math.min(1_000_000, Math.max(1, Math.floor(bounds.maxKeys ?? 10_000)));
  const cap = Math.min(10_000_000, Math.max(1, Math.floor(bounds.scanCap ?? 100_000)));
  let statement = statements.get(t);
  if (!statement) {
    // Named (prepared once per connection): the metrics run it on every cache window.
    statement = named(t, "concurrency_keys", readSql(t));
    statements.set(t, statement);
  }
  const res = await db.query<Row>(statement([top, maxKeys, cap]));
  const r = res.rows[0];
  if (!r) throw new Error("readConcurrencyKeys: no row");
  return {
    activeKeys: r.active,
    keysAtLimit: r.at_limit,
    running: r.running,
    waiting: r.waiting,
    waitingCapped: r.waiting >= cap,
    keysCapped: r.keys_capped,
    waitingCapPerKey: r.per_key,
    busiest: (r.busiest ?? []).map((b) => ({
      key: b.key,
      running: b.running,
      limit: b.limit,
      waiting: b.waiting,
      atLimit: b.at_limit,
    })),
    at: r.at,
  };
}
