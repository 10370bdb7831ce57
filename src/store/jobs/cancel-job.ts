/**
 * Canceling a job. A PENDING (or WAITING, or PAUSED) job becomes CANCELED at once. A RUNNING one becomes
 * CANCELED in the store too: the node running it sees its completion refused (the row is no longer
 * RUNNING) and discards the result, and the cancel request reaches the handler's context through the
 * runtime. Either way the row moves to the finished table in the statement that cancels it.
 */
import { jobColumns, jobFromRow, type Job, type JobRow, type JobStatus } from "./job-row.js";
import { ValidationError } from "../../core/errors.js";
import { storableText } from "../../core/input-text.js";
import { insertFinishedSql } from "./finished-sql.js";
import { validateJobId } from "../../input/job-id.js";
import type { Queryable, Tables } from "../../db/sql.js";
import { statusSql } from "./lease-sql.js";

/** What {@link cancelJob} did. */
export interface CancelResult {
  /** `canceled`: it was PENDING; `running-canceled`: it was RUNNING; `already-final`: nothing changed. */
  outcome: "canceled" | "running-canceled" | "already-final";
  /** The status before the call. */
  previousStatus: JobStatus;
  /** The job after the call. */
  job: Job;
}

/** The longest cancel reason, in UTF-16 code units. */
export const maxCancelReasonLength = 1000;

/**
 * Validates a cancel reason (of a job or a flow): a string PostgreSQL can store, at most
 * {@link maxCancelReasonLength} long. @throws ValidationError `INVALID_OPTION`.
 */
export function validateCancelReason(reason: unknown): string {
  const text = storableText("cancel reason", reason);
  if (text.length > maxCancelReasonLength) {
    throw new ValidationError(
      "INVALID_OPTION",
      `invalid cancel reason: it is ${text.length} characters, over the limit of ${maxCancelReasonLength}`,
    );
  }
  return text;
}

/**
 * Cancels a job; null when no job has that id.
 *
 * @throws ValidationError for a bad id or reason, before the statement runs.
 */
export async function cancelJob(
  db: Queryable,
  t: Tables,
  id: string,
  reason: string,
): Promise<CancelResult | null> {
  validateJobId(id);
  validateCancelReason(reason);
  // Only live rows can be canceled, and every live status can. The row is locked first, so a concurrent
  // outcome either ended it before (then it is in the finished table: already final) or waits for this.
  const res = await db.query<JobRow & { previous_status: JobStatus }>(
    `WITH prev AS (SELECT id, ${statusSql()} AS status FROM ${t.jobs} WHERE id = $1 FOR UPDATE),
     gone AS (
       DELETE FROM ${t.jobs} j USING prev
       WHERE j.id = prev.id AND prev.status IN ('PENDING', 'RUNNING', 'WAITING', 'PAUSED')
       RETURNING j.*
     ),
     upd AS (
       ${insertFinishedSql(
         t,
         "g",
         { status: "'CANCELED'", cancel_reason: "$2", finished_at: "now()", updated_at: "now()" },
         "FROM gone g",
         jobColumns("j"),
       )}
     )
     SELECT prev.status AS previous_status, u.* FROM prev LEFT JOIN upd u ON true`,
    [id, reason],
  );
  const row = res.rows[0];
  if (!row || row.id === null) {
    const job = await db.query<JobRow>(`SELECT ${jobColumns()} FROM ${t.all} WHERE id = $1`, [id]);
    const current = job.rows[0];
    if (!current) return null;
    return {
      outcome: "already-final",
      previousStatus: row?.previous_status ?? current.status,
      job: jobFromRow(current),
    };
  }
  return {
    outcome: row.previous_status === "RUNNING" ? "running-canceled" : "canceled",
    previousStatus: row.previous_status,
    job: jobFromRow(row),
  };
}

/** Of `ids`, those whose row is CANCELED now (the runtime's cancellation check). */
export async function canceledAmong(db: Queryable, t: Tables, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const res = await db.query<{ id: string }>(
    `SELECT id FROM ${t.all} WHERE id = ANY($1::bigint[]) AND status = 'CANCELED'`,
    [ids],
  );
  return new Set(res.rows.map((r) => r.id));
}
