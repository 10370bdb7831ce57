/**
 * Where a node's attempt outcomes go: the runtime's batching writer, the due-time notes that wrap it, or
 * pawl/testing's direct writer. A store-level contract, so the code that hands a job back (a signal park
 * that could not be written, an attempt) needs only this and not the runtime that owns the writer.
 */
import type { Completion, Death, Reschedule, Retry } from "./finish-jobs.js";
import type { ProgressWrite } from "./progress-sql.js";

/** Where attempt outcomes go; each `done` learns whether the row was still held by the node. */
export interface OutcomeSink {
  /** The attempt succeeded: SUCCEEDED with its result. */
  complete(item: Completion, done: (accepted: boolean) => void): void;
  /** The attempt failed and has attempts left: PENDING again after the delay. */
  retry(item: Retry, done: (accepted: boolean) => void): void;
  /** The attempt failed for good: DEAD. */
  kill(item: Death, done: (accepted: boolean) => void): void;
  /** The job goes back to PENDING after the delay, attempt not counted. */
  reschedule(item: Reschedule, done: (accepted: boolean) => void): void;
  /**
   * A running job's newest progress (`ctx.progress`), throttled and written before the job's outcome.
   * Optional: a sink without it (pawl/testing's direct writer) drops progress.
   */
  progress?(item: ProgressWrite): void;
}
