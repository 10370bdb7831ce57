/**
 * The dead letter queue: jobs whose attempts ran out or whose error was not retryable, kept with their
 * errors in status DEAD, in the finished table (migration 0005), until someone retries or purges them.
 */
import { jobColumns, jobFromRow, type Job, type JobRow } from "./job-row.js";
import {
  duplicateOf,
  returnCtes,
  runReturn,
  type DuplicateCanceled,
  type ReturnedRow,
} from "./return-to-pending.js";
import type { Queryable, Tables } from "../../db/sql.js";
import type { DeadLetterFilter } from "../../input/filter-input.js";
export type { DeadLetterFilter };

/** Lists DEAD jobs, newest first. */
export async function listDead(db: Queryable, t: Tables, f: DeadLetterFilter = {}): Promise<Job[]> {
  const q = listDeadQuery(t, f, jobColumns());
  const res = await db.query<JobRow>(q.text, q.values);
  return res.rows.map((r) => jobFromRow(r));
}

/** The statement of {@link listDead} selecting `columns` (the console's previews select fewer). */
export function listDeadQuery(
  t: Tables,
  f: DeadLetterFilter,
  columns: string,
): { text: string; values: unknown[] } {
  const limit = Math.min(1000, Math.max(1, f.limit ?? 50));
  return {
    text: `SELECT ${columns} FROM ${t.finished}
     WHERE status = 'DEAD' AND ($1::text IS NULL OR type = $1) AND ($2::timestamptz IS NULL OR finished_at < $2)
     ORDER BY finished_at DESC, id DESC LIMIT $3`,
    values: [f.type ?? null, f.before ?? null, limit],
  };
}

/**
 * What {@link retryDead} did: the jobs it sent back (PENDING, or PAUSED when a queue or type pause holds
 * them), as an array, so callers that read it as `Job[]` keep working. `duplicates` lists the jobs it
 * CANCELED instead because a live job holds their unique key (see ./return-to-pending.ts); it is not
 * enumerable, so it stays out of JSON and of deep equality with a plain array.
 */
export type RetriedJobs = Job[] & { readonly duplicates: readonly DuplicateCanceled[] };

/**
 * Sends DEAD jobs back to PENDING (into the live table, under their ids), due now, with attempts reset
 * (their errors are kept). A job whose
 * unique key a live job holds is CANCELED instead and reported in `duplicates`; the others go back all
 * the same. Ids that were not DEAD are in neither list.
 */
export async function retryDead(db: Queryable, t: Tables, ids: readonly string[]): Promise<RetriedJobs> {
  const retried: Job[] = [];
  const duplicates: DuplicateCanceled[] = [];
  if (ids.length > 0) {
    const ctes = returnCtes(t, {
      source: "finished",
      pick: `FROM ${t.finished} j WHERE j.id = ANY($1::bigint[]) AND j.status = 'DEAD'`,
      set: {
        attempts: "0",
        scheduled_time: "now()",
        finished_at: "NULL",
        picked_by: "NULL",
        picked_at: "NULL",
        updated_at: "now()",
      },
      returning: jobColumns("j"),
    });
    const rows = await runReturn<JobRow & ReturnedRow>(db, {
      text: `${ctes} SELECT * FROM returned UNION ALL SELECT * FROM duplicates`,
      values: [ids],
    });
    for (const row of rows) {
      const duplicate = duplicateOf(row);
      if (duplicate) duplicates.push(duplicate);
      else retried.push(jobFromRow(row));
    }
  }
  return Object.defineProperty(retried, "duplicates", {
    value: duplicates,
    enumerable: false,
  }) as RetriedJobs;
}

/** Deletes DEAD jobs matching the filter; returns how many. */
export async function purgeDead(db: Queryable, t: Tables, f: DeadLetterFilter = {}): Promise<number> {
  const res = await db.query(
    `DELETE FROM ${t.finished}
     WHERE status = 'DEAD' AND ($1::text IS NULL OR type = $1) AND ($2::timestamptz IS NULL OR finished_at < $2)`,
    [f.type ?? null, f.before ?? null],
  );
  return res.rowCount ?? 0;
}
