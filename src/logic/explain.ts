/**
 * "Why is this job not running?" as a pure function of the facts (./explain-facts.ts) and the time they
 * were read. A finished job says how it ended; a RUNNING one says where, since when and until when; one
 * held by a dead node says when the orphan sweep should rescue it. Any other job gets every reason that
 * holds now, in a fixed order: what holds the job itself (pause, signal, flow dependencies, due time),
 * then what keeps every node that could run it from doing so (no such node, full queues, open breakers,
 * exhausted permits, a full rate-limit window of its type or queue). An empty list means the next poll of a node that runs its type should claim it.
 *
 * Node-side facts (lanes, breakers) are as of each node's last heartbeat, so they may be a few seconds
 * old; the rest is the store's state at `facts.now`. Each reason's line of plain English is in
 * ./explain-text.ts.
 */
import type {
  ExplainDependency,
  ExplainFacts,
  ExplainNode,
  ExplainPermit,
  ExplainRateWindow,
  NodeRegistry,
  PublishedType,
} from "./explain-facts.js";

/** A node that is alive and what it registers (for {@link NoNodeReason}). */
export interface LiveNodeSummary {
  nodeId: string;
  types: string[];
  /** Its queues, or null when it serves every queue. */
  queues: string[] | null;
}

/** The job ended: SUCCEEDED, DEAD or CANCELED. */
export interface FinishedReason {
  kind: "finished";
  outcome: "SUCCEEDED" | "DEAD" | "CANCELED";
  finishedAt: Date | null;
  attempts: number;
  lastError: string | null;
  cancelReason: string | null;
}
/** A live node runs (or has claimed) the job. */
export interface RunningReason {
  kind: "running";
  nodeId: string;
  since: Date | null;
  /** The node's heartbeat age (ms). */
  heartbeatAgeMs: number;
  /** When the attempt times out, when known. */
  deadline: Date | null;
}
/** The node holding the job is dead: the orphan sweep will put the job back. */
export interface OrphanedReason {
  kind: "orphaned";
  nodeId: string;
  /** The node's last heartbeat, or null when it has no row at all. */
  heartbeatAt: Date | null;
  /** When the sweep should have recovered it (threshold plus one sweep interval). */
  expectedRescueAt: Date;
}
/** Paused by itself, its queue or its type. */
export interface PausedReason {
  kind: "paused";
  by: "job" | "queue" | "type";
  /** The queue or type (the job's id for a job pause). */
  name: string;
  since: Date | null;
  pausedBy: string | null;
}
/** Parked by `ctx.waitForSignal()`. */
export interface WaitingSignalReason {
  kind: "waiting-signal";
}
/** Parked on a durable wait (docs/durable.md): a sleep, a named signal, or children. */
export interface WaitingDurableReason {
  kind: "waiting-durable";
  /** The step it is parked on. */
  step: string;
  wait: "sleep" | "signal" | "children";
  /** When the wait began (its step's start). */
  since: Date;
  /** A sleep's due time, or the wait's timeout; null: none. */
  until: Date | null;
  /** For children: the ids still live, and how many it awaits in all. */
  pending?: string[];
  total?: number;
}
/** A flow member whose dependencies have not all finished. */
export interface WaitingDependenciesReason {
  kind: "waiting-dependencies";
  flowId: string | null;
  dependencies: ExplainDependency[];
}
/** Due later. */
export interface ScheduledReason {
  kind: "scheduled";
  at: Date;
  inMs: number;
}
/** No live node registers the type (or none that does serves the queue). */
export interface NoNodeReason {
  kind: "no-node";
  type: string;
  queue: string;
  /** Live nodes that register the type but do not serve the queue. */
  typeWithoutQueue: string[];
  alive: LiveNodeSummary[];
}
/** Every node that could run it is at its limit for the job's queue. */
export interface QueueFullReason {
  kind: "queue-full";
  queue: string;
  nodes: { nodeId: string; running: number; limit: number }[];
}
/** The service's breaker is open on every node that could run it. */
export interface BreakerOpenReason {
  kind: "breaker-open";
  service: string;
  /** The earliest time one of those nodes probes again. */
  until: Date | null;
  nodes: { nodeId: string; until: Date | null }[];
}
/** All of the resource's permits are held. */
export interface PermitsExhaustedReason {
  kind: "permits-exhausted";
  resource: string;
  capacity: number;
  held: number;
  holders: ExplainPermit[];
}

/** A rate limit's window is full: no attempt of the job's key starts before `until`. */
export interface RateLimitedReason {
  kind: "rate-limited";
  /** `type:<type>` or `queue:<queue>` (a key from the payload is not known to explain). */
  key: string;
  limit: number;
  perMs: number;
  used: number;
  until: Date;
}

/** The job's concurrency key has as many jobs running as the job's limit (docs/fairness.md). */
export interface KeyAtLimitReason {
  kind: "key-at-limit";
  key: string;
  limit: number;
  running: number;
}

/** One reason, discriminated by `kind`. */
export type ExplainReason =
  | FinishedReason
  | RunningReason
  | OrphanedReason
  | PausedReason
  | WaitingSignalReason
  | WaitingDurableReason
  | WaitingDependenciesReason
  | ScheduledReason
  | KeyAtLimitReason
  | NoNodeReason
  | QueueFullReason
  | BreakerOpenReason
  | PermitsExhaustedReason
  | RateLimitedReason;

/**
 * The answer: `finished`, `running`, `orphaned`, `blocked` (at least one reason) or `runnable` (none: the
 * next poll should take it).
 */
export interface Explanation {
  jobId: string;
  status: ExplainFacts["job"]["status"];
  verdict: "finished" | "running" | "orphaned" | "blocked" | "runnable";
  reasons: ExplainReason[];
  /** When the facts were read (database time). */
  at: Date;
}

/**
 * Explains a job from its facts.
 *
 * @example
 * ```ts
 * const e = explainJob(facts);
 * if (e.verdict === "blocked") console.log(e.reasons.map((r) => describeReason(r, facts.now)));
 * ```
 */
export function explainJob(facts: ExplainFacts): Explanation {
  const { job, now } = facts;
  const answer = (verdict: Explanation["verdict"], reasons: ExplainReason[]): Explanation => ({
    jobId: job.id,
    status: job.status,
    verdict,
    reasons,
    at: now,
  });
  if (job.status === "SUCCEEDED" || job.status === "DEAD" || job.status === "CANCELED") {
    return answer("finished", [
      {
        kind: "finished",
        outcome: job.status,
        finishedAt: job.finishedAt,
        attempts: job.attempts,
        lastError: job.lastError,
        cancelReason: job.cancelReason,
      },
    ]);
  }
  if (job.status === "RUNNING") return runningAnswer(facts, answer);

  const reasons: ExplainReason[] = [];
  if (job.status === "PAUSED") reasons.push(pausedReason(facts));
  if (job.status === "WAITING") {
    const durable = durableWait(facts);
    reasons.push(
      durable ??
        (job.waitingFor === "signal"
          ? { kind: "waiting-signal" }
          : { kind: "waiting-dependencies", flowId: job.flowId ?? null, dependencies: facts.dependencies }),
    );
  }
  const dueIn = job.scheduledTime.getTime() - now.getTime();
  if (dueIn > 0) reasons.push({ kind: "scheduled", at: job.scheduledTime, inMs: dueIn });
  reasons.push(...nodeReasons(facts));
  // A full concurrency key holds the job back whichever node would run it (docs/fairness.md).
  const c = facts.concurrency;
  if (c && c.limit !== null && c.running >= c.limit) {
    reasons.push({ kind: "key-at-limit", key: c.key, limit: c.limit, running: c.running });
  }
  return answer(reasons.length > 0 ? "blocked" : "runnable", reasons);
}

function runningAnswer(
  facts: ExplainFacts,
  answer: (v: Explanation["verdict"], r: ExplainReason[]) => Explanation,
): Explanation {
  const { job } = facts;
  const nodeId = job.pickedBy ?? "";
  const node = facts.nodes.find((n) => n.nodeId === nodeId);
  if (!node || !node.alive) {
    // The sweep recovers a dead node's rows once its heartbeat is past the threshold, at its next pass. A
    // holder with no row at all is judged by the pick time instead, and only a sweep's full scan of the
    // running rows finds it (the cheap gate reads node rows); a full scan runs once a threshold at most,
    // so its bound is a threshold later (docs/cluster.md, src/cluster/orphan-sweeper.ts).
    const from = node?.heartbeatAt ?? job.pickedAt ?? facts.now;
    const fullScanMs = node ? 0 : facts.deadNodeThresholdMs;
    const rescue = new Date(
      from.getTime() + facts.deadNodeThresholdMs + fullScanMs + facts.orphanSweepIntervalMs,
    );
    return answer("orphaned", [
      { kind: "orphaned", nodeId, heartbeatAt: node?.heartbeatAt ?? null, expectedRescueAt: rescue },
    ]);
  }
  const registered = node.registry?.types.find((t) => t.type === job.type);
  const timeoutMs = job.timeoutMs ?? registered?.timeoutMs ?? node.registry?.defaultTimeoutMs ?? null;
  const deadline = job.pickedAt && timeoutMs !== null ? new Date(job.pickedAt.getTime() + timeoutMs) : null;
  return answer("running", [
    { kind: "running", nodeId, since: job.pickedAt, heartbeatAgeMs: node.ageMs, deadline },
  ]);
}

function pausedReason(facts: ExplainFacts): PausedReason {
  const { job } = facts;
  const by = job.pausedBy ?? "job";
  if (by === "job") return { kind: "paused", by, name: job.id, since: job.updatedAt, pausedBy: null };
  const name = by === "queue" ? job.queue : job.type;
  const pause = facts.pauses.find((p) => p.kind === by && p.name === name);
  return { kind: "paused", by, name, since: pause?.pausedAt ?? null, pausedBy: pause?.pausedBy ?? null };
}

/** Whether a node's lanes take jobs of `queue`. */
function servesQueue(r: NodeRegistry, queue: string): boolean {
  return r.queues === null || r.queues.some((q) => q.name === queue);
}

/** The reasons found on the nodes: who could run the job, and what stops each of them. */
function nodeReasons(facts: ExplainFacts): ExplainReason[] {
  const { job, now } = facts;
  const alive = facts.nodes.filter((n) => n.alive);
  // A live node that publishes nothing might run the type: say nothing about nodes rather than guess.
  if (alive.some((n) => n.registry === null)) return [];
  const withType = alive.filter((n) => n.registry?.types.some((t) => t.type === job.type));
  const able = withType.filter((n) => servesQueue(n.registry as NodeRegistry, job.queue));
  if (able.length === 0) {
    return [
      {
        kind: "no-node",
        type: job.type,
        queue: job.queue,
        typeWithoutQueue: withType.map((n) => n.nodeId),
        alive: alive.map(summary),
      },
    ];
  }
  const reasons: ExplainReason[] = [];
  const lanes = able.map((n) => ({ nodeId: n.nodeId, ...laneOf(n.registry as NodeRegistry, job.queue) }));
  if (lanes.every((l) => l.running >= l.limit)) {
    reasons.push({ kind: "queue-full", queue: job.queue, nodes: lanes });
  }
  const reg = (n: ExplainNode): PublishedType | undefined =>
    n.registry?.types.find((t) => t.type === job.type);
  const service = able.map(reg).find((t) => t?.service)?.service ?? null;
  if (service !== null) {
    const open = able.map((n) => {
      const b = n.registry?.breakers.find((x) => x.service === service);
      const until = b?.state === "OPEN" ? b.openUntil : null;
      return { nodeId: n.nodeId, open: until !== null && until > now.getTime(), until };
    });
    if (open.every((o) => o.open)) {
      const earliest = Math.min(...open.map((o) => o.until as number));
      reasons.push({
        kind: "breaker-open",
        service,
        until: new Date(earliest),
        nodes: open.map((o) => ({ nodeId: o.nodeId, until: o.until === null ? null : new Date(o.until) })),
      });
    }
  }
  const resource = able.map(reg).find((t) => t?.resource)?.resource ?? null;
  if (resource !== null) {
    const capacity = able.map((n) => n.registry?.resources[resource]).find((c) => c !== undefined);
    const permits = facts.permits[resource] ?? { held: 0, holders: [] };
    // The job's own permit (a RUNNING job keeps it) never blocks it; for a job that is not running, every
    // held permit belongs to another job.
    if (capacity !== undefined && permits.held >= capacity) {
      reasons.push({ kind: "permits-exhausted", resource, capacity, ...permits });
    }
  }
  reasons.push(...rateReasons(facts, able));
  return reasons;
}

/**
 * The full windows of the rate limits the able nodes apply to the job: its type's (unless keyed by the
 * payload, whose key explain cannot compute) and its queue's.
 */
function rateReasons(facts: ExplainFacts, able: readonly ExplainNode[]): RateLimitedReason[] {
  const { job, now } = facts;
  const limited = (key: string): boolean => {
    if (key.startsWith("type:")) {
      return able.some((n) => {
        const t = n.registry?.types.find((x) => x.type === job.type);
        return t?.rateLimit != null && !t.rateLimit.keyed;
      });
    }
    return able.some((n) => n.registry?.queueRateLimits?.[job.queue] !== undefined);
  };
  const out: RateLimitedReason[] = [];
  for (const w of facts.rateWindows ?? []) {
    if (!isFull(w, now) || !limited(w.key)) continue;
    out.push({
      kind: "rate-limited",
      key: w.key,
      limit: w.limit,
      perMs: w.perMs,
      used: w.used,
      until: w.openAt as Date,
    });
  }
  return out;
}

function isFull(w: ExplainRateWindow, now: Date): boolean {
  return w.used >= w.limit && w.openAt !== null && w.openAt.getTime() > now.getTime();
}

function laneOf(r: NodeRegistry, queue: string): { running: number; limit: number } {
  const lane = r.queues?.find((q) => q.name === queue);
  return lane ? { running: lane.running, limit: lane.limit } : { running: r.busy, limit: r.concurrency };
}

function summary(n: ExplainNode): LiveNodeSummary {
  return {
    nodeId: n.nodeId,
    types: n.registry?.types.map((t) => t.type) ?? [],
    queues: n.registry?.queues?.map((q) => q.name) ?? null,
  };
}

/** The durable wait a WAITING job is parked on (its waiting step), or null for another kind of wait. */
function durableWait(facts: ExplainFacts): WaitingDurableReason | null {
  const step = facts.job.steps?.find((s) => s.status === "waiting");
  if (!step || step.kind === "step" || step.kind === "spawn") return null;
  const wait = step.kind === "wait" ? "children" : step.kind;
  const base: WaitingDurableReason = {
    kind: "waiting-durable",
    step: step.name,
    wait,
    since: step.startedAt,
    until: step.wakeAt,
  };
  if (wait !== "children") return base;
  const awaited = step.children ?? [];
  const live = new Map((facts.children ?? []).map((c) => [c.id, c.status]));
  const final = new Set(["SUCCEEDED", "DEAD", "CANCELED"]);
  const pending = awaited.filter((id) => live.has(id) && !final.has(live.get(id)!));
  return { ...base, pending, total: awaited.length };
}
