/**
 * The errors of durable handlers: the control error a durable wait throws to park its job, and the typed
 * errors a handler's code sees (docs/durable.md#errors).
 */
import { PawlError } from "../../core/errors.js";

/**
 * Thrown by `ctx.sleep()`, a named `ctx.waitForSignal()` and `ctx.waitFor()` when the wait is not over:
 * the attempt ends and the job parks (WAITING, no slot, no connection, the attempt not counted) until the
 * wait ends, then runs again from the top, past its recorded steps. Let it propagate, as with Snooze: a
 * handler that catches it and returns would complete the job instead.
 */
export class DurableWait extends Error {
  constructor(
    /** The step the job waits on. */
    readonly step: string,
    /** What it waits for. */
    readonly reason: "sleep" | "signal" | "children",
    /** When the wait ends on its own (a sleep's due time, a timeout); null: never. */
    readonly deadline: Date | null,
  ) {
    super(
      `waiting on step ${JSON.stringify(step)} (${reason})` +
        (deadline ? ` until ${deadline.toISOString()}` : ""),
    );
    this.name = "DurableWait";
  }
}

/** The codes of {@link DurableStepError}. */
export type DurableStepErrorCode =
  /** Two durable calls of one run used one name. */
  | "DUPLICATE_STEP"
  /** The name is recorded for another kind of call (a step renamed onto a sleep, say). */
  | "STEP_KIND_MISMATCH"
  /** The result does not round-trip through JSON (a Date, a BigInt, a class instance, undefined in an array). */
  | "STEP_RESULT_INVALID"
  /** The result's JSON is over the size limit. */
  | "STEP_RESULT_TOO_LARGE"
  /** A bad step name, sleep time, timeout, spawn option or awaited child. */
  | "INVALID_STEP"
  /** A durable call outside a node that can record it. */
  | "NOT_DURABLE";

/**
 * A durable call used wrongly: nothing was recorded. It fails the attempt like any error (and fails every
 * retry the same way, until the code is fixed).
 *
 * @example
 * ```ts
 * try { await ctx.step("load", () => new Date()); }
 * catch (e) { if (e instanceof DurableStepError && e.code === "STEP_RESULT_INVALID") ... }
 * ```
 */
export class DurableStepError extends PawlError {
  declare readonly code: DurableStepErrorCode;

  constructor(
    code: DurableStepErrorCode,
    /** The step's name. */
    readonly step: string,
    message: string,
  ) {
    super(code, message);
    this.name = "DurableStepError";
  }
}

/**
 * Thrown by `ctx.waitFor()` (on every run that reaches it) when an awaited child ended DEAD or CANCELED,
 * or no longer exists: the first such child's id, status and last error. A handler may catch it and go
 * on; uncaught, it fails the attempt.
 */
export class ChildJobFailedError extends PawlError {
  constructor(
    /** The child's id. */
    readonly childId: string,
    /** DEAD, CANCELED, or MISSING (no row: pruned or deleted). */
    readonly status: string,
    /** The child's last error message, when it had one. */
    readonly childError: string | null,
    /** Every awaited child's outcome, in the order awaited. */
    readonly outcomes: readonly ChildOutcome[],
  ) {
    super("CHILD_FAILED", `child job ${childId} ended ${status}` + (childError ? `: ${childError}` : ""));
    this.name = "ChildJobFailedError";
  }
}

/**
 * Thrown by `ctx.waitFor()` when its `timeoutMs` passed before every child was final (recorded: every
 * later run throws it again at the same place). `pending` are the children that were still live.
 */
export class ChildWaitTimeoutError extends PawlError {
  constructor(
    readonly step: string,
    readonly pending: readonly string[],
  ) {
    super("WAIT_TIMEOUT", `waitFor ${JSON.stringify(step)} timed out with ${pending.length} children live`);
    this.name = "ChildWaitTimeoutError";
  }
}

/** One awaited child's outcome, as `ctx.waitFor()` returns and records it. */
export interface ChildOutcome<R = unknown> {
  id: string;
  status: "SUCCEEDED" | "DEAD" | "CANCELED" | "MISSING";
  /** Its result (SUCCEEDED), else null. */
  result: R | null;
  /** Its last error's message (DEAD), else null. */
  error: string | null;
}
