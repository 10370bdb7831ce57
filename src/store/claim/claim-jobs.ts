/**
 * Claims a batch of due PENDING jobs for one node in a single statement.
 *
 * The order is `(priority + floor(overdue / boostInterval)) DESC, scheduled_time, id`. No index can hold
 * an order that depends on now(), but inside one raw priority the boost only ever favours older rows, so
 * (scheduled_time, id) order *is* claim order within a level. The statement therefore walks the distinct
 * priorities present (a recursive skip scan over the claim index), takes the first `limit` unlocked due
 * rows of each level with an index range scan (FOR UPDATE SKIP LOCKED), and keeps the best `limit` of
 * that union by effective priority. That is exact, and costs one short index scan per priority level in
 * use instead of a sort of the whole backlog.
 *
 * The same statement with a queue filter (`queue = $6`) is the per-queue claim of a node configured with
 * `queues` (docs/composition.md#queues): it walks the `(queue, priority DESC, scheduled_time, id) WHERE
 * status = 'PENDING'` index of migration 0004, so a backlog in one queue costs another queue's claim
 * nothing. One builder ({@link candidatesSql}) serves both, and the claim cursors' full pass.
 */
import { withClaimRowTypes } from "./claim-row-types.js";
import { claimableSql, leaseSetSql } from "../jobs/lease-sql.js";
import { unkeyedSql } from "./keyed-sql.js";
import { named, payloadVariants, type Queryable, type Tables } from "../../db/sql.js";
import { compareIdText } from "../../logic/job-ids.js";

/**
 * A claimed job as the runtime needs it, and nothing more (every column is parsed for every job of every
 * claim). `payload` is absent on the lightweight path. The one time is epoch milliseconds, not a Date: the
 * claim statements parse timestamps straight to numbers (./claim-row-types.ts), since the runtime only
 * subtracts it. `picked_at` is not returned: nothing on the node reads it (getJob shows it).
 */
export interface ClaimedJob {
  id: string;
  type: string;
  queue: string;
  priority: number;
  /** Levels added by the age boost at claim time (effective priority minus raw priority). */
  boost: number;
  /** This attempt's number (attempts were incremented by the claim). */
  attempt: number;
  maxAttempts: number;
  timeoutMs: number | null;
  /** When the row became due (`scheduled_time`), epoch ms. */
  scheduledAtMs: number;
  payload?: unknown;
  /** The job's concurrency key (migration 0011), from the keyed claim; absent or null: none. */
  concurrencyKey?: string | null;
  /** The stored trace context of the job's producer span (migration 0010), or null; read by tracing only. */
  traceContext?: unknown;
}

/** What every claim statement takes (the classic claim's and the claim cursors'). */
export interface ClaimBaseArgs {
  nodeId: string;
  limit: number;
  /** Only these job types are claimed; rows of other types stay PENDING for nodes that know them. */
  types: readonly string[];
  /** Boost interval in ms; 0 disables the boost. */
  boostIntervalMs: number;
  /** Include payloads (the full path) or not (the lightweight path: load them with {@link loadPayloads}). */
  withPayload: boolean;
  /** Overrides the database's now() (tests); null uses now(). */
  now?: Date | null;
  /**
   * The statement's time budget (ms): it runs in a transaction of its own with `SET LOCAL
   * statement_timeout`, and fails with SQLSTATE 57014 past it (./claim-budgets.ts). Absent or 0: none.
   * A gateway bound to a caller's client ignores it (the caller's transaction has its own settings).
   */
  budgetMs?: number;
}

/** Arguments of {@link claimJobs}. */
export interface ClaimArgs extends ClaimBaseArgs {
  /** Only jobs of this queue (a node's per-queue lane); absent or null: every queue. */
  queue?: string | null;
}

/**
 * A row returned by the claim statements (the classic one and the cursor claimer's), parsed with
 * `claimRowTypes`: timestamps as epoch ms.
 */
export interface ClaimRow {
  id: string;
  type: string;
  queue: string;
  priority: number;
  effective: number;
  attempts: number;
  max_attempts: number;
  timeout_ms: number | null;
  scheduled_time: number;
  payload?: unknown;
  trace_context?: unknown;
  /** Only the keyed claim returns it. */
  concurrency_key?: string | null;
}

/**
 * The age boost of rows of `alias` at `now` (an SQL expression), with the boost interval in parameter `$4`.
 * The same expression ranks candidates and reports the boost, so the two always agree.
 */
export function boostSql(now: string, alias: string): string {
  return (
    `CASE WHEN $4::bigint > 0 THEN floor(greatest(0, extract(epoch FROM ${now} - ${alias}.scheduled_time) * 1000)` +
    ` / $4::bigint)::int ELSE 0 END`
  );
}

/**
 * The claim's CTEs: `levels` (the recursive skip scan over the distinct priorities with PENDING rows,
 * leased or not: the index's predicate), `candidates` (per level the first `$1` unleased unlocked due rows in (scheduled_time, id) order, locked) and `picked` (the best `$1`
 * of them by effective priority). Parameters: limit, node, types, boost ms, now (as {@link claimSql}), and
 * with `byQueue` the queue as `$6`: every scan is then narrowed to that queue (the per-queue index).
 */
export function candidatesSql(t: Tables, now: string, byQueue = false): string {
  const inQueue = byQueue ? " AND queue = $6" : "";
  const jInQueue = byQueue ? " AND j.queue = $6" : "";
  return `
    WITH RECURSIVE levels(p) AS (
      (SELECT priority FROM ${t.jobs} WHERE status = 'PENDING'${inQueue} ORDER BY priority DESC LIMIT 1)
      UNION ALL
      SELECT (SELECT j.priority FROM ${t.jobs} j
              WHERE j.status = 'PENDING'${jInQueue} AND j.priority < levels.p
              ORDER BY j.priority DESC LIMIT 1)
      FROM levels WHERE levels.p IS NOT NULL
    ),
    candidates AS (
      SELECT c.id, c.priority, c.scheduled_time, c.priority + ${boostSql(now, "c")} AS effective
      FROM levels
      CROSS JOIN LATERAL (
        SELECT j.id, j.priority, j.scheduled_time FROM ${t.jobs} j
        WHERE ${claimableSql("j")}${jInQueue} AND j.priority = levels.p AND ${unkeyedSql("j")}
          AND j.scheduled_time <= ${now} AND j.type = ANY($3::text[])
        ORDER BY j.scheduled_time, j.id
        LIMIT $1
        FOR UPDATE SKIP LOCKED
      ) c
      WHERE levels.p IS NOT NULL
    ),
    picked AS (
      SELECT id FROM candidates ORDER BY effective DESC, scheduled_time, id LIMIT $1
    )`;
}

/**
 * The UPDATE that leases the ids of the CTE `picked` to node `$2` (the claim's last step: they are RUNNING
 * from now on, see ./lease-sql.ts; the row's status stays PENDING, so the update can be HOT) and its
 * RETURNING list, plus `extra` returned columns. (It matches ids through ANY(ARRAY(...)) rather than a
 * join: a join on the CTE is planned as a hash join over a sequential scan of the whole table.)
 */
export function claimUpdateSql(t: Tables, now: string, withPayload: boolean, extra = ""): string {
  // The claim commits without waiting for its WAL flush (synchronous_commit off for this statement's own
  // transaction: the uncorrelated subquery runs once, before the first row is updated). A claim lost in a
  // database crash leaves its rows PENDING, exactly as a node crash would after orphan recovery: the jobs
  // run again (at-least-once), and the node's outcome write finds them no longer RUNNING under it. An
  // outcome that does commit is flushed with every WAL record before it, the claim's included. The wait
  // saved is most of an idle claim's round trip (about 0.7 ms of 1.3 ms here) on the wakeup path.
  return `
    UPDATE ${t.jobs} j
    SET ${leaseSetSql("j", "$2")}
    WHERE j.id = ANY(ARRAY(SELECT id FROM picked))
      AND (SELECT set_config('synchronous_commit', 'off', true)) IS NOT NULL
    RETURNING j.id, j.type, j.queue, j.priority, j.priority + ${boostSql(now, "j")} AS effective, j.attempts,
              j.max_attempts, j.timeout_ms, j.scheduled_time, j.trace_context${withPayload ? ", j.payload" : ""}${extra}`;
}

/** The claim's `now`: parameter `$5` when given (tests), else the database's now(). */
export const claimNowSql = "coalesce($5::timestamptz, now())";

/**
 * The claim statement (exported for EXPLAIN tests and docs). Parameters: limit, node, types, boost ms, now,
 * and with `byQueue` the queue.
 */
export function claimSql(t: Tables, withPayload: boolean, byQueue = false): string {
  return `${candidatesSql(t, claimNowSql, byQueue)}
    ${claimUpdateSql(t, claimNowSql, withPayload)}`;
}

/** Maps a claim statement's row to a {@link ClaimedJob}. */
export function toClaimedJob(r: ClaimRow, withPayload: boolean): ClaimedJob {
  return {
    id: r.id,
    type: r.type,
    queue: r.queue,
    priority: r.priority,
    boost: r.effective - r.priority,
    attempt: r.attempts,
    maxAttempts: r.max_attempts,
    timeoutMs: r.timeout_ms,
    scheduledAtMs: r.scheduled_time,
    traceContext: r.trace_context ?? null,
    ...(r.concurrency_key ? { concurrencyKey: r.concurrency_key } : {}),
    ...(withPayload ? { payload: r.payload } : {}),
  };
}

/** Sorts claimed jobs into claim order (effective priority, then scheduled time, then id); RETURNING has none. */
export function sortClaimOrder(jobs: ClaimedJob[]): ClaimedJob[] {
  return jobs.sort(
    (a, b) =>
      b.priority + b.boost - (a.priority + a.boost) ||
      a.scheduledAtMs - b.scheduledAtMs ||
      compareIdText(a.id, b.id),
  );
}

const statement = payloadVariants("claim", (t, withPayload) => claimSql(t, withPayload));
const queueStatement = payloadVariants("queue_claim", (t, withPayload) => claimSql(t, withPayload, true));

/**
 * Claims up to `limit` jobs for `nodeId`: they become RUNNING (leased to the node), with the attempt
 * counted. Returned in claim order. Concurrent claimers get disjoint batches. With `args.queue`, only jobs
 * of that queue.
 */
export async function claimJobs(db: Queryable, t: Tables, args: ClaimArgs): Promise<ClaimedJob[]> {
  if (args.limit <= 0 || args.types.length === 0) return [];
  const values = [args.limit, args.nodeId, args.types, args.boostIntervalMs, args.now ?? null];
  const queue = args.queue ?? null;
  const res = await db.query<ClaimRow>(
    queue === null
      ? withClaimRowTypes(statement(t, args.withPayload)(values))
      : withClaimRowTypes(queueStatement(t, args.withPayload)([...values, queue])),
  );
  // RETURNING has no order; restore claim order (effective priority, then scheduled time, then id).
  return sortClaimOrder(res.rows.map((r) => toClaimedJob(r, args.withPayload)));
}

/** Loads payloads for jobs claimed on the lightweight path, by id. */
export async function loadPayloads(
  db: Queryable,
  t: Tables,
  ids: readonly string[],
): Promise<Map<string, unknown>> {
  if (ids.length === 0) return new Map();
  const res = await db.query<{ id: string; payload: unknown }>(
    named(t, "load_payloads", `SELECT id, payload FROM ${t.jobs} WHERE id = ANY($1::bigint[])`)([ids]),
  );
  return new Map(res.rows.map((r) => [r.id, r.payload]));
}

/** The row of the by-id claim: a claim row without the boost (a claim by id has none). */
type ClaimOneRow = Omit<ClaimRow, "effective">;

/**
 * Claims one PENDING job by id, whatever its scheduled time (pawl/testing's inline(): the job a test just
 * enqueued runs at once). The same effect as a claim narrowed to one row, so the outcome statements accept
 * it. Null when the job is not PENDING and unleased (finished, canceled, gone, or taken), or when it has a
 * concurrency limit and its key already runs that many jobs: the rule of the keyed claim (a job starts only
 * while fewer than its own limit of its key's jobs run, counted by `pawl_key_running`, every node's leases).
 * Unlike the keyed claim it does not take the key's advisory lock, so a keyed claim of the same key at the
 * same instant is not excluded: inline() serialises its own claims, and is not meant to share keys with a
 * started node.
 */
export async function claimJobById(
  db: Queryable,
  t: Tables,
  id: string,
  nodeId: string,
): Promise<ClaimedJob | null> {
  const stmt = named(
    t,
    "claim_one",
    `UPDATE ${t.jobs} j
     SET ${leaseSetSql("j", "$2")}
     WHERE j.id = $1 AND ${claimableSql("j")}
       AND (j.concurrency_limit IS NULL OR ${t.s}.pawl_key_running(j.concurrency_key) < j.concurrency_limit)
     RETURNING j.id, j.type, j.queue, j.priority, j.attempts, j.max_attempts, j.timeout_ms, j.scheduled_time,
               j.payload, j.concurrency_key`,
  );
  const res = await db.query<ClaimOneRow>(withClaimRowTypes(stmt([id, nodeId])));
  const r = res.rows[0];
  return r ? toClaimedJob({ ...r, effective: r.priority }, true) : null;
}
