/**
 * The console's text search in payloads: jobs whose payload's JSON text contains a string
 * (case-insensitive), newest first. No index serves a substring of a jsonb's text, so an unbounded search
 * for a rare string would read the whole table; this one reads a window of at most `scan` rows per page
 * (the newest below `beforeId`, on the primary keys of both tables), applies the text and the other
 * filters within it, and says where the window stopped, so the next page goes on from there. A page can so hold fewer than `limit`
 * hits while older ones exist; `scannedTo` tells the caller to offer "search older".
 */
import { ValidationError } from "../../core/errors.js";
import { validateListJobsFilter } from "../../input/filter-input.js";
import type { ListJobsFilter } from "../jobs/read-jobs.js";
import { jobPreviewsByIds, type JobPreview } from "./job-preview-sql.js";
import type { Queryable, Tables } from "../../db/sql.js";

/** Filters of {@link searchJobs}: those of listJobs, plus the text and the window. */
export interface JobSearchFilter extends Omit<ListJobsFilter, "limit"> {
  /** The text to find in the payload's JSON (case-insensitive; `%` and `_` are plain characters). */
  text: string;
  /** Hits per page (default 50, at most 1000). */
  limit?: number;
  /** Rows read per page at most (default 20,000). */
  scan?: number;
}

/** One page of {@link searchJobs}. */
export interface JobSearchPage {
  /** The hits, newest first, as previews (job-preview-sql.ts). */
  jobs: JobPreview[];
  /** How many rows the window read (all jobs, whatever the filters). */
  scanned: number;
  /**
   * The id to continue below (`beforeId` of the next page): the last hit when the page is full, else the
   * window's oldest row when the window was full; null when nothing older is left.
   */
  next: string | null;
}

/** The most characters of search text. */
export const maxSearchText = 200;

/**
 * Searches payloads within one bounded window (see the file's comment).
 *
 * @throws ValidationError for an empty, too long or NUL-holding text, or a malformed filter; nothing is read.
 */
export async function searchJobs(db: Queryable, t: Tables, filter: JobSearchFilter): Promise<JobSearchPage> {
  const { text, scan: scanValue, ...rest } = filter;
  if (typeof text !== "string" || text.length === 0 || text.length > maxSearchText || text.includes("\0")) {
    throw new ValidationError(
      "INVALID_OPTION",
      `invalid search text: use 1 to ${maxSearchText} characters, without NUL`,
    );
  }
  const v = validateListJobsFilter(rest);
  const scan = Math.min(1_000_000, Math.max(1, Math.floor(scanValue ?? 20_000)));
  const values: unknown[] = [];
  const param = (value: unknown) => {
    values.push(value);
    return `$${values.length}`;
  };
  // The window is the newest rows by id alone, so its cost is `scan` rows whatever the filters: a window
  // of rows that pass a type filter would walk the primary key until it had found `scan` of that type.
  const window = v.beforeId === undefined ? "" : `WHERE id < ${param(v.beforeId)}::bigint`;
  const match: string[] = [
    `payload::text ILIKE ${param(`%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`)} ESCAPE '\\'`,
  ];
  if (v.status !== undefined) match.push(`status = ANY(${param(v.status)}::text[])`);
  if (v.type !== undefined) match.push(`type = ${param(v.type)}`);
  if (v.queue !== undefined) match.push(`queue = ${param(v.queue)}`);
  const res = await db.query<{ hits: string[]; scanned: number; oldest: string | null }>(
    `WITH w AS MATERIALIZED (
       SELECT id, status, type, queue, payload FROM ${t.all} ${window} ORDER BY id DESC LIMIT ${scan})
     SELECT ARRAY(SELECT w.id::text AS hit FROM w WHERE ${match.join(" AND ")}
                  ORDER BY w.id DESC LIMIT ${v.limit}) AS hits,
            (SELECT count(*) FROM w)::int AS scanned,
            (SELECT min(id) FROM w)::text AS oldest`,
    values,
  );
  const { hits, scanned, oldest } = res.rows[0]!;
  const byId = new Map((await jobPreviewsByIds(db, t, hits)).map((j) => [j.id, j]));
  const jobs = hits.map((id) => byId.get(id)).filter((j): j is JobPreview => j !== undefined);
  const next = hits.length === v.limit ? hits.at(-1)! : scanned === scan ? oldest : null;
  return { jobs, scanned, next };
}
