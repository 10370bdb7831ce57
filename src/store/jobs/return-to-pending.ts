/**
 * The unique-key rule for a job that returns to PENDING under its old id: `dlq.retry`, resuming a job, a
 * queue or a type, a signal, a timed-out wait. Every one of those statements is built here, so the rule is
 * written once.
 *
 * The unique index (migration 0001) holds keys of PENDING and RUNNING rows only: a DEAD, PAUSED or WAITING
 * job does not hold its key, and a duplicate may have been enqueued meanwhile. **The live job wins**, as
 * it does for an enqueue (which returns the live job instead of inserting): a returning job whose key is
 * held by another live job, or by another job returning in the same statement with a lower id, does not
 * become live. It is CANCELED with `cancel_reason = 'duplicate: unique key held by live job <id>'`, and
 * the statement reports it apart from the rows it moved, so one conflicting row never fails the others.
 *
 * A job that a queue or type pause holds returns PAUSED instead (`pawl_pause_rule`, migration 0004): it is
 * not live, so it takes part in the rule only when that pause is lifted.
 *
 * The decision is taken in SQL, against the statement's snapshot. An enqueue that commits after the
 * snapshot can still take the key first; the update then fails with 23505 on the unique index, and
 * {@link runReturn} runs the statement again (a new snapshot, which sees that job as live), a bounded
 * number of times.
 *
 * Paths that move a RUNNING job back to PENDING (retry, snooze, hand-back, orphan recovery) need none of
 * this: a RUNNING row already holds its key in the index, so no other live row can have it.
 *
 * Where the rows are (migration 0005): a paused or parked job is live, so it is updated in place and a
 * duplicate moves to the finished table, CANCELED. A DEAD job (`dlq.retry`) is in the finished table: it
 * moves back to the live table under its id, and a duplicate stays where it is, CANCELED. A flow member
 * that leaves the finished table is taken off its flow's counters by the same statement (no trigger could
 * tell that from pruning, which must leave them alone).
 */
import type { QueryConfig, QueryResultRow } from "pg";
import { PawlError } from "../../core/errors.js";
import { flowTable } from "../composition/flow-sql.js";
import { assignments, insertFinishedSql, insertMovedSql, type ColumnValues } from "./finished-sql.js";
import type { Queryable, Tables } from "../../db/sql.js";
import { clearLease } from "./lease-sql.js";

/** The unique index a returning row can collide with (migration 0001). */
const uniqueLiveIndex = "scheduler_job_queue_unique_live_idx";

/** How many times {@link runReturn} runs a statement that lost its unique key to a concurrent enqueue. */
export const returnAttempts = 5;

const duplicatePrefix = "duplicate: unique key held by live job ";

/** The cancel reason of a returning job whose unique key a live job holds. */
export const duplicateReason = (liveJobId: string): string => `${duplicatePrefix}${liveJobId}`;

/** A job that was to return to PENDING and was CANCELED instead: a live job holds its unique key. */
export interface DuplicateCanceled {
  /** The canceled job. */
  jobId: string;
  type: string;
  queue: string;
  uniqueKey: string;
  /** The live (PENDING or RUNNING) job that holds the key, or the returning job that took it first. */
  liveJobId: string;
}

/** How a path picks and moves its rows; the rule supplies status, paused_by and the duplicates' update. */
export interface ReturnSpec {
  /**
   * Where the rows are: `live` (paused or parked jobs, updated in place) or `finished` (DEAD jobs, moved
   * back to the live table). Default `live`.
   */
  source?: "live" | "finished";
  /**
   * The rows to return, as `FROM <table> j WHERE ...` (the table of `source`) with the status the path
   * expects (and ORDER BY / LIMIT for a sweep). They are locked (`FOR UPDATE OF j`) before the rule reads
   * them.
   */
  pick: string;
  /** Skip rows locked by someone else instead of waiting (a sweep that others run concurrently). */
  skipLocked?: boolean;
  /**
   * The path's own new values for rows that return, over `j` (the row) and `d.pause` (the pause that holds
   * it, or NULL when it becomes PENDING). `status` and `paused_by` are set by the rule.
   */
  set: ColumnValues;
  /** What RETURNING yields for every row, moved or canceled (over `j`). The rule adds `live_job_id`. */
  returning: string;
}

/**
 * The CTEs of a return statement: `returned` (the rows made PENDING, or PAUSED under a pause) and
 * `duplicates` (the rows CANCELED by the rule), each returning `spec.returning` and `live_job_id` (NULL
 * in `returned`). The caller appends its final SELECT, usually `SELECT * FROM returned UNION ALL SELECT *
 * FROM duplicates`.
 */
export function returnCtes(t: Tables, spec: ReturnSpec): string {
  // A returning job holds no lease (./lease-sql.ts): PENDING with picked_by set would read as RUNNING.
  const back: ColumnValues = {
    ...spec.set,
    ...clearLease,
    status: "CASE WHEN d.pause IS NULL THEN 'PENDING' ELSE 'PAUSED' END",
    paused_by: "d.pause",
  };
  const canceled: ColumnValues = {
    status: "'CANCELED'",
    cancel_reason: `'${duplicatePrefix}' || d.live_id`,
    finished_at: "now()",
    updated_at: "now()",
  };
  const returning = (live: string): string => `${spec.returning}, ${live}::text AS live_job_id`;
  const pickReturning = "ARRAY(SELECT id FROM decided WHERE live_id IS NULL)";
  const pickDuplicates = "ARRAY(SELECT id FROM decided WHERE live_id IS NOT NULL)";
  const moves =
    spec.source === "finished"
      ? // Back to the live table under the same id; the flow counters lose what leaves.
        `gone AS (
       DELETE FROM ${t.finished} j USING decided d
       WHERE j.id = ANY(${pickReturning}) AND j.id = d.id
       RETURNING j.*, d.pause
     ),
     returned AS (
       ${insertMovedSql(t.jobs, "j", back, "FROM gone j JOIN decided d ON d.id = j.id", returning("NULL"))}
     ),
     uncounted AS (
       UPDATE ${flowTable(t)} f
       SET succeeded = f.succeeded - u.succeeded, dead = f.dead - u.dead, canceled = f.canceled - u.canceled,
           updated_at = now()
       FROM (SELECT flow_id, count(*) FILTER (WHERE status = 'SUCCEEDED') AS succeeded,
                    count(*) FILTER (WHERE status = 'DEAD') AS dead,
                    count(*) FILTER (WHERE status = 'CANCELED') AS canceled
             FROM gone WHERE flow_step IS NOT NULL GROUP BY flow_id) u
       WHERE f.id = u.flow_id
     ),
     duplicates AS (
       UPDATE ${t.finished} j
       SET ${assignments(canceled)}
       FROM decided d
       WHERE j.id = ANY(${pickDuplicates}) AND j.id = d.id
       RETURNING ${returning("d.live_id")}
     )`
      : // Updated in place; a duplicate ends, so it moves to the finished table (its reason names the live
        // job, which is how the insert's RETURNING, blind to the source, reports it).
        `returned AS (
       UPDATE ${t.jobs} j
       SET ${assignments(back)}
       FROM decided d
       WHERE j.id = ANY(${pickReturning}) AND j.id = d.id
       RETURNING ${returning("NULL")}
     ),
     dup_gone AS (
       DELETE FROM ${t.jobs} j USING decided d
       WHERE j.id = ANY(${pickDuplicates}) AND j.id = d.id
       RETURNING j.*, d.live_id
     ),
     duplicates AS (
       ${insertFinishedSql(
         t,
         "j",
         canceled,
         "FROM dup_gone j JOIN decided d ON d.id = j.id",
         returning(`substr(j.cancel_reason, ${duplicatePrefix.length + 1})`),
       )}
     )`;
  return `WITH cand AS MATERIALIZED (
       SELECT j.id, j.unique_key, ${t.s}.pawl_pause_rule(j.queue, j.type) AS pause
       ${spec.pick}
       FOR UPDATE OF j${spec.skipLocked ? " SKIP LOCKED" : ""}
     ),
     decided AS MATERIALIZED (
       -- The live job holding the key, else the lowest id among the rows of this statement that want it.
       SELECT c.id, c.pause,
              CASE WHEN c.pause IS NULL AND c.unique_key IS NOT NULL THEN coalesce(
                (SELECT l.id FROM ${t.jobs} l
                 WHERE l.unique_key = c.unique_key AND l.status IN ('PENDING', 'RUNNING') LIMIT 1),
                nullif(min(c.id) FILTER (WHERE c.pause IS NULL) OVER (PARTITION BY c.unique_key), c.id))
              END AS live_id
       FROM cand c
     ),
     ${moves}`;
}

/** The columns every return statement's rows carry for the rule's report. */
export interface ReturnedRow extends QueryResultRow {
  id: string;
  type: string;
  queue: string;
  unique_key: string | null;
  /** The live job that holds the key: set on rows the rule CANCELED, null on rows that returned. */
  live_job_id: string | null;
}

/** A row the rule CANCELED, as reported to callers; null for a row that returned. */
export function duplicateOf(row: ReturnedRow): DuplicateCanceled | null {
  if (row.live_job_id === null) return null;
  return {
    jobId: row.id,
    type: row.type,
    queue: row.queue,
    uniqueKey: row.unique_key ?? "",
    liveJobId: row.live_job_id,
  };
}

function lostKeyRace(error: unknown): boolean {
  const e = error as { code?: string; constraint?: string };
  return e.code === "23505" && e.constraint === uniqueLiveIndex;
}

/**
 * Runs a return statement, again (up to {@link returnAttempts} times) when a concurrent enqueue took a
 * unique key between its snapshot and its update. `inTransaction`: `db` is inside the caller's
 * transaction, so each try runs under a savepoint (a failed statement would abort the transaction).
 *
 * @throws PawlError (`INVALID_STATE`) when every try lost a race for a key, with the last 23505 as cause.
 */
export async function runReturn<R extends ReturnedRow>(
  db: Queryable,
  query: QueryConfig,
  inTransaction = false,
): Promise<R[]> {
  let last: unknown;
  for (let attempt = 0; attempt < returnAttempts; attempt++) {
    if (inTransaction) await db.query("SAVEPOINT pawl_return");
    try {
      const res = await db.query<R>(query);
      if (inTransaction) await db.query("RELEASE SAVEPOINT pawl_return");
      return res.rows;
    } catch (error) {
      // Anything else is the caller's to handle (its transaction is aborted and will be rolled back).
      if (!lostKeyRace(error)) throw error;
      if (inTransaction) await db.query("ROLLBACK TO SAVEPOINT pawl_return");
      last = error;
    }
  }
  throw new PawlError(
    "INVALID_STATE",
    `jobs returning to PENDING lost their unique keys to concurrent enqueues ${returnAttempts} times in a row`,
    { cause: last },
  );
}
