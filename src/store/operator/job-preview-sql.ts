/**
 * The console's lists of jobs (the job list, a text search's hits, the dead letter queue, paused jobs)
 * read PREVIEWS, computed in SQL: the first characters of the payload's and the result's JSON text and of
 * the last error's message, never the whole values. A list page of 200 jobs whose payloads are 1 MB each
 * would otherwise pull 200 MB through the pool to render a table, and put every payload's secrets in the
 * process's memory for a page that shows none of them. The filters and order are those of listJobs and
 * the dead letter queue's list (one statement builder each: read-jobs.ts, dead-letter.ts).
 */
import type { JobStatus } from "../../core/job.js";
import type { Queryable, Tables } from "../../db/sql.js";
import type { DeadLetterFilter } from "../../input/filter-input.js";
import { listDeadQuery } from "../jobs/dead-letter.js";
import { statusSql } from "../jobs/lease-sql.js";
import { listJobsQuery, type ListJobsFilter } from "../jobs/read-jobs.js";

/** The characters of a preview. */
export const previewChars = 200;

/** A job as a list shows it: its fields, with previews in place of its values. */
export interface JobPreview {
  id: string;
  type: string;
  queue: string;
  priority: number;
  status: JobStatus;
  scheduledTime: Date;
  attempts: number;
  maxAttempts: number;
  finishedAt: Date | null;
  /** What holds a PAUSED job: `job` (paused by id), `queue` or `type`; null otherwise. */
  pausedBy: string | null;
  /** The last error's message, cut to {@link previewChars} (an ellipsis marks the cut). */
  lastError: string | null;
  /** The payload's JSON text, cut to {@link previewChars}. */
  payloadPreview: string;
  /** The result's JSON text, cut to {@link previewChars}; null without a result. */
  resultPreview: string | null;
}

interface PreviewRow {
  id: string;
  type: string;
  queue: string;
  priority: number;
  status: JobStatus;
  scheduled_time: Date | string;
  attempts: number;
  max_attempts: number;
  finished_at: Date | string | null;
  paused_by: string | null;
  last_error: string | null;
  payload_preview: string | null;
  result_preview: string | null;
}

/**
 * The columns of a preview. One character more than a preview holds is read, so a cut value is known
 * to be cut without reading its length (which would read all of it).
 */
function previewColumns(): string {
  const n = previewChars + 1;
  return [
    "id",
    "type",
    "queue",
    "priority",
    `${statusSql()} AS status`,
    "scheduled_time",
    "attempts",
    "max_attempts",
    "finished_at",
    "paused_by",
    `left(errors -> -1 ->> 'message', ${n}) AS last_error`,
    `left(payload::text, ${n}) AS payload_preview`,
    `left(result::text, ${n}) AS result_preview`,
  ].join(", ");
}

/** `text` cut to a preview, with an ellipsis when it was longer. */
function cut(text: string | null): string | null {
  if (text === null) return null;
  return text.length > previewChars ? `${text.slice(0, previewChars)}…` : text;
}

const date = (v: Date | string): Date => (v instanceof Date ? v : new Date(v));

function fromRow(r: PreviewRow): JobPreview {
  return {
    id: r.id,
    type: r.type,
    queue: r.queue,
    priority: r.priority,
    status: r.status,
    scheduledTime: date(r.scheduled_time),
    attempts: r.attempts,
    maxAttempts: r.max_attempts,
    finishedAt: r.finished_at === null ? null : date(r.finished_at),
    pausedBy: r.status === "PAUSED" ? r.paused_by : null,
    lastError: cut(r.last_error),
    payloadPreview: cut(r.payload_preview) ?? "null",
    resultPreview: cut(r.result_preview),
  };
}

/**
 * listJobs' page, as previews.
 *
 * @throws ValidationError for a malformed filter; nothing is read.
 */
export async function listJobPreviews(
  db: Queryable,
  t: Tables,
  filter?: ListJobsFilter,
): Promise<JobPreview[]> {
  const q = listJobsQuery(t, filter, previewColumns());
  return (await db.query<PreviewRow>(q.text, q.values)).rows.map(fromRow);
}

/** The dead letter queue's page (a filter already checked), as previews. */
export async function listDeadPreviews(db: Queryable, t: Tables, f: DeadLetterFilter): Promise<JobPreview[]> {
  const q = listDeadQuery(t, f, previewColumns());
  return (await db.query<PreviewRow>(q.text, q.values)).rows.map(fromRow);
}

/** Jobs by id, as previews (ids with no row are absent; the order is not specified). */
export async function jobPreviewsByIds(
  db: Queryable,
  t: Tables,
  ids: readonly string[],
): Promise<JobPreview[]> {
  if (ids.length === 0) return [];
  const res = await db.query<PreviewRow>(
    `SELECT ${previewColumns()} FROM ${t.all} WHERE id = ANY($1::bigint[])`,
    [ids],
  );
  return res.rows.map(fromRow);
}
