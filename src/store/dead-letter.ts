/**
 * The dead letter queue: jobs whose attempts ran out or whose error was not retryable, kept with their
 * errors in status DEAD until someone retries or purges them.
 */
import { jobColumns, jobFromRow, type Job, type JobRow } from "./job-row.js";
import type { Queryable, Tables } from "./sql.js";

/** Filters for listing and purging dead jobs. */
export interface DeadLetterFilter {
  type?: string;
  /** Only jobs that died before this time (purge). */
  before?: Date;
  /** At most this many (list; default 50, at most 1000). */
  limit?: number;
}

/** Lists DEAD jobs, newest first. */
export async function listDead(db: Queryable, t: Tables, f: DeadLetterFilter = {}): Promise<Job[]> {
  const limit = Math.min(1000, Math.max(1, f.limit ?? 50));
  const res = await db.query<JobRow>(
    `SELECT ${jobColumns()} FROM ${t.jobs}
     WHERE status = 'DEAD' AND ($1::text IS NULL OR type = $1) AND ($2::timestamptz IS NULL OR finished_at < $2)
     ORDER BY finished_at DESC, id DESC LIMIT $3`,
    [f.type ?? null, f.before ?? null, limit],
  );
  return res.rows.map((r) => jobFromRow(r));
}

/**
 * Sends DEAD jobs back to PENDING, due now, with attempts reset (their errors are kept). Returns the jobs
 * that were DEAD and are PENDING now.
 */
export async function retryDead(db: Queryable, t: Tables, ids: readonly string[]): Promise<Job[]> {
  if (ids.length === 0) return [];
  const res = await db.query<JobRow>(
    `UPDATE ${t.jobs}
     SET status = 'PENDING', attempts = 0, scheduled_time = now(), finished_at = NULL,
         picked_by = NULL, picked_at = NULL, updated_at = now()
     WHERE id = ANY($1::bigint[]) AND status = 'DEAD'
     RETURNING ${jobColumns()}`,
    [ids],
  );
  return res.rows.map((r) => jobFromRow(r));
}

/** Deletes DEAD jobs matching the filter; returns how many. */
export async function purgeDead(db: Queryable, t: Tables, f: DeadLetterFilter = {}): Promise<number> {
  const res = await db.query(
    `DELETE FROM ${t.jobs}
     WHERE status = 'DEAD' AND ($1::text IS NULL OR type = $1) AND ($2::timestamptz IS NULL OR finished_at < $2)`,
    [f.type ?? null, f.before ?? null],
  );
  return res.rowCount ?? 0;
}
