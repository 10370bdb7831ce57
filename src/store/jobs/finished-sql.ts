/**
 * Moving a row between the live table (scheduler_job_queue) and the finished one (scheduler_job_finished,
 * migration 0005). A job that ends leaves the live table in the statement that ends it: a data-modifying
 * CTE `DELETE ... RETURNING` the row and an `INSERT` of it, with its new status, into the other table,
 * under the same id. Both halves are one statement, so no reader ever sees the job in neither table or in
 * both, and a concurrent statement that wanted the row finds it gone (as it found it changed before).
 *
 * The insert names every column, so the builders here are the one place that lists them; the test that
 * compares both tables' columns with {@link jobTableColumns} fails when a migration adds one without the
 * other. The finished table has one column more, `time_partitioned`, which only the move into it sets
 * ({@link timePartitionedSql}).
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
  "parent_job_id",
] as const;

/** A column of the job tables. */
export type JobTableColumn = (typeof jobTableColumns)[number];

/** New values for some columns of a moved row: SQL expressions over the source row's alias. */
export type ColumnValues = Partial<Record<JobTableColumn, string>>;

/**
 * `INSERT INTO <target> AS j (every column) SELECT <value or src.column>, ... <from>`: the second half of a
 * move. `src` is how `from` names the deleted row (a CTE's alias, or a composite like `(g.r)`); `set`
 * overrides columns with expressions; `returning` (over `j`, the inserted row) is appended when given;
 * `extra` adds columns only the target has.
 */
export function insertMovedSql(
  target: string,
  src: string,
  set: ColumnValues,
  from: string,
  returning?: string,
  extra: Readonly<Record<string, string>> = {},
): string {
  const columns = [...jobTableColumns, ...Object.keys(extra)];
  const values = [...jobTableColumns.map((c) => set[c] ?? `${src}.${c}`), ...Object.values(extra)];
  return `INSERT INTO ${target} AS j (${columns.join(", ")})
     SELECT ${values.join(", ")}
     ${from}${returning ? `\n     RETURNING ${returning}` : ""}`;
}

/**
 * Whether a row moved with `status` (an SQL expression) goes to the time partitions (migration 0016):
 * SUCCEEDED rows do while a partition's range covers now(), and every other row goes to the partition pruned
 * row by row. The check reads the partition list once per statement (an uncorrelated EXISTS), and a row it
 * lets through always has a range to land in, so no completion waits for a partition being made.
 */
export function timePartitionedSql(t: Tables, status: string): string {
  const covered = `EXISTS (SELECT 1 FROM ${t.finishedPartitions} p WHERE p.range_start <= now() AND now() < p.range_end)`;
  if (status === "'SUCCEEDED'") return covered;
  // Another literal status is never time-partitioned; an expression is decided per row.
  return /^'[A-Z]+'$/.test(status) ? "false" : `(${status} = 'SUCCEEDED' AND ${covered})`;
}

/** {@link insertMovedSql} into the finished table: how a job that ends lands there. */
export function insertFinishedSql(
  t: Tables,
  src: string,
  set: ColumnValues,
  from: string,
  returning?: string,
): string {
  const status = set.status ?? `${src}.status`;
  return insertMovedSql(t.finished, src, set, from, returning, {
    time_partitioned: timePartitionedSql(t, status),
  });
}

/** `col = expr, ...`: the same values as an UPDATE's SET list (for rows that stay in their table). */
export function assignments(set: ColumnValues): string {
  return Object.entries(set)
    .map(([c, v]) => `${c} = ${v}`)
    .join(", ");
}
