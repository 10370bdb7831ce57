/**
 * The effects the runtime supplies to its machines (`machine.provide(...)`): the job task's steps, the
 * watchdog's step reports, the poller's claim and dispatch, the breaker's change reports. Each is a thin
 * bridge from a machine's named effect to the store, the handler or the event stream; the machines keep
 * every decision.
 */
import { JobContext } from "./job-context.js";
import { JobTimeoutError } from "./finish-attempt.js";
import { invokeHandler } from "./invoke-handler.js";
import type { JobRun } from "./job-run.js";
import type { NodeRuntime } from "./node-runtime.js";
import { watchdogArmDelayMs } from "./watchdog-arming.js";
import { runValidator } from "../enqueue-input.js";
import { toError } from "../events.js";
import { acquirePermit } from "../store/permits.js";
import { breakerMachine } from "../machines/breaker-machine.js";
import { jobTaskMachine, type JobTaskEvent, type TaskOutcome } from "../machines/job-task-machine.js";
import { pollerMachine } from "../machines/poller-machine.js";
import { pollingStrategyLogic } from "../machines/polling-strategy-actor.js";
import { watchdogMachine } from "../machines/watchdog-machine.js";
import { watchdogSchedule, type WatchdogStep } from "../logic/watchdog-schedule.js";
import { contextServices } from "../composition/signals.js";

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

/** Builds the supplied implementations of the node's child actors. */
export function taskImplementations(rt: NodeRuntime) {
  const { deps } = rt;
  const { clock, events, logger, options, store } = deps;
  const runOf = (slot: number): JobRun | undefined => rt.slots.runOf(slot) ?? undefined;
  const send = (run: JobRun, event: JobTaskEvent) => rt.actor(`slot-${run.slot}`)?.send(event);
  // What a handler's ctx.waitForSignal() and ctx.flow() read, and where a "wait" outcome parks the job.
  const services = contextServices(store, deps.nodeId, rt.writer, events);

  const settle = (run: JobRun, outcome: TaskOutcome) => {
    if (run.settled) return; // the watchdog or shutdown ended this attempt already
    run.settled = true;
    send(run, { type: "SETTLED", outcome });
  };

  const load = batcher(
    (ids) => store.loadPayloads(ids),
    (result, ids) => {
      for (const id of ids) {
        const run = rt.runs.get(id);
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
        const run = rt.runs.get(id);
        if (!run) continue;
        // A failed check is not a reason to drop work: run it; the completion write is still guarded.
        const canceled = !(result instanceof Error) && result.has(id);
        if (canceled) run.cancelRequested = true;
        send(run, { type: "CHECKED", canceled });
      }
    },
  );

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
      deps.nodeId,
      services,
    );
    run.ctx = ctx;
    if (run.cancelRequested) ctx.abort("the job was canceled");
    const firstStep = watchdogSchedule(now, timeoutMs, options.watchdog)[0]?.at ?? now + timeoutMs;
    if (firstStep - now <= watchdogArmDelayMs) rt.watchdogs.arm(run);
    else rt.watchdogs.later(run);
    if (events.has("job:started")) {
      events.emit("job:started", {
        job: run.info,
        pickupLatencyMs: Date.now() - run.claimed.scheduledTime.getTime(),
      });
    }
    invokeHandler(run.type.handler, run.payload, ctx, (outcome) => settle(run, outcome));
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
        acquirePermit(store.pool, store.tables, resource, run.claimed.id, deps.nodeId, capacity).then(
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
      runHandler: (_, slot) => {
        const run = runOf(slot);
        if (run) runHandler(run);
      },
      requestCancellation: (_, slot) => runOf(slot)?.ctx?.abort("the job was canceled"),
      admitBreaker: (_, slot) => {
        const run = runOf(slot);
        if (run) rt.breakers.admit(run);
      },
      finish: ({ context }, outcome) => {
        const run = rt.slots.runOf(context.slot);
        if (run) rt.finish(run, outcome);
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
          clock.now() - run.claimedAt < options.cancelRecheckMs
        );
      },
      needsCancelCheck: (_, slot) => {
        const run = runOf(slot);
        return !!run && (run.cancelRequested || clock.now() - run.claimedAt >= options.cancelRecheckMs);
      },
      needsPermit: (_, slot) => runOf(slot)?.type.resource !== undefined,
      breakerOpen: (_, slot) => {
        const run = runOf(slot);
        return !!run && rt.breakers.refuses(run);
      },
      payloadInvalid: (_, slot) => {
        const run = runOf(slot);
        if (!run?.type.validate) return false;
        try {
          runValidator(run.type.type, run.type.validate, run.payload);
          return false;
        } catch (error) {
          run.invalid = toError(error);
          return true;
        }
      },
    },
  });

  const watchdog = watchdogMachine.provide({
    actions: {
      reportStep: (_, { jobId, step }: { jobId: string; step: WatchdogStep }) => {
        const run = rt.runs.get(jobId);
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
      claim: () => rt.claim(),
      // After the poller's step, so the tasks it starts do not run nested inside this action.
      dispatch: () => queueMicrotask(() => rt.pump()),
    },
    guards: {
      hasRoom: () => rt.room() > 0,
    },
  });

  return { jobTask, watchdog, breaker, poller, strategy: pollingStrategyLogic };
}
