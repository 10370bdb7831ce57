/**
 * The mapping from a scheduler_job_queue row to the job as users see it (src/core/job.ts). Ids are bigints in the
 * database and strings in JavaScript, so they never lose precision.
 */
import type { CustomTypesConfig, QueryConfig } from "pg";
import type { Job, JobErrorRecord, JobStatus } from "../../core/job.js";
import { jobTableColumns, type JobTableColumn } from "./finished-sql.js";
import { timestamptzMs, typesWithTimestamptz } from "../claim/claim-row-types.js";
import { statusSql } from "./lease-sql.js";

// The job's own types live in src/core/job.ts, where pure logic can name them too; the store's readers take
// them from here with the row mapping.
export { jobStatuses, type Job, type JobErrorRecord, type JobStatus } from "../../core/job.js";

/**
 * A `timestamptz` column as a row holds it: a Date from pg's own parser, or the text where the statement
 * keeps it ({@link jobRowTypes}) or a caller's driver returns it; {@link jobFromRow} makes a Date of either.
 */
export type Timestamp = Date | string;

/** The columns of scheduler_job_queue, as pg returns them. */
export interface JobRow {
  id: string;
  type: string;
  queue: string;
  payload: unknown;
  priority: number;
  status: JobStatus;
  scheduled_time: Timestamp;
  attempts: number;
  max_attempts: number;
  timeout_ms: number | null;
  picked_by: string | null;
  picked_at: Timestamp | null;
  unique_key: string | null;
  errors: JobErrorRecord[];
  result: unknown;
  cancel_reason: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  finished_at: Timestamp | null;
  flow_id?: string | null;
  flow_step?: string | null;
  signal_state?: string | null;
  paused_by?: "job" | "queue" | "type" | null;
  progress?: unknown;
}

/**
 * The columns pawl keeps for its own bookkeeping (a flow's wiring, a signal's delivery) and never maps into
 * a {@link Job}: the read lists leave them out, so a read never carries a flow's inputs or a signal's payload.
 */
const bookkeepingColumns: ReadonlySet<JobTableColumn> = new Set([
  "deps_pending",
  "flow_next",
  "flow_inputs",
  "signal_payload",
  "signal_deadline",
  "signaled_at",
  "trace_context",
  // The view scheduler_job_all (what reads name) predates it; a durable job's children are its steps.
  "parent_job_id",
]);

/** The columns a {@link JobRow} has: the job tables' ({@link jobTableColumns}), in their order. */
const rowColumns = jobTableColumns.filter((c) => !bookkeepingColumns.has(c));

/**
 * Every column of a {@link JobRow}, for SELECT and RETURNING lists (qualified by `alias` when given). The
 * status is the one users see: RUNNING for a leased row of the live table (./lease-sql.ts), so a read of
 * either table or of the view shows the same status.
 */
export function jobColumns(alias?: string): string {
  const p = alias ? `${alias}.` : "";
  return rowColumns.map((c) => (c === "status" ? `${statusSql(alias)} AS status` : p + c)).join(", ");
}

/**
 * A `timestamptz` column as a Date. pg gives a Date, or the text under {@link jobRowTypes}; a caller's own
 * client behind a SqlClient adapter may give the text too (drizzle's node-postgres driver turns pg's
 * timestamp parsing off), and the rows its transaction returns (an enqueue's, a flow's members) are read
 * here too.
 */
function asDate(value: Timestamp): Date {
  return typeof value === "string" ? new Date(timestamptzMs(value)) : value;
}

function asDateOrNull(value: Timestamp | null): Date | null {
  return value === null ? null : asDate(value);
}

/**
 * pg's per-query type parsing for statements whose rows only go through {@link jobFromRow}: `timestamptz`
 * stays text, which {@link asDate} turns into the same Date with `timestamptzMs` (one pass over the
 * characters, where pg's parser runs a regular expression per value: a tenth of a bulk enqueue's node CPU
 * went there). Every other type keeps pg's own parser.
 */
export const jobRowTypes: CustomTypesConfig = typesWithTimestamptz((text) => text);

/** `config`, its rows parsed with {@link jobRowTypes}. */
export function withJobRowTypes(config: QueryConfig): QueryConfig {
  config.types = jobRowTypes;
  return config;
}

/** Maps a row to a {@link Job}. */
export function jobFromRow<P = unknown>(row: JobRow): Job<P> {
  // `errors` is always an array in rows pawl writes; a row written by another client or by hand may hold
  // anything, and one odd row must not make every read of it throw.
  const errors = Array.isArray(row.errors) ? row.errors : [];
  const last: unknown = errors.at(-1);
  return {
    id: row.id,
    type: row.type,
    queue: row.queue,
    payload: row.payload as P,
    priority: row.priority,
    status: row.status,
    scheduledTime: asDate(row.scheduled_time),
    attempts: row.attempts,
    maxAttempts: row.max_attempts,
    timeoutMs: row.timeout_ms,
    pickedBy: row.picked_by,
    pickedAt: asDateOrNull(row.picked_at),
    uniqueKey: row.unique_key,
    errors,
    lastError: lastErrorMessage(last),
    result: row.result,
    cancelReason: row.cancel_reason,
    createdAt: asDate(row.created_at),
    updatedAt: asDate(row.updated_at),
    finishedAt: asDateOrNull(row.finished_at),
    flowId: row.flow_id ?? null,
    flowStep: row.flow_step ?? null,
    waitingFor:
      row.status === "WAITING" ? (row.signal_state === "waiting" ? "signal" : "dependencies") : null,
    pausedBy: row.status === "PAUSED" ? (row.paused_by ?? null) : null,
    progress: row.progress ?? null,
  };
}

/** The message of a job's newest error record, when it has a text one. */
function lastErrorMessage(record: unknown): string | null {
  if (typeof record !== "object" || record === null) return null;
  const message = (record as { message?: unknown }).message;
  return typeof message === "string" ? message : null;
}
