/** Reading jobs: one by id, a filtered page, and counts by status and type (bounded for metrics). */
import { jobColumns, jobFromRow, type Job, type JobRow, type JobStatus } from "./job-row.js";
import type { Queryable, Tables } from "./sql.js";

/** Filters of {@link listJobs}. */
export interface ListJobsFilter {
  status?: JobStatus | readonly JobStatus[];
  type?: string;
  queue?: string;
  /** At most this many, newest first (default 50, at most 1000). */
  limit?: number;
  /** Only jobs with an id below this one (for paging). */
  beforeId?: string;
}

/** Reads one job, or null. */
export async function getJob(db: Queryable, t: Tables, id: string): Promise<Job | null> {
  const res = await db.query<JobRow>(`SELECT ${jobColumns()} FROM ${t.jobs} WHERE id = $1`, [id]);
  const row = res.rows[0];
  return row ? jobFromRow(row) : null;
}

/** Lists jobs, newest first. */
export async function listJobs(db: Queryable, t: Tables, f: ListJobsFilter = {}): Promise<Job[]> {
  const where: string[] = [];
  const values: unknown[] = [];
  const add = (sql: string, v: unknown) => {
    values.push(v);
    where.push(sql.replace("?", `$${values.length}`));
  };
  if (f.status !== undefined) add("status = ANY(?::text[])", Array.isArray(f.status) ? f.status : [f.status]);
  if (f.type !== undefined) add("type = ?", f.type);
  if (f.queue !== undefined) add("queue = ?", f.queue);
  if (f.beforeId !== undefined) add("id < ?::bigint", f.beforeId);
  const limit = Math.min(1000, Math.max(1, f.limit ?? 50));
  const res = await db.query<JobRow>(
    `SELECT ${jobColumns()} FROM ${t.jobs} ${where.length ? "WHERE " + where.join(" AND ") : ""}
     ORDER BY id DESC LIMIT ${limit}`,
    values,
  );
  return res.rows.map((r) => jobFromRow(r));
}

/** A count of jobs in one status of one type. */
export interface JobCount {
  status: JobStatus;
  type: string;
  count: number;
}

/**
 * Counts live and dead jobs by status and type. Terminal SUCCEEDED/CANCELED rows are left out (they are
 * pruned and their count says nothing about load), and at most `maxTypes` groups are returned, so the
 * query stays bounded on a large table.
 */
export async function countJobs(db: Queryable, t: Tables, maxTypes = 200): Promise<JobCount[]> {
  const res = await db.query<{ status: JobStatus; type: string; count: string }>(
    `SELECT status, type, count(*) AS count FROM ${t.jobs}
     WHERE status IN ('PENDING', 'RUNNING', 'DEAD')
     GROUP BY status, type ORDER BY count(*) DESC LIMIT $1`,
    [maxTypes],
  );
  return res.rows.map((r) => ({ status: r.status, type: r.type, count: Number(r.count) }));
}
