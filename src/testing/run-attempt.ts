/**
 * Runs one claimed job the way a node's job task does, without the actor tree: the payload is validated,
 * the handler runs with a real {@link JobContext} bound (so `JobContext.current()` works), the watchdog's
 * steps (soft warning, cancellation request, hard timeout) fire on the instance's clock, and the outcome
 * goes through the runtime's own `finishAttempt()`: retry or DEAD, backoff, error records and events are
 * decided by the same code as in production. What is left out is what only matters between many jobs on a
 * node: circuit breakers, resource permits and rate limits are not consulted.
 */
import { PawlEventEmitter, toError, type PawlEventName, type PawlEvents } from "../core/events.js";
import { durableServices } from "../composition/durable/durable-services.js";
import type { JobContextServices } from "../composition/signals.js";
import { runValidator } from "../input/enqueue-input.js";
import { watchdogSchedule } from "../logic/watchdog-schedule.js";
import type { TaskOutcome } from "../machines/job-task-machine.js";
import { finishAttempt } from "../node/attempt/finish-attempt.js";
import { JobTimeoutError } from "../core/errors.js";
import { JobContext } from "../node/attempt/job-context.js";
import { invokeHandler } from "../node/attempt/invoke-handler.js";
import { jobInfo, type JobRun } from "../node/attempt/job-run.js";
import type { JobType } from "../node/registry.js";
import type { ClaimedJob } from "../store/claim/claim-jobs.js";
import { DirectWriter } from "./direct-writer.js";
import { runtimeOptionsOf, type AnyPawl } from "./internals.js";
import type { PawlTasks, TaskName, TaskResult } from "../input/task-map.js";

/**
 * How an attempt run by inline() or drain() ended, as recorded in the store:
 * - `succeeded`: the handler returned; the job is SUCCEEDED with `result`.
 * - `retried`: the handler failed (or timed out) and attempts remain; the job is PENDING after `delayMs`.
 * - `dead`: the job is DEAD (`reason`: attempts exhausted, non-retryable, discarded, invalid payload).
 * - `snoozed`: the handler threw a Snooze; the job is PENDING after `delayMs`, the attempt not counted.
 * - `canceled`: the job was canceled while it ran; its outcome was discarded.
 * - `lost`: the store refused the outcome (the row was no longer held by this attempt).
 */
export type AttemptStatus = "succeeded" | "retried" | "dead" | "snoozed" | "canceled" | "lost";

/** One attempt run by inline() or drain(). */
export interface AttemptResult {
  /** The job id. */
  jobId: string;
  /** The job type. */
  type: string;
  /** The attempt's number, from 1. */
  attempt: number;
  /** How it ended. */
  status: AttemptStatus;
  /** The handler's return value (`succeeded` only). */
  result?: unknown;
  /** What the handler threw (`retried`, `dead`). */
  error?: Error;
  /** When the job is due again (`retried`, `snoozed`), in ms from the write. */
  delayMs?: number;
  /** Why the job went DEAD (`dead` only). */
  reason?: PawlEvents["job:dead"]["reason"];
  /** Whether the attempt hit its deadline. */
  timedOut: boolean;
}

/**
 * An {@link AttemptResult} as inline() and drain() report it for a `Pawl<Tasks>`: with a task map, a union
 * over its job types, each with its `result` type, so narrowing on `type` types `result`. Without a map,
 * an AttemptResult.
 *
 * @example
 * ```ts
 * const [r] = (await drain(pawl)).jobs;
 * if (r?.type === "email.send" && r.status === "succeeded") r.result?.messageId;
 * ```
 */
export type TypedAttemptResult<Tasks = PawlTasks, K extends string = TaskName<Tasks>> = K extends unknown
  ? Omit<AttemptResult, "type" | "result"> & { type: K; result?: TaskResult<Tasks, K> }
  : never;

const outcomeEvents = new Set<PawlEventName>([
  "job:succeeded",
  "job:retried",
  "job:dead",
  "job:snoozed",
  "job:canceled",
  "job:lost",
  "job:rescheduled",
]);

/** Forwards every event to the instance's emitter and remembers the outcome event of one job. */
class RecordingEmitter extends PawlEventEmitter {
  outcome: { name: PawlEventName; payload: unknown } | null = null;

  constructor(
    private readonly target: PawlEventEmitter,
    private readonly jobId: string,
  ) {
    super();
  }

  override emit<E extends PawlEventName>(name: E, payload: PawlEvents[E]): void {
    if (outcomeEvents.has(name) && (payload as { job?: { id?: string } }).job?.id === this.jobId) {
      this.outcome = { name, payload };
    }
    this.target.emit(name, payload);
  }
}

/**
 * Runs the handler of a claimed job and records its outcome through the store, under `nodeId` (the node
 * that claimed it). Resolves once the outcome is written; rejects only when the write fails.
 */
export async function runAttempt(
  pawl: AnyPawl,
  claimed: ClaimedJob,
  type: JobType,
  nodeId: string,
  /** A clock ahead of the database's for durable handlers (drain's `now`). */
  durableNow?: Date,
): Promise<AttemptResult> {
  const { clock, logger } = pawl.config;
  const options = runtimeOptionsOf(pawl);
  const events = new RecordingEmitter(pawl.events, claimed.id);
  const writer = new DirectWriter(pawl.store, nodeId);
  const now = clock.now();
  const timeoutMs = claimed.timeoutMs ?? type.timeoutMs ?? options.defaultTimeoutMs;
  const info = jobInfo(claimed);
  const durable = durableContext(pawl, nodeId, durableNow);
  const ctx = new JobContext(
    claimed.id,
    claimed.type,
    claimed.attempt,
    claimed.maxAttempts,
    now + timeoutMs,
    logger.child({ jobId: claimed.id, jobType: claimed.type, nodeId }),
    nodeId,
    durable.services,
  );
  // Only what finishAttempt and this runner read; the node-only fields of a JobRun (its slot, task and
  // watchdog arming) have no meaning outside a node.
  const attempt: Pick<
    JobRun,
    | "claimed"
    | "type"
    | "info"
    | "payload"
    | "ctx"
    | "startedAt"
    | "settled"
    | "permitHeld"
    | "breaker"
    | "invalid"
    | "cancelRequested"
  > = {
    claimed,
    type,
    info,
    payload: claimed.payload ?? null,
    ctx,
    startedAt: now,
    settled: false,
    permitHeld: false,
    breaker: null,
    invalid: null,
    cancelRequested: false,
  };
  const run = attempt as JobRun;

  let outcome: TaskOutcome;
  try {
    runValidator(type.type, type.validate, run.payload);
  } catch (error) {
    run.invalid = toError(error); // refused before running: DEAD with reason invalid-payload
  }
  if (run.invalid) {
    outcome = { kind: "invalid-payload", error: run.invalid };
  } else {
    events.emit("job:started", { job: info, pickupLatencyMs: Date.now() - claimed.scheduledAtMs });
    outcome = await runHandler(run, ctx, timeoutMs, options.watchdog, pawl, events);
  }
  run.settled = true;
  // A node learns of a cancel while the attempt runs; here one look before the write tells finishAttempt,
  // so a refused write is reported as canceled rather than lost.
  if ((await pawl.store.canceledAmong([claimed.id])).has(claimed.id)) run.cancelRequested = true;
  finishAttempt(run, outcome, {
    writer,
    events,
    random: Math.random,
    now: () => clock.now(),
    breakerResult: () => {},
  });
  await writer.settled();
  await durable.settled();
  return toResult(run, outcome, events.outcome);
}

function runHandler(
  run: JobRun,
  ctx: JobContext,
  timeoutMs: number,
  watchdog: Parameters<typeof watchdogSchedule>[2],
  pawl: AnyPawl,
  events: PawlEventEmitter,
): Promise<TaskOutcome> {
  const { clock } = pawl.config;
  return new Promise<TaskOutcome>((resolve) => {
    const timers: unknown[] = [];
    let settled = false;
    const settle = (outcome: TaskOutcome) => {
      if (settled) return; // the watchdog ended the attempt already: a late settlement is ignored
      settled = true;
      for (const t of timers) clock.clearTimeout(t);
      resolve(outcome);
    };
    for (const step of watchdogSchedule(run.startedAt, timeoutMs, watchdog)) {
      const timer = clock.setTimeout(() => {
        if (settled) return;
        const payload = { job: run.info, deadline: ctx.deadlineMs };
        if (step.kind === "soft-warning") {
          ctx.logger.warn("job is close to its timeout", { deadline: ctx.deadline.toISOString() });
          events.emit("watchdog:soft-warning", payload);
        } else if (step.kind === "cancel-request") {
          ctx.requestCancellation();
          events.emit("watchdog:cancel-request", payload);
        } else {
          ctx.abort("the attempt reached its deadline");
          events.emit("watchdog:hard-timeout", payload);
          settle({ kind: "timeout", error: new JobTimeoutError(timeoutMs) });
        }
      }, step.at - clock.now());
      timers.push(timer);
    }
    invokeHandler(run.type.handler, run.payload, ctx, settle);
  });
}

function toResult(
  run: JobRun,
  outcome: TaskOutcome,
  event: { name: PawlEventName; payload: unknown } | null,
): AttemptResult {
  const base = {
    jobId: run.claimed.id,
    type: run.claimed.type,
    attempt: run.claimed.attempt,
    timedOut: outcome.kind === "timeout",
  };
  switch (event?.name) {
    case "job:succeeded":
      return {
        ...base,
        status: "succeeded",
        result: outcome.kind === "success" ? outcome.result : undefined,
      };
    case "job:retried": {
      const e = event.payload as PawlEvents["job:retried"];
      return { ...base, status: "retried", error: e.error, delayMs: e.delayMs };
    }
    case "job:dead": {
      const e = event.payload as PawlEvents["job:dead"];
      return { ...base, status: "dead", error: e.error, reason: e.reason };
    }
    case "job:snoozed": {
      const e = event.payload as PawlEvents["job:snoozed"];
      return { ...base, status: "snoozed", delayMs: e.delayMs };
    }
    case "job:canceled":
      return { ...base, status: "canceled" };
    default:
      return { ...base, status: "lost" };
  }
}

/**
 * The context services of a durable handler under pawl/testing: the real durable store and spawn, and a
 * park that writes through the store like a node's (the job was claimed under `nodeId`).
 */
function durableContext(
  pawl: AnyPawl,
  nodeId: string,
  testNow: Date | undefined,
): { services: JobContextServices; settled: () => Promise<unknown> } {
  const durable = durableServices(
    { store: pawl.store, config: pawl.config, hooks: undefined, events: pawl.events },
    undefined,
    testNow,
  );
  // The park is written before the attempt's result is returned, like the outcome (DirectWriter).
  const parks: Promise<void>[] = [];
  // No `read` or `park`: the unnamed waitForSignal() still fails here, as documented (guide/testing.md).
  const services: JobContextServices = {
    durable,
    parkDurable: (park, job, done) => {
      parks.push(durable.park(nodeId, park, job).then(done, () => done(false)));
    },
  };
  return { services, settled: () => Promise.all(parks) };
}
