/**
 * Reading jobs: one by id, a filtered page, and counts by status and type (bounded for metrics). Reads by
 * id or by filter go through the view of both tables (live and finished, migration 0005), so a job is
 * found wherever it is; a SUCCEEDED job of a store that deletes them (`succeeded: "delete"`) is not.
 */
import { jobColumns, jobFromRow, type Job, type JobRow, type JobStatus } from "./job-row.js";
import { validateListJobsFilter } from "../../input/filter-input.js";
import type { Queryable, Tables } from "../../db/sql.js";
import { statusSql } from "./lease-sql.js";
import { jobStepOf, stepsSubquery, type StepJson } from "../durable/job-steps-sql.js";
import type { ListJobsFilter } from "../../input/filter-input.js";
export type { ListJobsFilter };

/** Reads one job, live or finished, or null, with its durable steps (one statement). */
export async function getJob(db: Queryable, t: Tables, id: string): Promise<Job | null> {
  const res = await db.query<JobRow & { steps: StepJson[] }>(
    `SELECT ${jobColumns()}, ${stepsSubquery(t, "$1")} AS steps FROM ${t.all} WHERE id = $1`,
    [id],
  );
  const row = res.rows[0];
  if (!row) return null;
  return { ...jobFromRow(row), steps: row.steps.map(jobStepOf) };
}

/**
 * Reads many jobs by id in one statement (waitFor's batched read: one per wake-up or poll tick, however
 * many waiters). Ids with no row are absent from the result; the order is not specified.
 *
 * @example
 * ```ts
 * const jobs = await getJobsByIds(pool, tables, ["1", "2"]);
 * ```
 */
export async function getJobsByIds(db: Queryable, t: Tables, ids: readonly string[]): Promise<Job[]> {
  if (ids.length === 0) return [];
  const res = await db.query<JobRow>(`SELECT ${jobColumns()} FROM ${t.all} WHERE id = ANY($1::bigint[])`, [
    ids,
  ]);
  return res.rows.map((r) => jobFromRow(r));
}

/**
 * Lists jobs, newest first.
 *
 * @throws ValidationError for a malformed filter (see {@link validateListJobsFilter}); nothing is read.
 */
export async function listJobs(db: Queryable, t: Tables, filter?: ListJobsFilter): Promise<Job[]> {
  const where: string[] = [];
  const values: unknown[] = [];
  const add = (sql: string, v: unknown) => {
    values.push(v);
    where.push(sql.replace("?", `$${values.length}`));
  };
  // Checked here, before the statement, so every caller (pawl.listJobs, the CLI, JobStore users) gets a
  // ValidationError for a malformed filter instead of a database error or a silently empty page.
  const v = validateListJobsFilter(filter);
  // The status users see (a leased live row is RUNNING, ./lease-sql.ts): the live table stores PENDING.
  if (v.status !== undefined) add(`${statusSql()} = ANY(?::text[])`, v.status);
  if (v.type !== undefined) add("type = ?", v.type);
  if (v.queue !== undefined) add("queue = ?", v.queue);
  if (v.beforeId !== undefined) add("id < ?::bigint", v.beforeId);
  const res = await db.query<JobRow>(
    `SELECT ${jobColumns()} FROM ${sourceFor(t, v.status)} ${where.length ? "WHERE " + where.join(" AND ") : ""}
     ORDER BY id DESC LIMIT ${v.limit}`,
    values,
  );
  return res.rows.map((r) => jobFromRow(r));
}

const finishedStatuses: readonly JobStatus[] = ["SUCCEEDED", "CANCELED", "DEAD"];

/**
 * The table a status filter needs: only the finished table for final statuses, only the live one for the
 * others, the view of both for a mix or no filter. Without it, `status = 'DEAD'` read newest first walks
 * the live table's whole primary key finding nothing (1,000,000 rows: 325 ms) before the view's merge can
 * return. A final row sits in the finished table (migration 0005; the dead letter queue reads only there
 * too): one that a node older than 0005 left in the live table is not listed by a final-status filter.
 */
function sourceFor(t: Tables, status: readonly JobStatus[] | undefined): string {
  if (status === undefined || status.length === 0) return t.all;
  const final = status.filter((s) => finishedStatuses.includes(s)).length;
  return final === status.length ? t.finished : final === 0 ? t.jobs : t.all;
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
    `SELECT status, type, count(*) AS count
     FROM (SELECT ${statusSql()} AS status, type FROM ${t.jobs} WHERE status = 'PENDING'
           UNION ALL
           SELECT status, type FROM ${t.finished} WHERE status = 'DEAD') c
     GROUP BY status, type ORDER BY count(*) DESC LIMIT $1`,
    [maxTypes],
  );
  return res.rows.map((r) => ({ status: r.status, type: r.type, count: Number(r.count) }));
}
