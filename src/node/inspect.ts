/**
 * The live actor tree of a node as plain JSON: each actor's id, machine, state and the parts of its
 * context worth seeing (never payloads). Built from snapshots on demand, so inspection costs nothing
 * until someone asks.
 */
import type { AnyActorRef } from "xstate";
import type { NodeRuntime } from "./node-runtime.js";

/** One actor in {@link ActorTree}. */
export interface ActorNode {
  id: string;
  machine: string;
  /** The state value (a string, or an object for nested states). */
  state: unknown;
  status: string;
  context: Record<string, unknown>;
  children: ActorNode[];
}

/** The node's tree, plus the coordinator's state. */
export interface ActorTree extends ActorNode {
  nodeId: string;
  buffered: number;
  pendingOutcomes: number;
  coordinator: Record<string, unknown> | null;
}

type Snap = { value?: unknown; status: string; context?: Record<string, unknown> };

function describe(
  id: string,
  machine: string,
  ref: AnyActorRef | undefined,
  pick: (ctx: Record<string, unknown>) => Record<string, unknown>,
): ActorNode {
  const snap = ref?.getSnapshot() as Snap | undefined;
  const ctx = snap?.context ?? {};
  return {
    id,
    machine,
    state: snap?.value ?? null,
    status: snap?.status ?? "missing",
    context: pick(ctx),
    children: [],
  };
}

/** Builds the tree of a running node. */
export function inspectNode(rt: NodeRuntime): ActorTree {
  const { deps } = rt;
  const root = rt.root.getSnapshot();
  const children: ActorNode[] = [];
  const poller = describe("poller", "poller", rt.actor("poller"), (c) => ({
    mode: c.mode,
    delayMs: c.delayMs,
    lastClaimed: c.lastClaimed,
    lastLimit: c.lastLimit,
    polls: c.polls,
    consecutiveErrors: c.consecutiveErrors,
    claimer: rt.claimer.describe(),
  }));
  const strategyRef = rt.actor("strategy");
  const strategySnap = strategyRef?.getSnapshot() as
    { context: Record<string, unknown>; status: string } | undefined;
  const s = strategySnap?.context ?? {};
  poller.children.push({
    id: "strategy",
    machine: "pollingStrategy",
    state: s.mode ?? null,
    status: strategySnap?.status ?? "missing",
    context: {
      mode: s.mode,
      delayMs: s.delayMs,
      window: s.window,
      consecutiveEmpty: s.consecutiveEmpty,
      consecutiveFull: s.consecutiveFull,
      lastWorkAt: s.lastWorkAt,
    },
    children: [],
  });
  children.push(poller);
  for (let slot = 0; slot < deps.concurrency; slot++) {
    const run = rt.slots.runOf(slot);
    const task = describe(`slot-${slot}`, "jobTask", rt.actor(`slot-${slot}`), () => ({
      slot,
      job: run
        ? { id: run.info.id, type: run.info.type, attempt: run.info.attempt, priority: run.info.priority }
        : null,
      runningSince: run && run.startedAt > 0 ? run.startedAt : null,
      // Known from the start of the attempt, before the watchdog is armed (it arms lazily).
      deadline: run?.ctx ? run.ctx.deadlineMs : null,
      timeoutMs: run?.ctx ? run.ctx.deadlineMs - run.startedAt : null,
      cancelRequested: run?.cancelRequested ?? false,
    }));
    const wdRef = rt.actor(`watchdog-${slot}`);
    const armed = (wdRef?.getSnapshot() as { value?: unknown } | undefined)?.value !== "idle";
    const wd = describe(`watchdog-${slot}`, "watchdog", wdRef, (c) =>
      armed
        ? { jobId: c.jobId, phase: c.phase, deadline: c.deadline, steps: c.steps }
        : { jobId: null, phase: null },
    );
    task.children.push(wd);
    children.push(task);
  }
  const breakers = (root.context as { breakers: string[] }).breakers;
  for (const service of breakers) {
    const b = describe(`breaker-${service}`, "breaker", rt.actor(`breaker-${service}`), (c) => {
      const snap = c.breaker as {
        state: string;
        outcomes: { ok: boolean }[];
        openedAt: number | null;
        trialsInFlight: number;
      };
      return {
        service,
        state: snap.state,
        calls: snap.outcomes.length,
        failures: snap.outcomes.filter((o) => !o.ok).length,
        openedAt: snap.openedAt,
        trialsInFlight: snap.trialsInFlight,
      };
    });
    children.push(b);
  }
  return {
    id: "node",
    machine: "node",
    nodeId: deps.nodeId,
    state: root.value,
    status: root.status,
    context: {
      concurrency: deps.concurrency,
      prefetch: deps.prefetch,
      busy: rt.slots.busy,
      free: rt.slots.free,
      // Per-queue lanes (limit, running, buffered) when `queues` is configured; a node without `queues`
      // has one catch-all lane, whose figures are the node's own.
      ...(rt.deps.queues ? { queues: rt.describeLanes() } : {}),
    },
    buffered: rt.buffered,
    pendingOutcomes: rt.pendingOutcomes,
    coordinator: { ...deps.coordinator.status() },
    children,
  };
}
