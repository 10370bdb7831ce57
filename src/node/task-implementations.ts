/**
 * The effects the runtime supplies to its machines (`machine.provide(...)`): the job task's steps, the
 * watchdog's step reports, the poller's claim and dispatch, the breaker's change reports. Each is a thin
 * bridge from a machine's named effect to the store, the handler or the event stream; the machines keep
 * every decision.
 */
import type { DurableServices } from "../composition/durable/durable-services.js";
import { JobContext } from "./attempt/job-context.js";
import { JobTimeoutError } from "../core/errors.js";
import { invokeHandler } from "./attempt/invoke-handler.js";
import type { JobRun } from "./attempt/job-run.js";
import type { AttemptTracer } from "./attempt/attempt-tracer.js";
import type { BreakerGate } from "./breaker-gate.js";
import type { ResolvedRuntimeOptions } from "../input/runtime-config.js";
import { watchdogArmDelayMs, type WatchdogArming } from "./attempt/watchdog-arming.js";
import type { Clock } from "../core/clock.js";
import { runValidator } from "../input/enqueue-input.js";
import { toError, type PawlEventEmitter } from "../core/events.js";
import type { Logger } from "../core/logger.js";
import type { NodeStore } from "../store/job-store.js";
import type { OutcomeSink } from "../store/outcomes/outcome-sink.js";
import { breakerMachine } from "../machines/breaker-machine.js";
import { jobTaskMachine, type JobTaskEvent, type TaskOutcome } from "../machines/job-task-machine.js";
import { pollerMachine } from "../machines/poller-machine.js";
import { pollingStrategyLogic } from "../machines/polling-strategy-actor.js";
import { watchdogMachine } from "../machines/watchdog-machine.js";
import { watchdogSchedule, type WatchdogStep } from "../logic/watchdog-schedule.js";
import { contextServices } from "../composition/signals.js";
import type { RateGate } from "./rate-gate.js";

/** Batches per-job reads (payload loads, cancellation checks) that arrive in the same tick into one query. */
function batcher<T>(
  flush: (ids: string[]) => Promise<T>,
  deliver: (result: T | Error, ids: string[]) => void,
) {
  let pending: string[] = [];
  return (id: string) => {
    pending.push(id);
    if (pending.length > 1) return;
    queueMicrotask(() => {
      const ids = pending;
      pending = [];
      flush(ids).then(
        (r) => deliver(r, ids),
        (e: unknown) => deliver(toError(e), ids),
      );
    });
  };
}

/**
 * What the supplied effects need from the node: a narrow view of it, so no effect reaches the runtime's
 * own state. NodeRuntime builds one in its constructor.
 */
export interface TaskHost {
  readonly nodeId: string;
  readonly clock: Clock;
  readonly events: PawlEventEmitter;
  readonly logger: Logger;
  readonly options: ResolvedRuntimeOptions;
  /** Payload loads, cancellation reads and permits. */
  readonly store: NodeStore;
  /** The durable handlers' services (docs/durable.md); absent: durable calls fail with NOT_DURABLE. */
  readonly durable?: DurableServices | null;
  /** Where a park that could not be written hands its job back. */
  readonly outcomes: OutcomeSink;
  /** Arms the slots' watchdogs. */
  readonly watchdogs: Pick<WatchdogArming, "arm" | "later">;
  /** The node's circuit breakers. */
  readonly breakers: Pick<BreakerGate, "decide" | "admit">;
  /** Traces attempts (src/node/attempt/attempt-tracer.ts); null without tracing. */
  readonly tracer: AttemptTracer | null;
  /** The node's rate-limit admission. */
  readonly rates: Pick<RateGate, "limited" | "keysOf" | "admit">;
  /** The attempt a slot runs. */
  runOf(slot: number): JobRun | undefined;
  /** The attempt of a job in flight on this node. */
  runById(jobId: string): JobRun | undefined;
  /** Sends an event to a slot's job task now. */
  sendToSlot(slot: number, event: JobTaskEvent): void;
  /** The job task's `finish`: records the outcome and frees the slot. */
  finish(run: JobRun, outcome: TaskOutcome): void;
  /** The poller's `claim`. */
  claim(): void;
  /** The poller's `dispatch`: starts buffered jobs in free slots. */
  pump(): void;
  /** Whether there is room to claim into (none while draining). */
  hasRoom(): boolean;
  /** Whether the buffer is at or below the claim-ahead mark (src/logic/buffer-marks.ts). */
  bufferLow(): boolean;
}

/** Builds the supplied implementations of the node's child actors. */
export function taskImplementations(host: TaskHost) {
  const { clock, events, logger, options, store, runOf } = host;
  const send = (run: JobRun, event: JobTaskEvent) => host.sendToSlot(run.slot, event);
  // What a handler's ctx.waitForSignal() and ctx.flow() read, and where a "wait" outcome parks the job.
  const services = contextServices(store, host.nodeId, host.outcomes, events, host.durable ?? undefined);
  const { rates } = host;

  const settle = (run: JobRun, outcome: TaskOutcome) => {
    if (run.settled) return; // the watchdog or shutdown ended this attempt already
    run.settled = true;
    send(run, { type: "SETTLED", outcome });
  };

  const load = batcher(
    (ids) => store.loadPayloads(ids),
    (result, ids) => {
      for (const id of ids) {
        const run = host.runById(id);
        if (!run) continue;
        if (result instanceof Error) send(run, { type: "LOAD_FAILED", error: result });
        else {
          run.payload = result.get(id) ?? null;
          send(run, { type: "LOADED" });
        }
      }
    },
  );

  const check = batcher(
    (ids) => store.canceledAmong(ids),
    (result, ids) => {
      for (const id of ids) {
        const run = host.runById(id);
        if (!run) continue;
        // A failed check is not a reason to drop work: run it; the completion write is still guarded.
        const canceled = !(result instanceof Error) && result.has(id);
        if (canceled) run.cancelRequested = true;
        send(run, { type: "CHECKED", canceled });
      }
    },
  );

  // How long after its start an attempt's first watchdog step comes: it depends only on the timeout (the
  // schedule is relative to the start), so it is computed once per timeout, not once per job.
  const firstSteps = new Map<number, number>();
  const firstStepAfter = (timeoutMs: number): number => {
    let ms = firstSteps.get(timeoutMs);
    if (ms === undefined) {
      ms = watchdogSchedule(0, timeoutMs, options.watchdog)[0]?.at ?? timeoutMs;
      if (firstSteps.size < 64) firstSteps.set(timeoutMs, ms);
    }
    return ms;
  };

  const runHandler = (run: JobRun) => {
    const now = clock.now();
    run.startedAt = now;
    const timeoutMs = run.claimed.timeoutMs ?? run.type.timeoutMs ?? options.defaultTimeoutMs;
    const ctx = new JobContext(
      run.claimed.id,
      run.claimed.type,
      run.claimed.attempt,
      run.claimed.maxAttempts,
      now + timeoutMs,
      logger,
      host.nodeId,
      services,
    );
    run.ctx = ctx;
    if (run.cancelRequested) ctx.abort("the job was canceled");
    if (firstStepAfter(timeoutMs) <= watchdogArmDelayMs) host.watchdogs.arm(run);
    else host.watchdogs.later(run);
    if (events.has("job:started")) {
      events.emit("job:started", {
        job: run.info,
        pickupLatencyMs: Date.now() - run.claimed.scheduledAtMs,
      });
    }
    const settleRun = (outcome: TaskOutcome) => settle(run, outcome);
    const tracer = host.tracer;
    if (tracer !== null && tracer.enabled()) tracer.invoke(run, ctx, settleRun);
    else invokeHandler(run.type.handler, run.payload, ctx, settleRun);
  };

  const jobTask = jobTaskMachine.provide({
    actions: {
      loadPayload: (_, slot) => {
        const run = runOf(slot);
        if (run) load(run.claimed.id);
      },
      checkCancellation: (_, slot) => {
        const run = runOf(slot);
        if (!run) return;
        // The read decides, not the flag that sent the job here: a cancel the store holds sets it again
        // when the read lands, and one told while the read is in flight sets it and keeps it.
        run.cancelRequested = false;
        check(run.claimed.id);
      },
      acquirePermit: (_, slot) => {
        const run = runOf(slot);
        const resource = run?.type.resource;
        if (!run || !resource) return;
        const capacity = options.resources.get(resource);
        const answer = (granted: boolean) =>
          queueMicrotask(() => send(run, { type: "PERMIT", granted, retryInMs: options.permitRetryDelayMs }));
        if (capacity === undefined) return answer(true); // no capacity configured: unlimited
        store.acquirePermit(resource, run.claimed.id, host.nodeId, capacity).then(
          (granted) => {
            run.permitHeld = granted;
            answer(granted);
          },
          (error: unknown) => {
            events.emit("error", { where: "acquire permit", error: toError(error) });
            answer(false);
          },
        );
      },
      admitRate: (_, slot) => {
        const run = runOf(slot);
        if (run) {
          rates.admit(run, (admitted, retryInMs) => send(run, { type: "ADMISSION", admitted, retryInMs }));
        }
      },
      runHandler: (_, slot) => {
        const run = runOf(slot);
        if (run) runHandler(run);
      },
      requestCancellation: (_, slot) => runOf(slot)?.ctx?.abort("the job was canceled"),
      // The validator is user code: it runs as an action, and `payloadInvalid` reads its verdict.
      // The rate-limit keys come from the payload too: a key function that fails costs this job alone.
      validatePayload: (_, slot) => {
        const run = runOf(slot);
        if (!run) return;
        if (run.type.validate) {
          try {
            runValidator(run.type.type, run.type.validate, run.payload);
          } catch (error) {
            run.invalid = toError(error);
            return;
          }
        }
        if (!rates.limited(run.type, run.claimed.queue)) return;
        const keys = rates.keysOf(run.type, run.claimed.queue, run.payload);
        if (keys instanceof Error) run.invalid = keys;
        else run.rateKeys = keys;
      },
      // May spawn the service's breaker on first use; `breakerOpen` reads the decision it keeps.
      decideBreaker: (_, slot) => {
        const run = runOf(slot);
        if (run) host.breakers.decide(run);
      },
      admitBreaker: (_, slot) => {
        const run = runOf(slot);
        if (run) host.breakers.admit(run);
      },
      finish: (context, outcome) => {
        const run = runOf(context.slot);
        if (run) host.finish(run, outcome);
      },
    },
    guards: {
      readyToRun: (_, slot) => {
        const run = runOf(slot);
        return (
          !!run &&
          run.task.hasPayload &&
          !run.cancelRequested &&
          run.type.service === undefined &&
          run.type.resource === undefined &&
          run.type.validate === undefined &&
          !rates.limited(run.type, run.claimed.queue) &&
          clock.now() - run.claimedAt < options.cancelRecheckMs
        );
      },
      needsCancelCheck: (_, slot) => {
        const run = runOf(slot);
        return !!run && (run.cancelRequested || clock.now() - run.claimedAt >= options.cancelRecheckMs);
      },
      needsPermit: (_, slot) => runOf(slot)?.type.resource !== undefined,
      needsRateLimit: (_, slot) => (runOf(slot)?.rateKeys?.length ?? 0) > 0,
      breakerOpen: (_, slot) => runOf(slot)?.breaker?.allowed === false,
      payloadInvalid: (_, slot) => (runOf(slot)?.invalid ?? null) !== null,
    },
  });

  const watchdog = watchdogMachine.provide({
    actions: {
      reportStep: (_, { jobId, step }: { jobId: string; step: WatchdogStep }) => {
        const run = host.runById(jobId);
        if (!run || run.settled || !run.ctx) return;
        const payload = { job: run.info, deadline: run.ctx.deadlineMs };
        if (step.kind === "soft-warning") {
          run.ctx.logger.warn("job is close to its timeout", {
            deadline: new Date(run.ctx.deadlineMs).toISOString(),
          });
          events.emit("watchdog:soft-warning", payload);
        } else if (step.kind === "cancel-request") {
          run.ctx.requestCancellation();
          events.emit("watchdog:cancel-request", payload);
        } else {
          run.ctx.abort("the attempt reached its deadline");
          events.emit("watchdog:hard-timeout", payload);
          run.settled = true;
          const timeoutMs = run.ctx.deadlineMs - run.startedAt;
          // Sent after this watchdog step completes, so the task's DISARM finds the watchdog settled.
          queueMicrotask(() => send(run, { type: "TIMED_OUT", error: new JobTimeoutError(timeoutMs) }));
        }
      },
    },
  });

  const lastBreakerState = new Map<string, string>();
  const breaker = breakerMachine.provide({
    actions: {
      reportChange: (_, { service, to }: { service: string; to: string }) => {
        const from = lastBreakerState.get(service) ?? "CLOSED";
        lastBreakerState.set(service, to);
        if (from !== to) {
          logger.info("circuit breaker changed", { service, from, to });
          events.emit("breaker:change", { service, from, to });
        }
      },
    },
  });

  const poller = pollerMachine.provide({
    actions: {
      claim: () => host.claim(),
      // After the poller's step, so the tasks it starts do not run nested inside this action.
      dispatch: () => queueMicrotask(() => host.pump()),
    },
    guards: {
      hasRoom: () => host.hasRoom(),
      bufferLow: () => host.bufferLow(),
    },
  });

  return { jobTask, watchdog, breaker, poller, strategy: pollingStrategyLogic };
}
