/**
 * Ending attempts, in batches: one statement completes, retries, kills or reschedules any number of
 * jobs. Every statement only touches rows still RUNNING and picked by the calling node, so a row that
 * was canceled, or recovered and re-claimed by another node, is never overwritten; the ids that were
 * actually written are returned so the caller knows which outcomes landed.
 *
 * A job that ends (complete, kill) leaves the live table in the same statement: the guarded `DELETE ...
 * RETURNING` feeds an `INSERT` into the finished table (./finished-sql.ts), so the live table and its
 * indexes only ever hold live rows. With `succeeded: "delete"` a completion is the DELETE alone (no
 * result kept), except for flow rows, which move as usual: their flow's trigger counts them as they land.
 */
import { errorRecordJson, type ErrorInfo } from "../../logic/outcome-json.js";
import { insertFinishedSql } from "../jobs/finished-sql.js";
import { idBatchParams, inIdBatchSql, valueAtRowSql } from "../jobs/id-batch-sql.js";
import { clearLeaseSql, heldBySql, leaseIsSql, type LeaseToken } from "../jobs/lease-sql.js";
import { named, type Queryable, type Tables } from "../../db/sql.js";

export type { ErrorInfo, LeaseToken };

/**
 * What every outcome carries: the job's id and, from the node that ran it, the lease it ends. With the
 * lease, the write lands only on that lease: a write sent again after a lost reply finds the row changed
 * and does nothing (src/node/outcome-writer.ts). Without it (tools, tests), any lease of the node is ended.
 */
export interface OutcomeItem {
  id: string;
  lease?: LeaseToken;
}

/** A successful attempt. */
export interface Completion extends OutcomeItem {
  /** The handler's result as `resultJson()` (logic/outcome-json.ts) serialised it, or null. */
  resultJson: string | null;
}

/** A failed attempt that will run again after `delayMs`. */
export interface Retry extends OutcomeItem {
  delayMs: number;
  error: ErrorInfo;
}

/** A failed attempt that ends the job in the dead letter queue. */
export interface Death extends OutcomeItem {
  error: ErrorInfo;
}

/** An attempt handed back without counting it (snooze, shutdown, open breaker, saturated resource). */
export interface Reschedule extends OutcomeItem {
  delayMs: number;
}

const keepErrors = 20;
// Appends an error (stamped with database time) and keeps only the newest ones.
const appendError = (col: string, err: string) =>
  `(CASE WHEN jsonb_array_length(${col}) >= ${keepErrors} THEN ${col} - 0 ELSE ${col} END) ` +
  `|| jsonb_build_array(${err} || jsonb_build_object('at', now()))`;

async function ids(res: Promise<{ rows: { id: string }[] }>): Promise<Set<string>> {
  return new Set((await res).rows.map((r) => r.id));
}

/** What becomes of a SUCCEEDED row: `keep` moves it to the finished table, `delete` drops it. */
export type SucceededRetention = "keep" | "delete";

/** The value of array parameter `param` for row `j` of a batch whose sorted ids are `$1`. */
const valueOf = (param: string): string => valueAtRowSql("j", param, "$1::bigint[]");

/**
 * The guard of every outcome: row `j` is in the batch (sorted ids `$1`), RUNNING under the node (`node`),
 * and still the lease its outcome names (attempts in array parameter `$<lease>`, scheduled times in the
 * next one, see {@link leaseParams}).
 */
const heldLeaseSql = (node: string, lease: number): string =>
  `${inIdBatchSql("j", "$1::bigint[]")} AND ${heldBySql("j", node)} AND ` +
  leaseIsSql("j", valueOf(`$${lease}::int[]`), valueOf(`$${lease + 1}::bigint[]`));

/** The two value columns of {@link heldLeaseSql}: each item's lease attempt and scheduled time, or nulls. */
const leaseParams = [
  (i: OutcomeItem): number | null => i.lease?.attempt ?? null,
  (i: OutcomeItem): number | null => i.lease?.scheduledAtMs ?? null,
];

/** The guarded delete of the rows a batch ends ({@link heldLeaseSql}). */
const endRunning = (t: Tables, node: string, lease: number, returning: string): string =>
  `DELETE FROM ${t.jobs} j
       WHERE ${heldLeaseSql(node, lease)}
       RETURNING ${returning}`;

/** A completion's result, from `$2`. */
const newResult = `${valueOf("$2::jsonb[]")} AS new_result`;

const succeeded = {
  status: "'SUCCEEDED'",
  result: "g.new_result",
  finished_at: "now()",
  updated_at: "now()",
};

/**
 * Marks jobs SUCCEEDED with their results: moved to the finished table, or (`retention` `delete`) deleted
 * outright unless they belong to a flow. Returns the ids that were still held by `nodeId`.
 */
export function completeJobs(
  db: Queryable,
  t: Tables,
  nodeId: string,
  items: readonly Completion[],
  retention: SucceededRetention = "keep",
): Promise<Set<string>> {
  if (items.length === 0) return Promise.resolve(new Set());
  const stmt =
    retention === "keep"
      ? named(
          t,
          "complete",
          `WITH gone AS (${endRunning(t, "$5", 3, `j.*, ${newResult}`)})
           ${insertFinishedSql(t, "g", succeeded, "FROM gone g", "j.id")}`,
        )
      : named(
          t,
          "complete_delete",
          // Only flow rows carry the whole row out of the DELETE (as one composite, NULL for the others).
          `WITH gone AS (
             ${endRunning(t, "$5", 3, `j.id, CASE WHEN j.flow_id IS NOT NULL THEN j END AS r, ${newResult}`)}
           ),
           kept AS (
             ${insertFinishedSql(t, "(g.r)", succeeded, "FROM gone g WHERE (g.r).id IS NOT NULL")}
           )
           SELECT id FROM gone`,
        );
  return ids(db.query(stmt([...idBatchParams(items, (i) => i.resultJson, ...leaseParams), nodeId])));
}

/** Puts failed jobs back to PENDING after their backoff, recording the error. */
export function retryJobs(
  db: Queryable,
  t: Tables,
  nodeId: string,
  items: readonly Retry[],
): Promise<Set<string>> {
  if (items.length === 0) return Promise.resolve(new Set());
  const stmt = named(
    t,
    "retry",
    `UPDATE ${t.jobs} j
     SET scheduled_time = now() + ${valueOf("$2::bigint[]")} * interval '1 millisecond',
         errors = ${appendError("j.errors", valueOf("$3::jsonb[]"))}, ${clearLeaseSql}, updated_at = now()
     WHERE ${heldLeaseSql("$6", 4)}
     RETURNING j.id`,
  );
  return ids(
    db.query(
      stmt([
        ...idBatchParams(
          items,
          (i) => i.delayMs,
          (i) => errorRecordJson(i.error),
          ...leaseParams,
        ),
        nodeId,
      ]),
    ),
  );
}

/** Moves failed jobs to the dead letter queue (status DEAD, in the finished table), recording the error. */
export function killJobs(
  db: Queryable,
  t: Tables,
  nodeId: string,
  items: readonly Death[],
): Promise<Set<string>> {
  if (items.length === 0) return Promise.resolve(new Set());
  const stmt = named(
    t,
    "kill",
    `WITH gone AS (${endRunning(t, "$5", 3, `j.*, ${valueOf("$2::jsonb[]")} AS new_err`)})
     ${insertFinishedSql(
       t,
       "g",
       {
         status: "'DEAD'",
         errors: appendError("g.errors", "g.new_err"),
         finished_at: "now()",
         updated_at: "now()",
       },
       "FROM gone g",
       "j.id",
     )}`,
  );
  return ids(
    db.query(stmt([...idBatchParams(items, (i) => errorRecordJson(i.error), ...leaseParams), nodeId])),
  );
}

/**
 * Hands jobs back to PENDING after `delayMs` without counting the attempt (the claim counted it, so it
 * is taken back): snooze, drain at shutdown, an open breaker or a saturated resource.
 */
export function rescheduleJobs(
  db: Queryable,
  t: Tables,
  nodeId: string,
  items: readonly Reschedule[],
): Promise<Set<string>> {
  if (items.length === 0) return Promise.resolve(new Set());
  const stmt = named(
    t,
    "reschedule",
    // At least a millisecond past the row's time, so the lease token (attempt, scheduled ms) of the next
    // claim differs from this one's even though the attempt count comes back to the same number.
    `UPDATE ${t.jobs} j
     SET scheduled_time = greatest(now() + ${valueOf("$2::bigint[]")} * interval '1 millisecond',
                                   j.scheduled_time + interval '1 millisecond'),
         attempts = greatest(0, j.attempts - 1), ${clearLeaseSql}, updated_at = now()
     WHERE ${heldLeaseSql("$5", 3)}
     RETURNING j.id`,
  );
  return ids(db.query(stmt([...idBatchParams(items, (i) => i.delayMs, ...leaseParams), nodeId])));
}
