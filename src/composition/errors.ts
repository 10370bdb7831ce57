/**
 * The errors of composition: the control error a handler's `ctx.waitForSignal()` throws to park its job,
 * and the typed errors of signals, pauses and flows.
 */
import { PawlError } from "../core/errors.js";

/**
 * Thrown by `ctx.waitForSignal()` when no signal has been delivered for this run: the attempt ends, the
 * job goes WAITING (no slot, no connection, the attempt not counted) until `pawl.signal()` or the timeout
 * makes it runnable again. Let it propagate, as with Snooze: a handler that catches it and returns would
 * complete the job instead.
 */
export class WaitForSignal extends Error {
  constructor(
    /** How long the job may wait (ms); null waits until a signal comes. */
    readonly timeoutMs: number | null,
  ) {
    super(timeoutMs === null ? "waiting for a signal" : `waiting for a signal for up to ${timeoutMs} ms`);
    this.name = "WaitForSignal";
  }
}

/** Raised when a job exists but its status does not allow the operation (pause, resume, signal). */
export class JobStateError extends PawlError {
  constructor(
    /** The job. */
    readonly jobId: string,
    /** Its status when the operation was refused (with why it is paused or waiting, when that matters). */
    readonly status: string,
    message: string,
    code: "INVALID_STATE" | "NOT_WAITING" = "INVALID_STATE",
  ) {
    super(code, message);
    this.name = "JobStateError";
  }
}

/**
 * Raised by `pawl.signal()` when the job is not parked for a signal: it is finished (SUCCEEDED, DEAD,
 * CANCELED), or has not reached its `waitForSignal()` yet (PENDING, RUNNING), or waits for its flow.
 * Code `NOT_WAITING`; `status` says which.
 *
 * @example
 * ```ts
 * try { await pawl.signal(id, { approved: true }); }
 * catch (e) { if (e instanceof JobNotWaitingError && e.status === "RUNNING") retryLater(); }
 * ```
 */
export class JobNotWaitingError extends JobStateError {
  constructor(jobId: string, status: string) {
    super(jobId, status, `job ${jobId} is not waiting for a signal (it is ${status})`, "NOT_WAITING");
    this.name = "JobNotWaitingError";
  }
}

/** Raised when a flow id names no flow. */
export class FlowNotFoundError extends PawlError {
  constructor(id: string) {
    super("FLOW_NOT_FOUND", `no flow with id ${id}`);
    this.name = "FlowNotFoundError";
  }
}
