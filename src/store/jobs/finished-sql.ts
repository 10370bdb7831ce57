/**
 * Moving a row between the live table (scheduler_job_queue) and the finished one (scheduler_job_finished,
 * migration 0005). A job that ends leaves the live table in the statement that ends it: a data-modifying
 * CTE `DELETE ... RETURNING` the row and an `INSERT` of it, with its new status, into the other table,
 * under the same id. Both halves are one statement, so no reader ever sees the job in neither table or in
 * both, and a concurrent statement that wanted the row finds it gone (as it found it changed before).
 *
 * The insert names every column, so the builders here are the one place that lists them; the test that
 * compares both tables' columns with {@link jobTableColumns} fails when a migration adds one without the
 * other.
 */
import type { Tables } from "../../db/sql.js";

/** Every column of both job tables, in table order. */
export const jobTableColumns = [
  "id",
  "type",
  "queue",
  "payload",
  "priority",
  "status",
  "scheduled_time",
  "attempts",
  "max_attempts",
  "timeout_ms",
  "picked_by",
  "picked_at",
  "unique_key",
  "errors",
  "result",
  "cancel_reason",
  "created_at",
  "updated_at",
  "finished_at",
  "flow_id",
  "flow_step",
  "deps_pending",
  "flow_next",
  "flow_inputs",
  "signal_state",
  "signal_payload",
  "signal_deadline",
  "signaled_at",
  "paused_by",
  "progress",
  "trace_context",
  "concurrency_key",
  "concurrency_limit",
] as const;

/** A column of the job tables. */
export type JobTableColumn = (typeof jobTableColumns)[number];

/** New values for some columns of a moved row: SQL expressions over the source row's alias. */
export type ColumnValues = Partial<Record<JobTableColumn, string>>;

/**
 * `INSERT INTO <target> AS j (every column) SELECT <value or src.column>, ... <from>`: the second half of a
 * move. `src` is how `from` names the deleted row (a CTE's alias, or a composite like `(g.r)`); `set`
 * overrides columns with expressions; `returning` (over `j`, the inserted row) is appended when given.
 */
export function insertMovedSql(
  target: string,
  src: string,
  set: ColumnValues,
  from: string,
  returning?: string,
): string {
  const values = jobTableColumns.map((c) => set[c] ?? `${src}.${c}`);
  return `INSERT INTO ${target} AS j (${jobTableColumns.join(", ")})
     SELECT ${values.join(", ")}
     ${from}${returning ? `\n     RETURNING ${returning}` : ""}`;
}

/** {@link insertMovedSql} into the finished table: how a job that ends lands there. */
export function insertFinishedSql(
  t: Tables,
  src: string,
  set: ColumnValues,
  from: string,
  returning?: string,
): string {
  return insertMovedSql(t.finished, src, set, from, returning);
}

/** `col = expr, ...`: the same values as an UPDATE's SET list (for rows that stay in their table). */
export function assignments(set: ColumnValues): string {
  return Object.entries(set)
    .map(([c, v]) => `${c} = ${v}`)
    .join(", ");
}
