/**
 * One node's cluster services, wired together: the heartbeat, the orphan sweep, the recurring scheduler,
 * the pruner, the history partitioner and the clock-skew check, each a class with a runOnce() driven by a
 * thin {@link PeriodicTask} on the injectable clock, plus the leases they share.
 *
 * Lifecycle, as Pawl drives it:
 * - prepare() (before the node claims anything): compares clocks, makes sure no live process runs under
 *   this node id, writes the first heartbeat, then recovers the RUNNING rows a previous run of this node
 *   id left behind (startup cleanup, under the sweep lease).
 * - start(): the loops. The sweep only runs once this node's heartbeats have succeeded for a whole
 *   threshold ({@link sweepReady}), so after a database outage no live node is judged before it could beat.
 * - stopMaintenance() (before the runtime drains) and stop() (after it drained): the heartbeat runs until
 *   the node's last job is written, so a long graceful drain is never mistaken for a death; then the node
 *   removes its row.
 */
import type { PawlTracing } from "../tracing/pawl-tracing.js";
import type { Clock } from "../core/clock.js";
import type { TypeDefaults } from "../input/enqueue-input.js";
import { PawlError } from "../core/errors.js";
import { toError, type PawlEventEmitter } from "../core/events.js";
import type { Logger } from "../core/logger.js";
import type { EnqueuedJob } from "../store/jobs/enqueue-jobs.js";
import type { ClusterStore, DedicatedClusterStore } from "../store/job-store.js";
import type { NodeInfo, NodeStatus } from "../store/cluster/node-sql.js";
import type { LockRow } from "../store/cluster/lock-sql.js";
import { isEmbeddedUrl } from "../db/embedded/embedded-url.js";
import { sweepReady, sweepRestMs } from "../logic/cluster-logic.js";
import type { ResolvedClusterOptions } from "../input/cluster-options.js";
import { ClockSkewMonitor, type ClockSkewReading } from "./clock-skew.js";
import type { NodeRegistry } from "../logic/explain-facts.js";
import { HeartbeatService, type HeartbeatDeps, type LagProbe } from "./heartbeat.js";
import type { HeartbeatResult } from "../core/events.js";
import { LeaseManager } from "./lease.js";
import { localNodeInfo, newInstanceId } from "./node-info.js";
import { NodeIdGuard } from "./node-id-guard.js";
import { OrphanSweeper, type SweepResult } from "./orphan-sweeper.js";
import { PeriodicTask, type RunOutcome } from "../core/periodic.js";
import { Pruner, type PruneResult } from "./pruner.js";
import { HistoryPartitioner, type HistoryPartitionResult } from "./history-partitioner.js";
import { RecurringScheduler, type RecurringResult } from "./recurring.js";
import type { RecoveredJob } from "../store/cluster/orphan-sql.js";

/** What {@link ClusterServices} is built from. */
export interface ClusterServicesDeps {
  /** Traces recurring fires' enqueues (src/tracing); null or absent: untraced. */
  tracing?: PawlTracing | null;
  /** The gateway every statement of the services runs through (see `heartbeatConnectionString`). */
  store: ClusterStore;
  nodeId: string;
  /**
   * The node id was generated for this process, so no earlier run holds rows under it: startup skips the
   * recovery of a previous run. That recovery reads every leased row (no index names the lease, so claims
   * stay HOT updates), which is a scan of the whole live table: 58 ms at 1,000,000 rows, under the sweep
   * lease, on every start.
   */
  freshNodeId?: boolean;
  concurrency: number;
  /** The coordinator's transport name, for node_info. */
  transport: string;
  options: ResolvedClusterOptions;
  events: PawlEventEmitter;
  logger: Logger;
  clock: Clock;
  typeDefaults: (type: string) => TypeDefaults | undefined;
  maxPayloadBytes: number;
  afterEnqueue?: (jobs: readonly EnqueuedJob[]) => void;
  /** Replaces the event-loop lag probe (tests). */
  lag?: LagProbe;
  /** What the node runs, published with each heartbeat (`pawl.explain` reads it). */
  registry?: () => NodeRegistry | null;
  /**
   * When given, heartbeats (and clock readings) get a connection of their own to this database, so they
   * never queue behind job traffic on a saturated pool. Pawl passes it when it created its pool itself.
   */
  heartbeatConnectionString?: string;
  /**
   * A connection string that reaches PostgreSQL itself, for the node id's session lock
   * (./node-id-guard.ts); absent, a previous run of the id is judged by its heartbeat alone.
   */
  nodeIdLockConnectionString?: string;
  /** Called once when a heartbeat finds a breaking migration newer than this release (the node stops). */
  onIncompatibleSchema?: HeartbeatDeps["onIncompatibleSchema"];
}

/** What prepare() did. */
export interface PrepareResult {
  heartbeat: HeartbeatResult;
  clockSkew: ClockSkewReading;
  /** Rows of this node id's previous run that were recovered. */
  recovered: RecoveredJob[];
}

/** The cluster as one node sees it (see {@link Pawl.cluster}). */
export interface ClusterView {
  /** The node asking. */
  nodeId: string;
  /** Every node row, with its heartbeat age and whether it is alive by the threshold. */
  nodes: NodeStatus[];
  /** The maintenance leases and their holders (`held` false: expired, free to take). */
  leases: LockRow[];
  /** This node's latest clock comparison, or null when it has not run (node not started). */
  clockSkew: ClockSkewReading | null;
}

// Node ids started in this process, per schema: a second start under the same id is refused at once.
const liveInProcess = new Set<string>();

/** One node's cluster services. */
export class ClusterServices {
  readonly leases: LeaseManager;
  readonly heartbeat: HeartbeatService;
  readonly sweeper: OrphanSweeper;
  readonly recurring: RecurringScheduler;
  readonly pruner: Pruner;
  readonly history: HistoryPartitioner;
  readonly skew: ClockSkewMonitor;
  /** This run's node info (its `instance` is unique to this start). */
  readonly info: NodeInfo;
  private readonly heartbeatLoop: PeriodicTask<HeartbeatResult>;
  private readonly maintenance: PeriodicTask<unknown>[];
  private readonly key: string;
  private registered = false;
  private started = false;
  /** The heartbeat's gateway on a connection of its own, when it has one (closed by stop()). */
  private readonly own: DedicatedClusterStore | null;
  /** One process per node id: the id's session lock and the judgement of a previous run. */
  private readonly guard: NodeIdGuard;

  constructor(private readonly deps: ClusterServicesDeps) {
    const { store, nodeId, options: o, events, logger, clock } = deps;
    this.info = localNodeInfo(deps.concurrency, deps.transport, newInstanceId());
    // An embedded database serves one connection: its heartbeat shares the pool (a second one would open
    // a second database, or be refused).
    this.own =
      deps.heartbeatConnectionString && !isEmbeddedUrl(deps.heartbeatConnectionString)
        ? store.dedicated(deps.heartbeatConnectionString, logger, "pawl-heartbeat")
        : null;
    const beatStore = this.own?.store ?? store;
    this.key = `${store.schema}\u0000${nodeId}`;
    this.guard = new NodeIdGuard({
      store,
      nodeId,
      info: this.info,
      clock,
      logger,
      deadNodeThresholdMs: o.deadNodeThresholdMs,
      heartbeatIntervalMs: o.heartbeatIntervalMs,
      // A generated id is new to the cluster and dies with this process: nothing to guard.
      lockConnectionString: deps.freshNodeId ? undefined : deps.nodeIdLockConnectionString,
    });
    this.leases = new LeaseManager({ store, owner: nodeId, ttlMs: o.leaseTtlMs, clock, events });
    this.heartbeat = new HeartbeatService({
      store: beatStore,
      nodeId,
      info: this.info,
      intervalMs: o.heartbeatIntervalMs,
      clock,
      events,
      logger,
      ...(deps.lag ? { lag: deps.lag } : {}),
      ...(deps.registry ? { registry: deps.registry } : {}),
      ...(deps.onIncompatibleSchema ? { onIncompatibleSchema: deps.onIncompatibleSchema } : {}),
    });
    this.sweeper = new OrphanSweeper({
      store,
      nodeId,
      thresholdMs: o.deadNodeThresholdMs,
      nodeRetentionMs: o.nodeRetentionMs,
      leases: this.leases,
      clock,
      events,
      logger,
    });
    this.recurring = new RecurringScheduler({
      store,
      leases: this.leases,
      clock,
      events,
      logger,
      typeDefaults: deps.typeDefaults,
      maxPayloadBytes: deps.maxPayloadBytes,
      ...(deps.afterEnqueue ? { afterEnqueue: deps.afterEnqueue } : {}),
      tracing: deps.tracing ?? null,
    });
    this.pruner = new Pruner({
      store,
      leases: this.leases,
      clock,
      events,
      logger,
      succeededRetentionMs: o.succeededRetentionMs,
      canceledRetentionMs: o.canceledRetentionMs,
      deadRetentionMs: o.deadRetentionMs,
      batchSize: o.pruneBatchSize,
    });
    this.history = new HistoryPartitioner({
      store,
      leases: this.leases,
      clock,
      events,
      logger,
      succeededRetentionMs: o.succeededRetentionMs,
      intervalMs: o.pruneIntervalMs,
    });
    this.skew = new ClockSkewMonitor({
      store: beatStore,
      warnMs: o.clockSkewWarnMs,
      clock,
      events,
      logger,
    });

    const report = (where: string) => (error: unknown) => {
      logger.warn(`${where} failed; retrying`, { error: String(error) });
      events.emit("error", { where, error: toError(error) });
    };
    this.heartbeatLoop = new PeriodicTask<HeartbeatResult>({
      clock,
      run: () => {
        this.guard.keep();
        return this.heartbeat.runOnce();
      },
      nextDelay: (r) => (r.ok ? r.result.nextDelayMs : this.heartbeat.failureDelayMs()),
      onError: report("cluster heartbeat"),
    });
    const sweep = new PeriodicTask<SweepResult | null>({
      clock,
      run: () =>
        sweepReady(this.heartbeat.healthySince, clock.now(), o.deadNodeThresholdMs)
          ? this.sweeper.runOnce(null, sweepRestMs(o.orphanSweepIntervalMs))
          : Promise.resolve(null),
      nextDelay: () => o.orphanSweepIntervalMs,
      onError: report("orphan sweep"),
    });
    const recurring = new PeriodicTask<RecurringResult>({
      clock,
      run: () => this.recurring.runOnce(),
      nextDelay: (r) => recurringDelay(r, o.recurringCheckIntervalMs),
      onError: report("recurring scheduler"),
    });
    const prune = new PeriodicTask<PruneResult>({
      clock,
      run: () => this.pruner.runOnce(),
      nextDelay: (r) => (r.ok && r.result.more ? Math.min(1000, o.pruneIntervalMs) : o.pruneIntervalMs),
      onError: report("pruner"),
    });
    const history = new PeriodicTask<HistoryPartitionResult>({
      clock,
      run: () => this.history.runOnce(),
      nextDelay: () => o.pruneIntervalMs,
      onError: report("history partitions"),
    });
    const skew = new PeriodicTask<ClockSkewReading>({
      clock,
      run: () => this.skew.runOnce(),
      nextDelay: () => o.clockSkewCheckIntervalMs,
      onError: report("clock skew check"),
    });
    this.maintenance = [sweep, recurring, prune, skew, history] as PeriodicTask<unknown>[];
  }

  /** The resolved options. */
  get options(): ResolvedClusterOptions {
    return this.deps.options;
  }

  /**
   * Joins the cluster before the node claims anything: clock check, duplicate-id check, first heartbeat,
   * startup cleanup of this node id's previous run (skipped for a generated id, see `freshNodeId`).
   *
   * @throws PawlError `INVALID_STATE` when a live node already runs under this node id in this process,
   *   NodeIdInUseError when one runs in another process; database errors as they come.
   */
  async prepare(): Promise<PrepareResult> {
    const { nodeId } = this.deps;
    if (liveInProcess.has(this.key)) {
      throw new PawlError(
        "INVALID_STATE",
        `node id ${JSON.stringify(nodeId)} is already running in this process`,
      );
    }
    liveInProcess.add(this.key);
    this.registered = true;
    try {
      const clockSkew = await this.skew.runOnce();
      await this.guard.claim();
      const heartbeat = await this.heartbeat.runOnce();
      const recovered = this.deps.freshNodeId
        ? []
        : await this.sweeper.recoverPreviousRun(heartbeat.heartbeatAt, this.deps.options.leaseTtlMs + 1000);
      return { heartbeat, clockSkew, recovered };
    } catch (error) {
      this.unregister();
      await this.guard.release();
      await this.own?.end().catch(() => {});
      throw error;
    }
  }

  /** Starts the loops (after prepare()). Idempotent. */
  start(): void {
    if (this.started) return;
    this.started = true;
    const o = this.deps.options;
    this.heartbeat.startProbe();
    this.heartbeatLoop.start(this.heartbeat.lastBeat?.nextDelayMs ?? o.heartbeatIntervalMs);
    const [sweep, recurring, prune, skew, history] = this.maintenance as [
      PeriodicTask<unknown>,
      PeriodicTask<unknown>,
      PeriodicTask<unknown>,
      PeriodicTask<unknown>,
      PeriodicTask<unknown>,
    ];
    sweep.start(o.orphanSweepIntervalMs);
    recurring.start(0);
    prune.start(Math.min(o.pruneIntervalMs, 10_000));
    // At once: until a partition covers now, SUCCEEDED rows take the row-by-row path.
    history.start(0);
    skew.start(o.clockSkewCheckIntervalMs);
  }

  /** Wakes the recurring scheduler now (a schedule was just registered, say). */
  triggerRecurring(): void {
    this.maintenance[1]?.trigger();
  }

  /**
   * Stops the sweep, scheduler, pruner, skew and history loops, waiting for passes in flight. The heartbeat
   * goes on.
   */
  async stopMaintenance(): Promise<void> {
    await Promise.all(this.maintenance.map((loop) => loop.stop()));
  }

  /** Stops everything and leaves the cluster (this run's row is deleted). Idempotent. */
  async stop(): Promise<void> {
    await this.stopMaintenance();
    await this.heartbeatLoop.stop();
    this.heartbeat.stopProbe();
    if (this.started || this.registered) {
      await this.deps.store
        .removeNode(this.deps.nodeId, this.info.instance)
        .catch((error: unknown) =>
          this.deps.logger.warn("could not remove this node's row; it will expire", { error: String(error) }),
        );
    }
    this.started = false;
    this.unregister();
    await this.guard.release();
    await this.own?.end().catch(() => {});
  }

  /** The cluster as seen from here. */
  view(): Promise<ClusterView> {
    return readClusterView(
      this.deps.store,
      this.deps.nodeId,
      this.deps.options.deadNodeThresholdMs,
      this.skew.reading,
    );
  }

  private unregister(): void {
    if (!this.registered) return;
    this.registered = false;
    liveInProcess.delete(this.key);
  }
}

/** Reads nodes and leases (no services needed: works on a node that was never started). */
export async function readClusterView(
  store: ClusterStore,
  nodeId: string,
  thresholdMs: number,
  clockSkew: ClockSkewReading | null,
): Promise<ClusterView> {
  const [nodes, leases] = await Promise.all([store.listNodes(thresholdMs), store.listLocks()]);
  return { nodeId, nodes, leases, clockSkew };
}

/** The wait before the next recurring check: up to the next fire, within [10 ms, the interval]. */
export function recurringDelay(r: RunOutcome<RecurringResult>, intervalMs: number): number {
  if (!r.ok || r.result.nextDueInMs === null) return intervalMs;
  // Overdue while another node held the lease: look again shortly, it is usually done by then.
  if (r.result.nextDueInMs <= 0) return Math.min(250, intervalMs);
  return Math.max(10, Math.min(intervalMs, r.result.nextDueInMs + 10));
}
