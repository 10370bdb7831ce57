/**
 * The job as users see it, and the mapping from a scheduler_job_queue row. Ids are bigints in the
 * database and strings in JavaScript, so they never lose precision.
 */
import { jobTableColumns, type JobTableColumn } from "./finished-sql.js";

/**
 * The statuses a job can be in. A retry is PENDING again with a later scheduled time. WAITING (a flow step
 * whose dependencies have not finished, a flow's completion job, or a job parked by ctx.waitForSignal) and
 * PAUSED (pawl.pauseJob, or a paused queue or job type) are never claimed (docs/composition.md).
 */
export type JobStatus = "PENDING" | "RUNNING" | "SUCCEEDED" | "CANCELED" | "DEAD" | "WAITING" | "PAUSED";

/** All statuses, in lifecycle order. */
export const jobStatuses: readonly JobStatus[] = [
  "WAITING",
  "PAUSED",
  "PENDING",
  "RUNNING",
  "SUCCEEDED",
  "CANCELED",
  "DEAD",
];

/** One failed attempt, as kept in the job's `errors` (the newest 20 are kept). */
export interface JobErrorRecord {
  /** The attempt that failed (1-based). */
  attempt: number;
  /** When it was recorded (database time, ISO 8601). */
  at: string;
  /** The error's name (its class), or the kind of failure: timeout, node-lost, non-error. */
  name: string;
  /** The error's message. */
  message: string;
  /** The stack, when there was one (trimmed). */
  stack?: string;
  /** What else the thrown value carried (own fields, an Error's `cause`), bounded; cycles as "[Circular]". */
  details?: unknown;
}

/** A job. */
export interface Job<P = unknown> {
  /** The job id (a bigint, as a decimal string). */
  id: string;
  type: string;
  queue: string;
  payload: P;
  /** Raw priority, 0 to 100; higher runs first. */
  priority: number;
  status: JobStatus;
  /** When the job becomes (or became) due. */
  scheduledTime: Date;
  /** Attempts started so far, including a running one. */
  attempts: number;
  maxAttempts: number;
  /** The per-job timeout, or null for the type's (or the runtime's) default. */
  timeoutMs: number | null;
  /** The node that holds (or last held) the job. */
  pickedBy: string | null;
  pickedAt: Date | null;
  uniqueKey: string | null;
  errors: JobErrorRecord[];
  /** The newest error's message, or null. */
  lastError: string | null;
  /** The handler's return value, for SUCCEEDED jobs. */
  result: unknown;
  /** Why the job was canceled, when it was. */
  cancelReason: string | null;
  createdAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
  /** The flow (chain, batch or workflow) the job belongs to, as a member or as its completion job. */
  flowId?: string | null;
  /** The job's name in its flow (null for a flow's completion job and for ordinary jobs). */
  flowStep?: string | null;
  /** For a WAITING job: whether it waits for a signal or for its flow dependencies. */
  waitingFor?: "signal" | "dependencies" | null;
  /** For a PAUSED job: what holds it (pawl.pauseJob, or a queue or job type pause). */
  pausedBy?: "job" | "queue" | "type" | null;
  /**
   * The newest value the handler reported with `ctx.progress(value)` (a number 0-100 or small JSON), kept
   * after the job ends; null when it never reported any (migration 0006).
   */
  progress?: unknown;
}

/** The columns of scheduler_job_queue, as pg returns them. */
export interface JobRow {
  id: string;
  type: string;
  queue: string;
  payload: unknown;
  priority: number;
  status: JobStatus;
  scheduled_time: Date;
  attempts: number;
  max_attempts: number;
  timeout_ms: number | null;
  picked_by: string | null;
  picked_at: Date | null;
  unique_key: string | null;
  errors: JobErrorRecord[];
  result: unknown;
  cancel_reason: string | null;
  created_at: Date;
  updated_at: Date;
  finished_at: Date | null;
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
]);

/** The columns a {@link JobRow} has: the job tables' ({@link jobTableColumns}), in their order. */
const rowColumns = jobTableColumns.filter((c) => !bookkeepingColumns.has(c));

/** Every column of a {@link JobRow}, for SELECT and RETURNING lists (qualified by `alias` when given). */
export function jobColumns(alias?: string): string {
  const p = alias ? `${alias}.` : "";
  return rowColumns.map((c) => p + c).join(", ");
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
    scheduledTime: row.scheduled_time,
    attempts: row.attempts,
    maxAttempts: row.max_attempts,
    timeoutMs: row.timeout_ms,
    pickedBy: row.picked_by,
    pickedAt: row.picked_at,
    uniqueKey: row.unique_key,
    errors,
    lastError: lastErrorMessage(last),
    result: row.result,
    cancelReason: row.cancel_reason,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    finishedAt: row.finished_at,
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
