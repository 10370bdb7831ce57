/**
 * The services a started node runs beside its runtime: the signal sweep (parked waits' deadlines, durable
 * sleeps and machine timers), the lease audit (rows leased to this node that it does not run, after a
 * claim's reply was lost), and the event wiring between the cluster and the runtime. {@link Pawl.start}
 * starts them once the runtime runs; {@link NodeServices.stopSweeps} and {@link NodeServices.off} are
 * the two halves of stopping them, the first before the drain, the second after it.
 */
import { SignalSweeper } from "../cluster/signal-sweeper.js";
import { LeaseAudit } from "../cluster/lease-audit.js";
import type { CompositionDeps } from "../composition/deps.js";
import type { PawlEventEmitter } from "../core/events.js";
import type { ResolvedConfig } from "../input/config.js";
import type { NodeRuntime } from "../node/node-runtime.js";
import { traceInternals } from "../node/internal-spans.js";
import type { PostgresJobStore } from "../store/postgres-job-store.js";
import type { PawlTracing } from "../tracing/pawl-tracing.js";
import type { NodeHooks } from "./node-hooks.js";

/** What {@link startNodeServices} needs of the node. */
export interface NodeServicesDeps {
  config: ResolvedConfig;
  composition: CompositionDeps;
  store: PostgresJobStore;
  events: PawlEventEmitter;
  runtime: NodeRuntime;
  node: NodeHooks;
  tracing: PawlTracing | null;
  /** Whether the node registered durable machines (their timers need the sweep at least every second). */
  runsMachines: boolean;
}

/** The started services; see the module comment for the order of stopping. */
export interface NodeServices {
  /** Stops the sweep and the audit (before the drain: nothing new is woken or released meanwhile). */
  stopSweeps(): Promise<void>;
  /** Removes the event wiring (after the drain). */
  off(): void;
}

/** Starts the services of a node whose runtime has started. */
export function startNodeServices(deps: NodeServicesDeps): NodeServices {
  const { config: c, events, runtime, node, tracing } = deps;
  // Times out parked signal waits (docs/composition.md#signals).
  const signalSweeper = new SignalSweeper({
    deps: deps.composition,
    clock: c.clock,
    // A node that runs durable machines sweeps at least every second even when it knows no deadline: a
    // timer parked by a node that died since must still fire within about a second of its due time.
    ...(deps.runsMachines ? { idleIntervalMs: 1000 } : {}),
  });
  signalSweeper.start();
  // Releases rows leased to this node that it does not run (a claim's reply lost after its commit).
  const leaseAudit = new LeaseAudit({
    store: deps.store,
    nodeId: c.nodeId,
    node: {
      heldIds: () => runtime.heldIds(),
      claimsInFlight: () => runtime.claimsInFlight(),
      released: () => {
        runtime.requestFullPass();
        runtime.wake("local");
      },
    },
    intervalMs: c.runtimeOptions.cluster.leaseAuditIntervalMs,
    graceMs: c.runtimeOptions.cluster.leaseAuditGraceMs,
    clock: c.clock,
    events,
    logger: c.logger.child({ nodeId: c.nodeId }),
  });
  leaseAudit.start();
  // A failed claim (the poll's, or one lane's) may have committed: its reply can be what was lost.
  const offClaimFailed = events.on("error", (e) => {
    if (e.where === "claim" || e.where.startsWith("claim (")) leaseAudit.suspect();
  });
  // A node declared dead by the others (it missed heartbeats) has had its jobs recovered: the ones
  // still waiting in its buffer would run a second time, so they are dropped.
  const offDead = events.on("cluster:heartbeat", (e) => {
    if (e.wasDeclaredDead) runtime.dropBuffered("this node was declared dead by the cluster");
  });
  // Recovered orphans are PENDING again under their old ids and scheduled times, where only a full pass
  // of the claim cursors sees them (an idle node backs its full pass off to a minute): look now.
  const offRecovered = events.on("cluster:orphans-recovered", () => {
    node.afterRelease();
    runtime.wake("local");
  });
  // The batched internals (claims, outcome flushes, wakeups) as spans, when asked for.
  const offInternals = tracing?.options.internals ? traceInternals(tracing, events) : null;
  return {
    stopSweeps: async () => {
      await signalSweeper.stop();
      await leaseAudit.stop();
    },
    off: () => {
      offClaimFailed();
      offDead();
      offRecovered();
      offInternals?.();
    },
  };
}
