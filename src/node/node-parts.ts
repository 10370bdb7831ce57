/**
 * What a node runtime is built from ({@link NodeRuntimeDeps}) and the parts it builds from that, wired to
 * one another ({@link buildNodeParts}): the outcome writer and its due-noting sink, the slots, the breaker
 * and rate gates, the watchdog arming, the cancel check, the lanes with their claimers and the claim
 * cycle. Its own file because the wiring is one concept done once, at construction, while the runtime
 * (./node-runtime.ts) runs the node with the parts; what a part needs from the runtime itself (its actors,
 * the attempts in flight, whether it drains) comes in as {@link NodeLinks}, called only later.
 */
import type { DurableServices } from "../composition/durable/durable-services.js";
import type { AnyActorRef } from "xstate";
import type { Coordinator } from "../../coordinators/spi.js";
import type { Clock } from "../core/clock.js";
import { toError, type PawlEventEmitter } from "../core/events.js";
import type { Logger } from "../core/logger.js";
import type { BreakerInput } from "../machines/breaker-machine.js";
import type { NodeStore } from "../store/job-store.js";
import type { OutcomeSink } from "../store/outcomes/outcome-sink.js";
import { ClassicClaimer, type Claimer, type ClaimerOptions } from "../store/claim/claimer.js";
import { KeyedClaimer } from "../store/claim/keyed-claimer.js";
import { ClaimBudgets } from "../store/claim/claim-budgets.js";
import type { AttemptTracer } from "./attempt/attempt-tracer.js";
import { BreakerGate } from "./breaker-gate.js";
import { CancelCheck } from "./cancel-check.js";
import { ClaimCycle } from "./claim/claim-cycle.js";
import { DueNotes } from "./claim/due-notes.js";
import { wakeOnLanded } from "./claim/limit-wake.js";
import type { FinishDeps } from "./attempt/finish-attempt.js";
import type { JobRun } from "./attempt/job-run.js";
import { NodeLanes } from "./claim/lanes.js";
import { OutcomeWriter } from "./outcome-writer.js";
import { RateGate } from "./rate-gate.js";
import type { JobType } from "./registry.js";
import type { ResolvedRuntimeOptions } from "../input/runtime-config.js";
import { SlotPool } from "./claim/slot-pool.js";
import { WatchdogArming } from "./attempt/watchdog-arming.js";
import type { ClaimedJob } from "../store/claim/claim-jobs.js";
import type { MachineInspection } from "./machines/machine-inspection.js";

/** What the runtime is built from. */
export interface NodeRuntimeDeps {
  nodeId: string;
  concurrency: number;
  prefetch: number;
  claimMode: "full" | "lazy";
  boostIntervalMs: number;
  completionFlushMs: number;
  options: ResolvedRuntimeOptions;
  store: NodeStore;
  types: ReadonlyMap<string, JobType>;
  events: PawlEventEmitter;
  logger: Logger;
  clock: Clock;
  coordinator: Coordinator;
  /** Builds the node's claimer (the catch-all lane's: classic or claim cursors). */
  createClaimer: (options: ClaimerOptions) => Claimer;
  /** Traces attempts (src/tracing); null or absent: no tracing. */
  tracer?: AttemptTracer | null;
  /**
   * Per-queue limits (`queues` of createPawl): one lane per queue, each with its own claim and slot budget
   * (src/node/claim/lanes.ts). Absent: one catch-all lane for every queue.
   */
  queues?: ReadonlyMap<string, number> | null;
  /** The durable handlers' services (docs/durable.md); absent: durable calls fail with NOT_DURABLE. */
  durable?: DurableServices | null;
  /** The inspection of the durable machines this node runs (the inspector and the Stately bridge read it). */
  machines?: MachineInspection | null;
}

/** What the parts call back into the runtime for; none of it is called while the parts are built. */
export interface NodeLinks {
  /** The attempts in flight by job id (the runtime's map, read by the watchdogs and the cancel check). */
  runs: ReadonlyMap<string, JobRun>;
  /** The actor with a system id. */
  actor(systemId: string): AnyActorRef | undefined;
  /** Sends to an actor after the current step (NodeRuntime.sendLater). */
  sendLater(systemId: string, event: { type: string } & Record<string, unknown>): void;
  /** Spawns a breaker actor under the node actor. */
  spawnBreaker(input: BreakerInput): void;
  /** Whether the node drains. */
  draining(): boolean;
  /** Hands claimed jobs back to PENDING, attempt not counted. */
  handBack(jobs: readonly ClaimedJob[]): void;
  /** Starts buffered jobs in free slots (NodeRuntime.pump). */
  pump(): void;
}

/** The node's parts, built once by {@link buildNodeParts}. */
export interface NodeParts {
  writer: OutcomeWriter;
  slots: SlotPool;
  breakers: BreakerGate;
  rates: RateGate;
  dues: DueNotes;
  /** The outcome sink attempts finish through: the writer, noting the due time of every delayed write. */
  outcomes: OutcomeSink;
  /** What finishing an attempt needs (finish-attempt.ts). */
  finishDeps: FinishDeps;
  watchdogs: WatchdogArming;
  cancelCheck: CancelCheck;
  lanes: NodeLanes;
  claims: ClaimCycle;
}

/** Builds the node's parts from its deps, in dependency order. */
export function buildNodeParts(deps: NodeRuntimeDeps, links: NodeLinks): NodeParts {
  const { clock, logger, events } = deps;
  const writer = new OutcomeWriter(deps.store, deps.nodeId, clock, logger, deps.completionFlushMs, (error) =>
    events.emit("error", { where: "outcome-writer", error: toError(error) }),
  );
  const slots = new SlotPool(deps.concurrency);
  const breakers = new BreakerGate({
    actor: (id) => links.actor(id),
    spawnLater: (input) => queueMicrotask(() => links.spawnBreaker(input)),
    sendLater: (id, event) => links.sendLater(id, event),
    configFor: (service) => deps.options.breakerFor(service),
    clock,
  });
  const rates = new RateGate({
    store: deps.store,
    clock,
    events,
    queueLimits: deps.options.queueRateLimits,
  });
  const dues = new DueNotes({ clock, poller: () => links.actor("poller"), active: () => !links.draining() });
  // Declared before the lanes exist; read only once outcomes land, after start.
  let heldBack = (): boolean => false;
  const outcomes = wakeOnLanded(
    dues.noting(writer, (id) => links.runs.get(id)?.claimed.priority),
    () => heldBack(),
    () => links.actor("poller")?.send({ type: "WAKE" }),
  );
  const finishDeps: FinishDeps = {
    writer: outcomes,
    events,
    random: Math.random,
    now: () => clock.now(),
    breakerResult: (r, ok) => breakers.result(r, ok),
    breakerRelease: (r) => breakers.release(r),
  };
  const watchdogs = new WatchdogArming({
    runs: links.runs,
    clock,
    sendLater: (id, event) => links.sendLater(id, event),
  });
  const cancelCheck = new CancelCheck({
    runs: links.runs,
    buffered: (id) => lanes.has(id),
    store: deps.store,
    clock,
    recheckMs: deps.options.cancelRecheckMs,
    tellSlot: (slot) => links.actor(`slot-${slot}`)?.send({ type: "CANCEL" }),
    onError: (error) => events.emit("error", { where: "cancel check", error: toError(error) }),
  });
  const claimerOptions: ClaimerOptions = {
    store: deps.store,
    nodeId: deps.nodeId,
    boostIntervalMs: deps.boostIntervalMs,
    withPayload: deps.claimMode === "full",
    clock,
    budgets: new ClaimBudgets(deps.options.claimStatementTimeoutMs, clock, (r) => {
      if (events.has("claim-statement")) events.emit("claim-statement", r);
    }),
    // The poll itself succeeded (the other statement answered), so the claim cycle reports nothing: the
    // failure is reported here, as a claim's, which also brings the lease audit forward.
    onStatementFailed: (error, kind) => {
      logger.warn(`${kind} claim statement failed; the poll kept the other statement's jobs`, {
        error: String(error),
      });
      events.emit("error", { where: `claim (${kind})`, error: toError(error) });
    },
  };
  const lanes = NodeLanes.build({
    concurrency: deps.concurrency,
    prefetch: deps.prefetch,
    queues: deps.queues,
    claimer: () => withKeyedClaim(deps.createClaimer(claimerOptions), claimerOptions),
    queueClaimer: (queue) =>
      withKeyedClaim(new ClassicClaimer({ ...claimerOptions, queue }), claimerOptions, queue),
  });
  heldBack = () => lanes.all.some((lane) => lane.claimer.heldBack?.() === true);
  const claims = new ClaimCycle({
    clock,
    events,
    logger,
    types: deps.types,
    lanes,
    dues,
    minDelayMs: deps.options.polling.minDelayMs,
    utilization: () => slots.busy / deps.concurrency,
    actor: (id) => links.actor(id),
    draining: () => links.draining(),
    handBack: (jobs) => links.handBack(jobs),
    pump: () => links.pump(),
  });
  return {
    writer,
    slots,
    breakers,
    rates,
    dues,
    outcomes,
    finishDeps,
    watchdogs,
    cancelCheck,
    lanes,
    claims,
  };
}

/**
 * Adds the keyed claim (concurrency keys, docs/fairness.md) to a lane's claimer, when the store has one.
 */
function withKeyedClaim(inner: Claimer, o: ClaimerOptions, queue?: string): Claimer {
  const store = o.store;
  if (!store.claimKeyed) return inner;
  return new KeyedClaimer(inner, {
    claimKeyed: (args) => (store.claimKeyed as NonNullable<typeof store.claimKeyed>).call(store, args),
    nodeId: o.nodeId,
    boostIntervalMs: o.boostIntervalMs,
    withPayload: o.withPayload,
    clock: o.clock,
    ...(o.budgets === undefined ? {} : { budgets: o.budgets }),
    ...(o.onStatementFailed === undefined ? {} : { onStatementFailed: o.onStatementFailed }),
    ...(queue === undefined ? {} : { queue }),
  });
}
