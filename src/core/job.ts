/**
 * The job as users see it: its statuses, its error records and its fields. Plain types and data, so every
 * layer (the pure logic too) can name a job's shape without importing the store that reads it.
 */
import type { MachineView } from "./machine-view.js";

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
  /** For a durable machine's job (`registerMachine`): its state, context, timers and events. */
  machine?: MachineView;
  /**
   * A durable job's recorded steps (docs/durable.md), oldest first: read by `getJob` only (absent from
   * lists); an empty array for a job without any.
   */
  steps?: JobStep[];
}

/** One recorded step of a durable job, as `getJob(id).steps` lists it. */
export interface JobStep {
  name: string;
  /** The call that recorded it. */
  kind: "step" | "sleep" | "signal" | "spawn" | "wait";
  /** waiting: the job is parked on it; succeeded: recorded; failed: its last run threw. */
  status: "waiting" | "succeeded" | "failed";
  /** The attempt that wrote it last. */
  attempt: number;
  startedAt: Date;
  finishedAt: Date | null;
  /** A waiting sleep's due time, or a wait's timeout. */
  wakeAt: Date | null;
  /** A spawn's child, or the children a wait awaits. */
  children: string[] | null;
  /** The recorded result's JSON, cut to 200 characters (null while waiting or after a failure). */
  resultPreview: string | null;
  /** The failure's message, when its last run threw. */
  error: string | null;
}
