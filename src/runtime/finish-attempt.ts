/**
 * Post-processing: turns an attempt's outcome into the store write (batched), the breaker result and the
 * event. Retry or DEAD is decided here from the error's class, the attempt count and the type's retry
 * policy (pure backoff plus jitter).
 */
import { toError, type PawlEventEmitter, type PawlEvents } from "../events.js";
import { retryDelayMs, backoffDelayMs } from "../logic/backoff.js";
import type { TaskOutcome } from "../machines/job-task-machine.js";
import type { ErrorInfo } from "../store/finish-jobs.js";
import type { OutcomeSink } from "./outcome-writer.js";
import { Discard, isTimeoutCancellation, NonRetryableError, Snooze } from "./job-errors.js";
import type { JobContext } from "./job-context.js";
import type { JobRun } from "./job-run.js";
import { WaitForSignal } from "../composition/errors.js";

/** An attempt that hit its hard deadline. */
export class JobTimeoutError extends Error {
  constructor(timeoutMs: number) {
    super(`attempt timed out after ${timeoutMs} ms`);
    this.name = "JobTimeoutError";
  }
}

/**
 * What a handler's rejection means for its attempt: a Snooze, a wait for a signal (WaitForSignal), a
 * timeout (a CancellationRequestedError that counts for this attempt), or an ordinary failure. Shared by
 * the node and pawl/testing.
 */
export function settlementOf(error: unknown, ctx: JobContext): TaskOutcome {
  if (error instanceof Snooze) return { kind: "snooze", delayMs: error.delayMs };
  if (error instanceof WaitForSignal) return { kind: "wait", timeoutMs: error.timeoutMs };
  if (isTimeoutCancellation(error, ctx.attemptToken)) return { kind: "timeout", error };
  return { kind: "failure", error };
}

/** What finishing an attempt needs from the runtime. */
export interface FinishDeps {
  writer: OutcomeSink;
  events: PawlEventEmitter;
  random: () => number;
  now: () => number;
  /** Reports a call's result to the job's service breaker. */
  breakerResult: (run: JobRun, ok: boolean) => void;
  /** Frees a breaker trial whose call ended without a verdict on the service. */
  breakerRelease?: (run: JobRun) => void;
}

function errorInfo(run: JobRun, error: Error, timedOut: boolean): ErrorInfo {
  return {
    attempt: run.claimed.attempt,
    name: timedOut && !(error.name === "CancellationRequestedError") ? "JobTimeoutError" : error.name,
    message: error.message,
    ...(error.stack ? { stack: error.stack } : {}),
  };
}

function retryDelay(run: JobRun, error: Error, random: () => number): number {
  const policy = run.type.retry;
  const attempt = run.claimed.attempt;
  if (typeof policy === "function") {
    const ms = policy(attempt, error);
    return Number.isFinite(ms) && ms >= 0
      ? Math.round(ms)
      : backoffDelayMs(attempt, { baseMs: 1000, factor: 2, maxMs: 3_600_000, jitter: 0 });
  }
  return retryDelayMs(attempt, policy, random());
}

function fail(run: JobRun, raw: unknown, timedOut: boolean, deps: FinishDeps): void {
  const error = toError(raw);
  const { info } = run;
  const refused = (accepted: boolean) => {
    if (!accepted)
      deps.events.emit(run.cancelRequested ? "job:canceled" : "job:lost", lostPayload(run, "failure"));
  };
  let reason: PawlEvents["job:dead"]["reason"] | null = null;
  if (error instanceof Discard) reason = "discarded";
  else if (error instanceof NonRetryableError || run.type.nonRetryable?.(error)) reason = "non-retryable";
  else if (run.claimed.attempt >= run.claimed.maxAttempts) reason = "exhausted";
  if (reason !== null) {
    const why = reason;
    deps.writer.kill({ id: info.id, error: errorInfo(run, error, timedOut) }, (ok) => {
      refused(ok);
      if (ok) deps.events.emit("job:dead", { job: info, error, reason: why, timedOut });
    });
    return;
  }
  const delayMs = retryDelay(run, error, deps.random);
  deps.writer.retry({ id: info.id, delayMs, error: errorInfo(run, error, timedOut) }, (ok) => {
    refused(ok);
    if (ok) deps.events.emit("job:retried", { job: info, error, delayMs, timedOut });
  });
}

function lostPayload(run: JobRun, outcome: string): PawlEvents["job:lost"] {
  return { job: run.info, outcome };
}

function reschedule(run: JobRun, delayMs: number, deps: FinishDeps, done: (ok: boolean) => void): void {
  deps.writer.reschedule({ id: run.info.id, delayMs: Math.max(0, Math.round(delayMs)) }, done);
}

/** Records an attempt's outcome. Called exactly once per attempt, from the job task's `finish` action. */
export function finishAttempt(run: JobRun, outcome: TaskOutcome, deps: FinishDeps): void {
  const { info } = run;
  if (outcome.kind !== "success" && outcome.kind !== "failure" && outcome.kind !== "timeout") {
    deps.breakerRelease?.(run);
  }
  const canceledOr = (event: () => void) => (ok: boolean) => {
    if (ok) event();
    else deps.events.emit(run.cancelRequested ? "job:canceled" : "job:lost", lostPayload(run, outcome.kind));
  };
  switch (outcome.kind) {
    case "success": {
      let resultJson: string | null = null;
      try {
        resultJson = outcome.result === undefined ? null : (JSON.stringify(outcome.result) ?? null);
      } catch {
        // A result that is not JSON must not fail a job that did its work: it is stored as null.
        resultJson = null;
      }
      deps.breakerResult(run, true);
      const durationMs = deps.now() - run.startedAt;
      deps.writer.complete(
        { id: info.id, resultJson },
        canceledOr(() => deps.events.emit("job:succeeded", { job: info, durationMs })),
      );
      return;
    }
    case "failure":
      deps.breakerResult(run, false);
      fail(run, outcome.error, false, deps);
      return;
    case "timeout":
      deps.breakerResult(run, false);
      fail(run, outcome.error, true, deps);
      return;
    case "invalid-payload":
      deps.writer.kill(
        { id: info.id, error: errorInfo(run, toError(run.invalid ?? outcome.error), false) },
        canceledOr(() =>
          deps.events.emit("job:dead", {
            job: info,
            error: toError(run.invalid ?? outcome.error),
            reason: "invalid-payload",
            timedOut: false,
          }),
        ),
      );
      return;
    case "snooze":
      reschedule(
        run,
        outcome.delayMs,
        deps,
        canceledOr(() => deps.events.emit("job:snoozed", { job: info, delayMs: outcome.delayMs })),
      );
      return;
    case "canceled":
      deps.events.emit("job:canceled", { job: info });
      return;
    case "breaker-open": {
      const delayMs = run.breaker && !run.breaker.allowed ? run.breaker.retryInMs : outcome.delayMs;
      reschedule(
        run,
        delayMs,
        deps,
        canceledOr(() => deps.events.emit("job:rescheduled", { job: info, reason: "breaker", delayMs })),
      );
      return;
    }
    case "permit-denied":
      reschedule(
        run,
        outcome.delayMs,
        deps,
        canceledOr(() =>
          deps.events.emit("job:rescheduled", { job: info, reason: "permit", delayMs: outcome.delayMs }),
        ),
      );
      return;
    case "wait": {
      // Parked through the context's services (the node's store); a context without them (pawl/testing)
      // cannot park, so the job fails for good with a clear error instead.
      const park = run.ctx?.services?.park;
      if (!park) {
        fail(
          run,
          new NonRetryableError("ctx.waitForSignal() needs a running node to park the job"),
          false,
          deps,
        );
        return;
      }
      const timeoutMs = outcome.timeoutMs;
      park(
        { id: info.id, timeoutMs },
        canceledOr(() => deps.events.emit("job:waiting", { job: info, timeoutMs })),
      );
      return;
    }
    case "aborted":
      run.ctx?.abort("the node is shutting down");
      reschedule(
        run,
        0,
        deps,
        canceledOr(() => deps.events.emit("job:rescheduled", { job: info, reason: "shutdown", delayMs: 0 })),
      );
      return;
  }
}
