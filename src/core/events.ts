/**
 * The runtime's typed event stream. Everything observable happens here first: tests await events
 * instead of sleeping, metrics subscribe to them, and the inspector reads them. Emitting to no listener
 * costs a map lookup, so the hot path can always emit.
 */
import type { WakeupHint } from "../../coordinators/spi.js";
import { describeThrown, thrownAsError } from "./thrown-value.js";

/** What one beat did. */
export interface HeartbeatResult {
  /** The heartbeat time written (database time). */
  heartbeatAt: Date;
  /** When this run of the node registered (database time). */
  startedAt: Date;
  /** The worst event-loop delay since the previous beat (ms). */
  lagMs: number;
  /** How long the statement took (ms, local clock). */
  durationMs: number;
  /** The wait chosen before the next beat (ms). */
  nextDelayMs: number;
  /** The sweep had declared this node dead before this beat: its jobs may have been recovered. */
  wasDeclaredDead: boolean;
}

/** What every job event carries about the job. */
export interface JobEventInfo {
  id: string;
  type: string;
  queue: string;
  priority: number;
  attempt: number;
  maxAttempts: number;
}

/** The event map: name -> payload. */
export interface PawlEvents {
  /** A node started (after migrations ran and the actors are live). */
  "node:started": { nodeId: string };
  /** A node stopped. */
  "node:stopped": { nodeId: string; aborted: number };
  /** A poll ran (it may have claimed nothing). */
  poll: { mode: string; delayMs: number; claimed: number; limit: number; durationMs: number };
  /** A batch was claimed. `boosts` holds the boost of each boosted job (levels above its raw priority). */
  claim: { jobs: readonly JobEventInfo[]; limit: number; durationMs: number; boosts: readonly number[] };
  /**
   * One claim statement ran (issue 44): its kind (`keyed`, `unkeyed`, `floored` or `full`, see
   * docs/fairness.md), how long it took, how it ended (`timeout`: it ran out of its budget, so the claim
   * gave up for this poll), the rows it claimed, and the budget it had (ms; 0: none).
   */
  "claim-statement": {
    kind: "keyed" | "unkeyed" | "floored" | "full";
    durationMs: number;
    outcome: "ok" | "timeout" | "error";
    claimed: number;
    budgetMs: number;
  };
  /** The poller was woken. */
  wakeup: { source: "local" | "coordinator"; hint?: WakeupHint };
  "job:started": { job: JobEventInfo; pickupLatencyMs: number };
  "job:succeeded": { job: JobEventInfo; durationMs: number };
  /** A failed attempt that will be retried after `delayMs`. */
  "job:retried": { job: JobEventInfo; error: Error; delayMs: number; timedOut: boolean };
  /** A job moved to the dead letter queue. */
  "job:dead": {
    job: JobEventInfo;
    error: Error;
    reason: "exhausted" | "non-retryable" | "discarded" | "invalid-payload";
    timedOut: boolean;
  };
  "job:snoozed": { job: JobEventInfo; delayMs: number };
  /** A job's result was discarded because it was canceled while running (or before it started). */
  "job:canceled": { job: JobEventInfo };
  /** A job handed back without counting the attempt. */
  "job:rescheduled": {
    job: JobEventInfo;
    reason: "breaker" | "permit" | "rate-limit" | "shutdown";
    delayMs: number;
  };
  /**
   * A job's attempt was refused by a rate limit (it is handed back, `job:rescheduled` follows): `keys` are
   * the full windows, `retryInMs` when it comes back, `local` when this node refused it from its memory of
   * the keys' openings, without asking the store.
   */
  "job:rate-limited": { job: JobEventInfo; keys: string[]; retryInMs: number; local: boolean };
  /** The store's answer to a rate-limit admission, per key: the starts in its window now (cluster-wide). */
  "rate-limit:window": {
    key: string;
    type: string;
    used: number;
    limit: number;
    full: boolean;
    openInMs: number;
  };
  /** An outcome the store refused: the row is no longer held by this node (canceled or recovered). */
  "job:lost": { job: JobEventInfo; outcome: string };
  "watchdog:soft-warning": { job: JobEventInfo; deadline: number };
  "watchdog:cancel-request": { job: JobEventInfo; deadline: number };
  "watchdog:hard-timeout": { job: JobEventInfo; deadline: number };
  "breaker:change": { service: string; from: string; to: string };
  "coordinator:connected": { transport: string };
  "coordinator:disconnected": { transport: string; error: string };
  /**
   * A database connection failed and was dropped (a server restart, a terminated backend): `held` while
   * pawl had it checked out (the operation in progress failed), `idle` while it waited in pawl's pool.
   */
  "database:connection-error": { source: "held" | "idle"; error: Error };
  /** This node wrote its heartbeat (times are the database's; `nextDelayMs` adapts to `lagMs`). */
  "cluster:heartbeat": { nodeId: string } & HeartbeatResult;
  /** A node's heartbeat passed the dead-node threshold (reported once, by the node that swept). */
  "cluster:node-dead": { nodeId: string; lastHeartbeat: Date; detectedBy: string };
  /** RUNNING jobs of dead nodes (or, at `startup`, of this node id's previous run) were recovered. */
  "cluster:orphans-recovered": {
    sweeper: string;
    startup: boolean;
    jobs: readonly {
      id: string;
      type: string;
      nodeId: string;
      attempt: number;
      status: "PENDING" | "DEAD";
    }[];
  };
  /**
   * A lease audit ran on this node (src/cluster/lease-audit.ts): `leased` rows were leased to it (older
   * than the grace), and `released` of them, which nothing on the node held (a claim whose reply was
   * lost), went back to PENDING.
   */
  "cluster:lease-audit": {
    nodeId: string;
    leased: number;
    released: readonly { id: string; type: string }[];
    durationMs: number;
  };
  /** This node took a maintenance lease. */
  "cluster:lease-acquired": { name: string; nodeId: string; expiresAt: Date };
  /** This node lost a lease it held (renewal refused, or its deadline passed mid-work). */
  "cluster:lease-lost": { name: string; nodeId: string; reason: string };
  /** The local clock was compared with the database's; `exceeded` when above `clockSkewWarnMs`. */
  "cluster:clock-skew": { skewMs: number; roundTripMs: number; exceeded: boolean };
  /** A recurring schedule fired: its child job was enqueued. */
  "recurring:fired": { name: string; fireAt: Date; jobId: string; type: string };
  /** A pruning pass ended: rows deleted per status. */
  "prune:done": { succeeded: number; canceled: number; dead: number; batches: number; durationMs: number };
  /**
   * A history pass made or dropped time partitions of SUCCEEDED rows (or failed to): `droppedRows` is how
   * many SUCCEEDED jobs the drops pruned. Not emitted for a pass with nothing to do.
   */
  "history:done": {
    created: number;
    dropped: number;
    droppedRows: number;
    failed: number;
    durationMs: number;
  };
  /** A handler called ctx.waitForSignal(): its job is parked (WAITING) until a signal or the timeout. */
  "job:waiting": {
    job: JobEventInfo;
    timeoutMs: number | null;
    /** Set for a durable wait (docs/durable.md): its step, and what it waits for. */
    durable?: { step: string; reason: "sleep" | "signal" | "children" };
  };
  /**
   * A durable handler's step (docs/durable.md): `run` (its body ran and its result was recorded),
   * `replayed` (its recorded result was returned, nothing ran), `failed` (its body threw). `kind` is the
   * call (step, sleep, signal, spawn, wait); both labels are bounded (no step names).
   */
  "durable:step": {
    jobId: string;
    type: string;
    step: string;
    kind: "step" | "sleep" | "signal" | "spawn" | "wait";
    outcome: "run" | "replayed" | "failed";
  };
  /** pawl.signal() woke a parked job (emitted by the instance that signaled). */
  "job:signaled": { jobId: string; type: string; queue: string; status: "PENDING" | "PAUSED" };
  /** A parked job's wait timed out (emitted by the node whose sweep found it). */
  "job:signal-timeout": { jobId: string; type: string; queue: string; status: "PENDING" | "PAUSED" };
  /** pawl.pauseJob() paused a job. */
  "job:paused": { jobId: string; type: string; queue: string };
  /** pawl.resumeJob() resumed a job (`status` PAUSED when its queue or type is still paused). */
  "job:resumed": { jobId: string; type: string; queue: string; status: string };
  /** A queue or job type was paused cluster-wide (by this instance); `jobs` were moved to PAUSED. */
  "queue:paused": { kind: "queue" | "type"; name: string; changed: boolean; jobs: number };
  /** A queue or job type was resumed (by this instance); `jobs` went back to PENDING. */
  "queue:resumed": { kind: "queue" | "type"; name: string; changed: boolean; jobs: number };
  /** A chain, batch or workflow was created (by this instance). */
  "flow:created": { flowId: string; kind: "chain" | "batch" | "workflow"; total: number };
  /** Something failed inside the runtime; it was logged and the node carries on. */
  error: { where: string; error: Error };
  /**
   * A job returning to PENDING was CANCELED instead, because another live job holds its unique key
   * (`cancelReason`: "duplicate: unique key held by live job <liveJobId>"). Emitted by the instance that
   * made the change: `via` says which call (or the signal-timeout sweep).
   */
  "job:duplicate-canceled": {
    jobId: string;
    type: string;
    queue: string;
    uniqueKey: string;
    liveJobId: string;
    via: "dlq.retry" | "resume" | "signal" | "signal-timeout";
  };
  /**
   * A running job reported progress (`ctx.progress(value)`), validated; emitted for every call, while the
   * store gets at most one write per job per 250 ms (the newest value, and the last one before the outcome).
   */
  "job:progress": { jobId: string; type: string; attempt: number; progress: unknown };
}

/** An event name. */
export type PawlEventName = keyof PawlEvents;
type Listener<E extends PawlEventName> = (payload: PawlEvents[E]) => void;

/**
 * A small typed emitter. Listener errors are caught and reported as `error` events (never thrown into
 * the runtime), so a faulty subscriber cannot break job processing.
 *
 * @example
 * ```ts
 * const off = events.on("job:succeeded", ({ job }) => console.log(job.id));
 * const next = await events.next("job:dead", (e) => e.job.type === "email.send");
 * ```
 */
export class PawlEventEmitter {
  private readonly listeners = new Map<PawlEventName, Set<Listener<never>>>();

  /**
   * Subscribes; returns the unsubscribe function.
   *
   * @deprecated On `pawl.events`, subscribe with `pawl.on(name, listener)`, the one documented way (typed by
   *   the task map); `pawl.events.next(...)` stays the way to await one event.
   */
  on<E extends PawlEventName>(name: E, listener: Listener<E>): () => void {
    let set = this.listeners.get(name);
    if (!set) this.listeners.set(name, (set = new Set()));
    set.add(listener as Listener<never>);
    return () => set.delete(listener as Listener<never>);
  }

  /** Whether anyone listens to `name` (lets callers skip building payloads). */
  has(name: PawlEventName): boolean {
    return (this.listeners.get(name)?.size ?? 0) > 0;
  }

  /** Emits an event to its listeners. */
  emit<E extends PawlEventName>(name: E, payload: PawlEvents[E]): void {
    const set = this.listeners.get(name);
    if (!set || set.size === 0) return;
    for (const l of set) {
      try {
        (l as Listener<E>)(payload);
      } catch (error) {
        if (name !== "error") this.emit("error", { where: `listener of ${name}`, error: toError(error) });
      }
    }
  }

  /**
   * Resolves with the next `name` event that matches `predicate`, rejecting after `timeoutMs`
   * (default 10 s) so a test that waits for an event that never comes fails with a clear message.
   */
  next<E extends PawlEventName>(
    name: E,
    predicate: (payload: PawlEvents[E]) => boolean = () => true,
    timeoutMs = 10_000,
  ): Promise<PawlEvents[E]> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        off();
        reject(new Error(`timed out after ${timeoutMs} ms waiting for event ${name}`));
      }, timeoutMs);
      const off = this.on(name, (payload) => {
        if (!predicate(payload)) return;
        clearTimeout(timer);
        off();
        resolve(payload);
      });
    });
  }
}

/** Turns anything thrown into an Error (handlers may throw strings or objects). */
export function toError(value: unknown): Error {
  // One description of thrown values (src/core/thrown-value.ts), which never throws itself: a value
  // whose toString or toJSON throws, a revoked Proxy or an object without a prototype must not turn an
  // error report into a second, unhandled error.
  return thrownAsError(value, describeThrown(value));
}
