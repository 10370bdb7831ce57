/**
 * The console's text search in payloads: jobs whose payload's JSON text contains a string
 * (case-insensitive), newest first. No index serves a substring of a jsonb's text, so an unbounded search
 * for a rare string would read the whole table; this one reads a window of at most `scan` rows per page
 * (the newest below `beforeId` that pass the other filters, on the primary keys of both tables), and says
 * where the window stopped, so the next page goes on from there. A page can so hold fewer than `limit`
 * hits while older ones exist; `scannedTo` tells the caller to offer "search older".
 */
import { ValidationError } from "../errors.js";
import { validateListJobsFilter } from "../filter-input.js";
import type { Job } from "./job-row.js";
import { getJobsByIds, type ListJobsFilter } from "./read-jobs.js";
import type { Queryable, Tables } from "./sql.js";

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
  /** The hits, newest first. */
  jobs: Job[];
  /** How many rows the window read. */
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
  const where: string[] = [];
  const values: unknown[] = [];
  const add = (sql: string, value: unknown) => {
    values.push(value);
    where.push(sql.replace("?", `$${values.length}`));
  };
  if (v.status !== undefined) add("status = ANY(?::text[])", v.status);
  if (v.type !== undefined) add("type = ?", v.type);
  if (v.queue !== undefined) add("queue = ?", v.queue);
  if (v.beforeId !== undefined) add("id < ?::bigint", v.beforeId);
  values.push(`%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
  const pattern = `$${values.length}`;
  const res = await db.query<{ hits: string[]; scanned: number; oldest: string | null }>(
    `WITH w AS MATERIALIZED (
       SELECT id, payload FROM ${t.all} ${where.length ? "WHERE " + where.join(" AND ") : ""}
       ORDER BY id DESC LIMIT ${scan})
     SELECT ARRAY(SELECT id::text FROM w WHERE payload::text ILIKE ${pattern} ESCAPE '\\'
                  ORDER BY id DESC LIMIT ${v.limit}) AS hits,
            (SELECT count(*) FROM w)::int AS scanned,
            (SELECT min(id) FROM w)::text AS oldest`,
    values,
  );
  const { hits, scanned, oldest } = res.rows[0]!;
  const byId = new Map((await getJobsByIds(db, t, hits)).map((j) => [j.id, j]));
  const jobs = hits.map((id) => byId.get(id)).filter((j): j is Job => j !== undefined);
  const next = hits.length === v.limit ? hits.at(-1)! : scanned === scan ? oldest : null;
  return { jobs, scanned, next };
}
