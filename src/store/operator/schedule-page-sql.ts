/**
 * The console's read of recurring schedules: one keyset page by name (`afterName` = the last name shown,
 * on the table's primary key), so a deployment with thousands of schedules pages like the job list does.
 * The row shape is the store's {@link RecurringRow}, the one `pawl.listSchedules()` returns.
 */
import { recurringColumns, recurringTable, type RecurringRow } from "../cluster/recurring-sql.js";
import type { Queryable, Tables } from "../../db/sql.js";

/** The most schedules one page returns. */
export const maxSchedulePage = 200;

/** One page of schedules by name, after `afterName` when given; at most `limit` (1 to {@link maxSchedulePage}). */
export async function listSchedulePage(
  db: Queryable,
  t: Tables,
  f: { afterName?: string; limit?: number } = {},
): Promise<RecurringRow[]> {
  const limit = Math.min(maxSchedulePage, Math.max(1, Math.floor(f.limit ?? 50)));
  const res = await db.query<RecurringRow>(
    `SELECT ${recurringColumns}
     FROM ${recurringTable(t)} WHERE $1::text IS NULL OR name > $1 ORDER BY name LIMIT ${limit}`,
    [f.afterName ?? null],
  );
  return res.rows;
}
