/**
 * What a handler throws to steer its job: {@link Snooze} (run later, attempt not counted),
 * {@link Discard} (stop now, to the dead letter queue without retries), {@link NonRetryableError} (fail
 * for good), and {@link CancellationRequestedError} (stop at a safe point after a cancellation request).
 */
import { jobContextStorage, type AttemptScope } from "./context-storage.js";

/**
 * Throw to run the job again after `delayMs` without counting the attempt.
 *
 * @example
 * ```ts
 * if (!(await apiIsReady())) throw new Snooze(30_000);
 * ```
 */
export class Snooze extends Error {
  constructor(
    /** How long to wait before the job is due again. */
    readonly delayMs: number,
    message = `snoozed for ${delayMs} ms`,
  ) {
    super(message);
    this.name = "Snooze";
    if (!Number.isFinite(delayMs) || delayMs < 0)
      throw new RangeError(`Snooze delay must be >= 0, got ${delayMs}`);
  }
}

/**
 * Throw to end the job now: it goes to the dead letter queue with this message, without retries.
 *
 * @deprecated Throw {@link NonRetryableError}, the one documented way to end a job without retries (it
 *   keeps a `cause`). Discard still works (its outcome reason is `discarded`).
 */
export class Discard extends Error {
  constructor(message = "discarded by the handler") {
    super(message);
    this.name = "Discard";
  }
}

/** A failure that retrying cannot fix: the job goes straight to the dead letter queue. */
export class NonRetryableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "NonRetryableError";
  }
}

/**
 * Thrown by {@link JobContext.throwIfCancellationRequested}, or by a handler itself, to stop at a safe
 * point. It records, when created, whether the attempt's cancellation had been requested and which
 * attempt it belongs to: only one created after the request, in the same attempt, makes the attempt a
 * timeout; any other is an ordinary failure.
 */
export class CancellationRequestedError extends Error {
  /** Whether the attempt's cancellation had been requested when this error was created. */
  readonly requestedAtCreation: boolean;
  /** The attempt this error was created in (undefined outside a job). */
  readonly attemptToken: object | undefined;

  constructor(
    message = "cancellation requested",
    context: AttemptScope | undefined = jobContextStorage.getStore(),
  ) {
    super(message);
    this.name = "CancellationRequestedError";
    this.requestedAtCreation = context?.isCancellationRequested() ?? false;
    this.attemptToken = context?.attemptToken;
  }

  /** Creates the error for a given context (for code running outside the handler's async call tree). */
  static forContext(message: string, context: AttemptScope): CancellationRequestedError {
    return new CancellationRequestedError(message, context);
  }
}

/**
 * Finds a CancellationRequestedError in `error` or its `cause` chain that counts as a timeout for the
 * attempt identified by `attemptToken`.
 */
export function isTimeoutCancellation(error: unknown, attemptToken: object): boolean {
  let e: unknown = error;
  for (let depth = 0; e !== undefined && e !== null && depth < 10; depth++) {
    if (e instanceof CancellationRequestedError) {
      return e.requestedAtCreation && e.attemptToken === attemptToken;
    }
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}
