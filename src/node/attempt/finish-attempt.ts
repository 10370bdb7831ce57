/**
 * Post-processing: turns an attempt's outcome into the store write (batched), the breaker result and the
 * event. Retry or DEAD is decided here from the error's class, the attempt count and the type's retry
 * policy (pure backoff plus jitter). Whatever the handler returned or threw, this never throws: results
 * and error records are made storable by `logic/outcome-json.ts`, thrown values are described by
 * `logic/thrown-value.ts`, and a type's own `retry` or `nonRetryable` callback that throws falls back to
 * the default (the slot must be freed and the outcome written whatever user code does).
 */
import type { PawlEventEmitter, PawlEvents } from "../../core/events.js";
import { retryDelayMs, backoffDelayMs } from "../../logic/backoff.js";
import { resultJson, storableDelayMs, type ErrorInfo } from "../../logic/outcome-json.js";
import { describeThrown, thrownAsError, type ThrownDescription } from "../../core/thrown-value.js";
import type { TaskOutcome } from "../../machines/job-task-machine.js";
import type { OutcomeSink } from "../../store/outcomes/outcome-sink.js";
import type { LeaseToken } from "../../store/jobs/lease-sql.js";
import { Discard, isTimeoutCancellation, NonRetryableError, Snooze } from "./job-errors.js";
import type { JobContext } from "./job-context.js";
import type { JobRun } from "./job-run.js";
import { WaitForSignal } from "../../composition/errors.js";
import { DurableWait } from "../../composition/durable/durable-errors.js";
import { MachineParked } from "../../composition/machine-errors.js";

/**
 * What a handler's rejection means for its attempt: a Snooze, a wait for a signal (WaitForSignal), a
 * timeout (a CancellationRequestedError that counts for this attempt), or an ordinary failure. Shared by
 * the node and pawl/testing.
 */
export function settlementOf(error: unknown, ctx: JobContext): TaskOutcome {
  try {
    if (error instanceof Snooze) return { kind: "snooze", delayMs: error.delayMs };
    if (error instanceof WaitForSignal) return { kind: "wait", timeoutMs: error.timeoutMs };
    if (error instanceof DurableWait) {
      const { step, reason, deadline } = error;
      return { kind: "wait", timeoutMs: null, durable: { step, reason, deadline } };
    }
    if (error instanceof MachineParked) return { kind: "parked", timeoutMs: error.timeoutMs };
    if (isTimeoutCancellation(error, ctx.attemptToken)) return { kind: "timeout", error };
  } catch {
    // A hostile value (a Proxy whose traps throw): not one of ours, so an ordinary failure.
  }
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

function errorInfo(run: JobRun, thrown: ThrownDescription, timedOut: boolean): ErrorInfo {
  return {
    attempt: run.claimed.attempt,
    name: timedOut && thrown.name !== "CancellationRequestedError" ? "JobTimeoutError" : thrown.name,
    message: thrown.message,
    ...(thrown.stack ? { stack: thrown.stack } : {}),
    ...(thrown.details ? { details: thrown.details } : {}),
  };
}

const fallbackBackoff = { baseMs: 1000, factor: 2, maxMs: 3_600_000, jitter: 0 };

function retryDelay(run: JobRun, error: Error, random: () => number): number {
  const policy = run.type.retry;
  const attempt = run.claimed.attempt;
  if (typeof policy === "function") {
    let ms = NaN;
    try {
      ms = policy(attempt, error);
    } catch {
      // the type's own policy failed: the default schedule below
    }
    return Number.isFinite(ms) && ms >= 0 ? storableDelayMs(ms) : backoffDelayMs(attempt, fallbackBackoff);
  }
  return retryDelayMs(attempt, policy, random());
}

/** The type's `nonRetryable(error)`; one that throws does not decide (the attempt may be retried). */
function nonRetryable(run: JobRun, error: Error): boolean {
  try {
    return run.type.nonRetryable?.(error) === true;
  } catch {
    return false;
  }
}

function fail(run: JobRun, raw: unknown, timedOut: boolean, deps: FinishDeps): "retried" | "dead" {
  const thrown = describeThrown(raw);
  const error = thrownAsError(raw, thrown);
  const { info } = run;
  const refused = (accepted: boolean) => {
    if (!accepted)
      deps.events.emit(run.cancelRequested ? "job:canceled" : "job:lost", lostPayload(run, "failure"));
  };
  let reason: PawlEvents["job:dead"]["reason"] | null = null;
  if (error instanceof Discard) reason = "discarded";
  else if (error instanceof NonRetryableError || nonRetryable(run, error)) reason = "non-retryable";
  else if (run.claimed.attempt >= run.claimed.maxAttempts) reason = "exhausted";
  if (reason !== null) {
    const why = reason;
    deps.writer.kill({ id: info.id, lease: leaseOf(run), error: errorInfo(run, thrown, timedOut) }, (ok) => {
      refused(ok);
      if (ok) deps.events.emit("job:dead", { job: info, error, reason: why, timedOut });
    });
    return "dead";
  }
  const delayMs = retryDelay(run, error, deps.random);
  deps.writer.retry(
    { id: info.id, lease: leaseOf(run), delayMs, error: errorInfo(run, thrown, timedOut) },
    (ok) => {
      refused(ok);
      if (ok) deps.events.emit("job:retried", { job: info, error, delayMs, timedOut });
    },
  );
  return "retried";
}

/**
 * The lease this attempt runs under, named by every outcome it writes, so an outcome sent twice (its first
 * reply was lost) cannot land on a later lease of the same row (src/store/jobs/lease-sql.ts).
 */
export function leaseOf(run: JobRun): LeaseToken {
  return { attempt: run.claimed.attempt, scheduledAtMs: run.claimed.scheduledAtMs };
}

function lostPayload(run: JobRun, outcome: string): PawlEvents["job:lost"] {
  return { job: run.info, outcome };
}

function reschedule(run: JobRun, delayMs: number, deps: FinishDeps, done: (ok: boolean) => void): void {
  deps.writer.reschedule({ id: run.info.id, lease: leaseOf(run), delayMs: storableDelayMs(delayMs) }, done);
}

/** A hand-back without counting the attempt (the job never reached its handler): one write, one event. */
function handBack(
  run: JobRun,
  deps: FinishDeps,
  canceledOr: (event: () => void) => (ok: boolean) => void,
  reason: PawlEvents["job:rescheduled"]["reason"],
  delayMs: number,
): "rescheduled" {
  reschedule(
    run,
    delayMs,
    deps,
    canceledOr(() => deps.events.emit("job:rescheduled", { job: run.info, reason, delayMs })),
  );
  return "rescheduled";
}

/**
 * Parks an attempt on a durable wait through the context's services: the job keeps its recorded steps
 * and runs again from the top when the wait ends. Without a node's services (pawl/testing's plain runner)
 * the job cannot park, so it fails for good with a clear error.
 */
function parkDurable(
  run: JobRun,
  wait: NonNullable<Extract<TaskOutcome, { kind: "wait" }>["durable"]>,
  deps: FinishDeps,
  canceledOr: (event: () => void) => (ok: boolean) => void,
): AttemptEnd {
  const park = run.ctx?.services?.parkDurable;
  if (!park) {
    return fail(run, new NonRetryableError("durable waits need a running node to park the job"), false, deps);
  }
  const { info } = run;
  // The deadline as a delay from now on this node's clock: the local sweep looks again then.
  const timeoutMs = wait.deadline === null ? null : Math.max(0, wait.deadline.getTime() - deps.now());
  park(
    { id: info.id, deadline: wait.deadline },
    info,
    canceledOr(() =>
      deps.events.emit("job:waiting", {
        job: info,
        timeoutMs,
        durable: { step: wait.step, reason: wait.reason },
      }),
    ),
    leaseOf(run),
  );
  return "waiting";
}

/**
 * What finishing an attempt decided for its job (a constant: nothing is allocated for it). Tracing reads
 * it (src/node/attempt/attempt-spans.ts): whether a failure was retried or was the last is decided here only.
 */
export type AttemptEnd =
  "succeeded" | "retried" | "dead" | "snoozed" | "rescheduled" | "waiting" | "canceled";

/**
 * Records an attempt's outcome and returns what it decided. Called exactly once per attempt, from the job
 * task's `finish` action.
 */
export function finishAttempt(run: JobRun, outcome: TaskOutcome, deps: FinishDeps): AttemptEnd {
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
      deps.breakerResult(run, true);
      const durationMs = deps.now() - run.startedAt;
      // A result that cannot be stored must not fail a job that did its work: it is stored as null.
      deps.writer.complete(
        { id: info.id, lease: leaseOf(run), resultJson: resultJson(outcome.result) },
        canceledOr(() => deps.events.emit("job:succeeded", { job: info, durationMs })),
      );
      return "succeeded";
    }
    case "failure":
      deps.breakerResult(run, false);
      return fail(run, outcome.error, false, deps);
    case "timeout":
      deps.breakerResult(run, false);
      return fail(run, outcome.error, true, deps);
    case "invalid-payload": {
      const raw = run.invalid ?? outcome.error;
      const thrown = describeThrown(raw);
      deps.writer.kill(
        { id: info.id, lease: leaseOf(run), error: errorInfo(run, thrown, false) },
        canceledOr(() =>
          deps.events.emit("job:dead", {
            job: info,
            error: thrownAsError(raw, thrown),
            reason: "invalid-payload",
            timedOut: false,
          }),
        ),
      );
      return "dead";
    }
    case "snooze":
      reschedule(
        run,
        outcome.delayMs,
        deps,
        canceledOr(() => deps.events.emit("job:snoozed", { job: info, delayMs: outcome.delayMs })),
      );
      return "snoozed";
    case "canceled":
      deps.events.emit("job:canceled", { job: info });
      return "canceled";
    case "breaker-open":
      return handBack(
        run,
        deps,
        canceledOr,
        "breaker",
        run.breaker && !run.breaker.allowed ? run.breaker.retryInMs : outcome.delayMs,
      );
    case "permit-denied":
      return handBack(run, deps, canceledOr, "permit", outcome.delayMs);
    case "rate-limited":
      return handBack(run, deps, canceledOr, "rate-limit", outcome.delayMs);
    case "wait": {
      if (outcome.durable) return parkDurable(run, outcome.durable, deps, canceledOr);
      // Parked through the context's services (the node's store); a context without them (pawl/testing)
      // cannot park, so the job fails for good with a clear error instead.
      const park = run.ctx?.services?.park;
      if (!park) {
        return fail(
          run,
          new NonRetryableError("ctx.waitForSignal() needs a running node to park the job"),
          false,
          deps,
        );
      }
      const timeoutMs = outcome.timeoutMs;
      park(
        { id: info.id, lease: leaseOf(run), timeoutMs },
        canceledOr(() => deps.events.emit("job:waiting", { job: info, timeoutMs })),
      );
      return "waiting";
    }
    case "parked":
      // The park was committed with the machine's snapshot (src/node/machines/machine-runner.ts): only the
      // event is left, which also brings this node's signal sweep forward to the wake time.
      deps.events.emit("job:waiting", { job: info, timeoutMs: outcome.timeoutMs });
      return "waiting";
    case "aborted":
      run.ctx?.abort("the node is shutting down");
      reschedule(
        run,
        0,
        deps,
        canceledOr(() => deps.events.emit("job:rescheduled", { job: info, reason: "shutdown", delayMs: 0 })),
      );
      return "rescheduled";
  }
}
