/**
 * The document `GET /debug/actors` returns: the node's actor tree from `pawl.inspect()` plus a flat list
 * of the busy slots (job, step, watchdog deadline and phase), which is what one looks for first when a
 * node seems stuck. Built on demand from snapshots; nothing is recorded in between.
 */
import type { ActorRefLike, InspectionEvent } from "xstate";
import type { ActorNode, ActorTree } from "../src/index.js";
import { sanitize } from "./sanitize.js";
import type { MachineSource, MachinesView } from "./machines-view.js";

/** The slice of the node runtime the inspector reads (a started {@link Pawl}'s `nodeRuntime`). */
export interface InspectableRuntime {
  /** The root actor; its system delivers xstate inspection events. */
  readonly root: {
    readonly system: { inspect(observer: (event: InspectionEvent) => void): { unsubscribe(): void } };
  };
  /** The attempt each slot runs (for its deadline before the watchdog arms, and its payload). */
  readonly slots: {
    runOf(slot: number): { payload: unknown; startedAt: number; ctx: { deadlineMs: number } | null } | null;
  };
  /** The node's memory of rate-limit keys it was refused (absent on an older runtime). */
  readonly rates?: { closedKeys(): { key: string; openAt: number; refused: number }[] };
  /**
   * The durable machines running on the node: each has an actor of its own, outside the root's system, whose
   * inspection events come here (null or absent: none are followed).
   */
  readonly machines?: InspectableMachines | null;
}

/** The durable machines of {@link InspectableRuntime}: their inspection events, the live ones, their definitions. */
export interface InspectableMachines {
  /** Follows every machine's inspection events (each machine actor's `inspect` observer forwards here). */
  inspect(observer: (event: InspectionEvent) => void): { unsubscribe(): void };
  /** The machine actors running on the node now. */
  live(): readonly ActorRefLike[];
  /** The config of the machine a job of `type` on `version` runs on this node (what Stately draws), if registered. */
  configOf(type: string, version: string | null): unknown;
}

/** A rate-limit key this node knows to be closed, in {@link ActorsView}. */
export interface ClosedRateKey {
  key: string;
  /** When the key's window has room again, by the store's last refusal (ms since the epoch, ISO 8601). */
  openAt: number;
  openAtIso: string;
  /** Whether that time is still ahead: until then this node refuses the key's jobs without asking. */
  closed: boolean;
  /** Jobs refused in the key's current episode (their spread slots follow one another). */
  refused: number;
}

/** What the inspector reads from a node: a {@link Pawl} satisfies it. */
export interface InspectorSource extends MachineSource {
  readonly nodeId: string;
  readonly running: boolean;
  inspect(): ActorTree | null;
  readonly nodeRuntime: InspectableRuntime | null;
}

/** One busy slot in {@link ActorsView}. */
export interface BusySlot {
  /** The slot number, and its actor's id (`slot-N`). */
  slot: number;
  actor: string;
  /** The slot's state value: the step the attempt is in (`running`, `acquiringPermit`, ...). */
  step: unknown;
  job: { id: string; type: string; attempt: number; priority: number };
  /** When the handler started (ms since the epoch), or null before it runs. */
  runningSince: number | null;
  cancelRequested: boolean;
  watchdog: {
    /**
     * `armed` or the last step that fired (`soft-warning`, `cancel-request`, `hard-timeout`); `pending`
     * in the first moments of an attempt, before the watchdog actor is armed.
     */
    phase: string;
    /** The attempt's hard deadline (ms since the epoch) and the same as ISO 8601; null before the handler runs. */
    deadline: number | null;
    deadlineAt: string | null;
    /** How long until the deadline, when there is one (negative once passed). */
    remainingMs: number | null;
  };
  /** The job's payload, only with `includePayloads`. */
  payload?: unknown;
}

/** The JSON of `GET /debug/actors`. */
export interface ActorsView {
  nodeId: string;
  running: boolean;
  /** When the view was built (ISO 8601). */
  at: string;
  busy: BusySlot[];
  /** Rate-limit keys this node was refused and still remembers (at most the first 100). */
  rateLimits: ClosedRateKey[];
  /** The whole tree, as `pawl.inspect()` gives it; null before start. */
  tree: ActorTree | null;
  /**
   * The durable machines that have not ended, across the cluster, read from the store (machines-view.ts);
   * absent when the source has no store.
   */
  machines?: MachinesView;
}

/** Builds the view (never throws for a node that is not started). */
export function actorsView(source: InspectorSource, includePayloads: boolean, now = Date.now()): ActorsView {
  const tree = source.inspect();
  const busy: BusySlot[] = [];
  for (const node of tree?.children ?? []) {
    if (node.machine !== "jobTask") continue;
    const slot = busySlot(node, source.nodeRuntime, includePayloads, now);
    if (slot) busy.push(slot);
  }
  return {
    nodeId: source.nodeId,
    running: source.running,
    at: new Date(now).toISOString(),
    busy,
    rateLimits: (source.nodeRuntime?.rates?.closedKeys() ?? []).slice(0, 100).map((k) => ({
      key: k.key,
      openAt: k.openAt,
      openAtIso: new Date(k.openAt).toISOString(),
      closed: k.openAt > now,
      refused: k.refused,
    })),
    tree: tree ? (sanitize(tree, { includePayloads, maxDepth: 12, maxItems: 10_000 }) as ActorTree) : null,
  };
}

function busySlot(
  node: ActorNode,
  runtime: InspectableRuntime | null,
  includePayloads: boolean,
  now: number,
): BusySlot | null {
  const c = node.context;
  const job = c.job as BusySlot["job"] | null | undefined;
  const slot = typeof c.slot === "number" ? c.slot : null;
  if (!job || slot === null) return null;
  const run = runtime?.slots.runOf(slot) ?? null;
  const wd = node.children.find((child) => child.machine === "watchdog");
  const armed = wd !== undefined && wd.context.jobId === job.id;
  const phase = armed && typeof wd.context.phase === "string" ? wd.context.phase : "pending";
  // The watchdog arms a few ms after the handler starts; the attempt's context knows the deadline first.
  const deadline =
    armed && typeof wd.context.deadline === "number" ? wd.context.deadline : (run?.ctx?.deadlineMs ?? null);
  const out: BusySlot = {
    slot,
    actor: node.id,
    step: node.state,
    job: { id: job.id, type: job.type, attempt: job.attempt, priority: job.priority },
    runningSince: typeof c.runningSince === "number" ? c.runningSince : null,
    cancelRequested: c.cancelRequested === true,
    watchdog: {
      phase,
      deadline,
      deadlineAt: deadline === null ? null : new Date(deadline).toISOString(),
      remainingMs: deadline === null ? null : deadline - now,
    },
  };
  if (includePayloads) out.payload = sanitize(run?.payload, { includePayloads: true }) ?? null;
  return out;
}
