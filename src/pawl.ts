/**
 * {@link Pawl}: the enqueue API plus the node runtime. register() adds job types, start() builds the
 * actor tree and joins the cluster, stop() drains. Enqueues wake the local poller and, for urgent work,
 * publish a hint through the coordinator so other nodes wake too.
 */
import type { Coordinator, FoldedNotify } from "../coordinators/spi.js";
import type { PawlConfig } from "./config.js";
import type { EnqueuedJob } from "./store/enqueue-jobs.js";
import type { NewJob } from "./enqueue-input.js";
import { hintJobOfNew, hintJobOfRow, urgentHint } from "./enqueue-hints.js";
import type { CancelResult } from "./store/cancel-job.js";
import type { Queryable } from "./store/sql.js";
import { onConnectionFault } from "./store/held-client.js";
import { PawlError } from "./errors.js";
import { PawlEventEmitter, toError, type PawlEventName, type PawlEvents } from "./events.js";
import { PawlClient } from "./client.js";
import { NodeRuntime } from "./runtime/node-runtime.js";
import {
  resolveJobType,
  typeDefaults,
  type Handler,
  type JobType,
  type RegisterOptions,
} from "./runtime/registry.js";
import { resolveRuntimeOptions, type ResolvedRuntimeOptions } from "./runtime/runtime-config.js";
import { inspectNode, type ActorTree } from "./runtime/inspect.js";
import { createCoordinator, parseCoordinatorSpec } from "../coordinators/index.js";
import { ClusterServices, readClusterView, type ClusterView } from "./cluster/cluster-services.js";
import {
  listSchedules,
  registerSchedule,
  unregisterSchedule,
  type Schedule,
  type ScheduleOptions,
} from "./cluster/recurring.js";
import { ClassicClaimer } from "./store/claimer.js";
import { CursorClaimer } from "./store/claim-cursor.js";
import { SignalSweeper } from "./composition/signals.js";

/** Options of {@link Pawl.stop}. */
export interface StopOptions {
  /** How long running jobs may take to finish before they are aborted (ms). Default 25,000. */
  graceMs?: number;
}

/**
 * A pawl node: enqueue jobs, register handlers, run them.
 *
 * @example
 * ```ts
 * const pawl = createPawl({ concurrency: 10 });
 * pawl.register("email.send", async (payload, ctx) => send(payload, { signal: ctx.signal }), { timeoutMs: 30_000 });
 * await pawl.migrate();
 * await pawl.start();
 * process.on("SIGTERM", () => pawl.stop({ graceMs: 25_000 }));
 * ```
 */
export class Pawl extends PawlClient {
  /** The typed event stream (jobs, polls, claims, breakers, coordinator). */
  readonly events = new PawlEventEmitter();
  private readonly types = new Map<string, JobType>();
  private readonly runtimeOptions: ResolvedRuntimeOptions;
  private runtime: NodeRuntime | null = null;
  private coordinator: Promise<Coordinator> | null = null;
  /** The coordinator once started (enqueue folds its notify only then: it must never wait for a connect). */
  private coordinatorReady: Coordinator | null = null;
  private stopping: Promise<void> | null = null;
  private keepAlive: NodeJS.Timeout | null = null;
  private offClusterEvents: (() => void) | null = null;
  private clusterRef: ClusterServices | null = null;
  private signalSweeper: SignalSweeper | null = null;
  /** Forwards the pool's survived connection faults as `database:connection-error` events (metrics). */
  private readonly offConnectionFaults: () => void;

  constructor(config: PawlConfig = {}) {
    super(config);
    this.runtimeOptions = resolveRuntimeOptions(this.config.runtime, this.config.pollIntervalMs);
    if (typeof this.config.coordinator === "string") parseCoordinatorSpec(this.config.coordinator);
    this.hooks = {
      typeDefaults: (type) => {
        const t = this.types.get(type);
        return t ? typeDefaults(t) : undefined;
      },
      foldWakeup: (jobs, transactional) => this.foldWakeup(jobs, transactional),
      afterEnqueue: (jobs, tx, folded, released) =>
        this.afterEnqueue(jobs, tx, folded === true, released === true),
      afterCancel: (result) => this.afterCancel(result),
      events: this.events,
      afterRelease: () => this.runtime?.claimer.requestFullPass?.(),
    };
    this.offConnectionFaults = onConnectionFault(this.pool, (fault) =>
      this.events.emit("database:connection-error", fault),
    );
  }

  /** This node's id. */
  get nodeId(): string {
    return this.config.nodeId;
  }

  /** Whether start() was called and stop() was not. */
  get running(): boolean {
    return this.runtime !== null && this.stopping === null;
  }

  /**
   * Registers the handler of a job type. Registering after start() is allowed: the next claim includes it.
   *
   * @throws ValidationError for a bad type name or option.
   * @throws PawlError `INVALID_STATE` after stop(): a stopped node never claims again, so the handler could
   *   never run.
   */
  register<P = unknown, R = unknown>(
    type: string,
    handler: Handler<P, R>,
    options?: RegisterOptions<P>,
  ): this {
    this.assertOpen();
    if (this.stopping) {
      throw new PawlError(
        "INVALID_STATE",
        `register("${type}") after stop(): this node was stopped and will never run the handler; create a new instance`,
      );
    }
    const t = resolveJobType(type, handler, options as RegisterOptions);
    this.types.set(type, t);
    return this;
  }

  /** The job types registered on this instance. */
  get registeredTypes(): string[] {
    return [...this.types.keys()];
  }

  /** @internal A registered type with its resolved options (pawl/testing runs handlers with it). */
  jobType(type: string): JobType | undefined {
    return this.types.get(type);
  }

  /** Subscribes to an event; returns the unsubscribe function. */
  on<E extends PawlEventName>(name: E, listener: (payload: PawlEvents[E]) => void): () => void {
    return this.events.on(name, listener);
  }

  /** Starts the node: the actor tree, the first poll, the coordinator. Idempotent. */
  async start(): Promise<void> {
    this.assertOpen();
    if (this.stopping) throw new PawlError("INVALID_STATE", "this node was stopped; create a new instance");
    if (this.runtime) return;
    const coordinator = await this.ensureCoordinator();
    const c = this.config;
    // Join the cluster before claiming: first heartbeat, then recovery of this node id's previous run.
    const cluster = new ClusterServices({
      pool: this.store.pool,
      tables: this.store.tables,
      nodeId: c.nodeId,
      concurrency: c.concurrency,
      transport: coordinator.status().transport,
      options: this.runtimeOptions.cluster,
      events: this.events,
      logger: c.logger.child({ nodeId: c.nodeId }),
      clock: c.clock,
      typeDefaults: (type) => this.hooks?.typeDefaults(type),
      maxPayloadBytes: c.maxPayloadBytes,
      afterEnqueue: (jobs) => void this.hooks?.afterEnqueue(jobs, undefined),
      // Heartbeats get their own connection unless the caller brought the pool.
      ...(c.pool === undefined ? { heartbeatConnectionString: c.connectionString } : {}),
    });
    await cluster.prepare();
    if (this.runtime || this.stopping) {
      await cluster.stop();
      return;
    }
    this.clusterRef = cluster;
    this.runtime = new NodeRuntime({
      nodeId: c.nodeId,
      concurrency: c.concurrency,
      prefetch: c.prefetch,
      claimMode: c.claimMode,
      boostIntervalMs: c.boostIntervalMs,
      completionFlushMs: c.completionFlushMs,
      options: this.runtimeOptions,
      store: this.store,
      types: this.types,
      events: this.events,
      logger: c.logger.child({ nodeId: c.nodeId }),
      clock: c.clock,
      coordinator,
      queues: c.queues,
      createClaimer: (options) =>
        c.claimCursors
          ? new CursorClaimer({
              ...options,
              discoveryMs: c.claimCursorDiscoveryMs,
              fullDiscoveryMs: c.claimCursorFullDiscoveryMs,
              fullDiscoveryMaxMs: c.claimCursorFullDiscoveryMaxMs,
            })
          : new ClassicClaimer(options),
    });
    this.runtime.start();
    cluster.start();
    // Times out parked signal waits (docs/composition.md#signals).
    this.signalSweeper = new SignalSweeper({ deps: this.composition, clock: c.clock });
    this.signalSweeper.start();
    // A node declared dead by the others (it missed heartbeats) has had its jobs recovered: the ones
    // still waiting in its buffer would run a second time, so they are dropped.
    const offDead = this.events.on("cluster:heartbeat", (e) => {
      if (e.wasDeclaredDead) this.runtime?.dropBuffered("this node was declared dead by the cluster");
    });
    // Recovered orphans are PENDING again under their old ids and scheduled times, where only a full pass
    // of the claim cursors sees them (an idle node backs its full pass off to a minute): look now.
    const offRecovered = this.events.on("cluster:orphans-recovered", () => {
      this.hooks?.afterRelease?.();
      this.runtime?.wake("local");
    });
    this.offClusterEvents = () => {
      offDead();
      offRecovered();
    };
    // pawl's timers are unref'd so they never hold a host process open on their own; a started node,
    // like a listening server, keeps its process alive until stop(), even while the database is down.
    this.keepAlive = setInterval(() => {}, 3_600_000);
    this.events.emit("node:started", { nodeId: c.nodeId });
  }

  /**
   * Drains the node: no more claims; running jobs get `graceMs` to finish, then are aborted and handed
   * back (PENDING, attempt not counted; CANCELED stays CANCELED). A second call aborts at once.
   */
  async stop(options: StopOptions = {}): Promise<void> {
    const graceMs = options.graceMs ?? 25_000;
    if (this.stopping) {
      void this.runtime?.stop(0);
      return this.stopping;
    }
    this.stopping = (async () => {
      // Maintenance stops first; the heartbeat goes on until the drain is over, so a long grace is not
      // mistaken for a death, and the node leaves the cluster once its last outcome is written.
      await this.clusterRef?.stopMaintenance();
      await this.signalSweeper?.stop();
      const aborted = this.runtime ? await this.runtime.stop(graceMs) : 0;
      await this.clusterRef?.stop();
      const coordinator = this.coordinator;
      this.coordinator = null;
      this.coordinatorReady = null;
      if (coordinator) await (await coordinator).close().catch(() => {});
      this.offClusterEvents?.();
      if (this.keepAlive) clearInterval(this.keepAlive);
      this.keepAlive = null;
      this.events.emit("node:stopped", { nodeId: this.nodeId, aborted });
    })();
    return this.stopping;
  }

  /** Stops the node (if started, with no grace) and closes the pool. Idempotent. */
  override async close(): Promise<void> {
    if (this.closed) return;
    if (this.runtime || this.coordinator) await this.stop({ graceMs: 0 });
    this.offConnectionFaults();
    await super.close();
  }

  /** A JSON-serialisable tree of every live actor of this node (see docs/machines). */
  inspect(): ActorTree | null {
    return this.runtime ? inspectNode(this.runtime) : null;
  }

  /**
   * Registers a recurring job: each fire of `cron` (in `options.timezone`, default UTC) enqueues one job of
   * `options.type` (default: `name`) with `payload`, exactly once across the cluster. Registering the same
   * name again updates it (keeping its next fire when the cron and zone are unchanged), so every node may
   * call it at boot. Fires missed while no node ran follow `options.missedFirePolicy` (`catch-up-one` by
   * default, or `skip`). Works without start(); the fires happen on started nodes.
   *
   * @throws ValidationError `INVALID_CRON` for a bad expression or time zone (nothing is written), or as
   *   enqueue for a bad type, priority or payload.
   *
   * @example
   * ```ts
   * await pawl.schedule("nightly-report", "0 3 * * *", { format: "pdf" }, { timezone: "Europe/Paris" });
   * ```
   */
  async schedule(
    name: string,
    cron: string,
    payload?: unknown,
    options?: ScheduleOptions,
  ): Promise<Schedule> {
    this.assertOpen();
    const schedule = await registerSchedule(
      this.store.pool,
      this.store.tables,
      name,
      cron,
      payload,
      options,
      {
        typeDefaults: (type) => this.hooks?.typeDefaults(type),
        maxPayloadBytes: this.config.maxPayloadBytes,
      },
    );
    this.clusterRef?.triggerRecurring();
    return schedule;
  }

  /** Removes a recurring job; returns whether it existed. Children already enqueued are kept. */
  async unschedule(name: string): Promise<boolean> {
    this.assertOpen();
    return unregisterSchedule(this.store.pool, this.store.tables, name);
  }

  /** Every recurring job, by name, with its next fire time. */
  async listSchedules(): Promise<Schedule[]> {
    this.assertOpen();
    return listSchedules(this.store.pool, this.store.tables);
  }

  /**
   * The cluster as this node sees it: every node row (heartbeat age by the database's clock, alive or
   * not), the maintenance leases and their holders, and this node's latest clock skew reading.
   *
   * @example
   * ```ts
   * const { nodes, leases, clockSkew } = await pawl.cluster();
   * console.log(nodes.filter((n) => n.alive).map((n) => n.nodeId), clockSkew?.skewMs);
   * ```
   */
  async cluster(): Promise<ClusterView> {
    this.assertOpen();
    if (this.clusterRef) return this.clusterRef.view();
    return readClusterView(
      this.store.pool,
      this.store.tables,
      this.nodeId,
      this.runtimeOptions.cluster.deadNodeThresholdMs,
      null,
    );
  }

  /** @internal The cluster services of a started node (tests, observability); null before start(). */
  get clusterServices(): ClusterServices | null {
    return this.clusterRef;
  }

  /** @internal The running node runtime (tests, observability). */
  get nodeRuntime(): NodeRuntime | null {
    return this.runtime;
  }

  private ensureCoordinator(): Promise<Coordinator> {
    if (!this.coordinator) {
      const c = this.config;
      this.coordinator = createCoordinator(c.coordinator, {
        nodeId: c.nodeId,
        connectionString: c.connectionString,
        schema: c.schema,
        logger: c.logger,
        clock: c.clock,
      }).then(async (coordinator) => {
        // Subscribed before start(), so the first `connected` is seen too. Hints that arrive before the
        // runtime exists have nothing to wake and are dropped.
        coordinator.onWakeup((hint) => this.runtime?.handleHint(hint));
        coordinator.on("connected", () => {
          this.events.emit("coordinator:connected", { transport: coordinator.status().transport });
          // Hints sent while disconnected are gone: poll once to catch up.
          this.runtime?.wake("coordinator");
        });
        coordinator.on("disconnected", (error) =>
          this.events.emit("coordinator:disconnected", {
            transport: coordinator.status().transport,
            error: String(error),
          }),
        );
        await coordinator.start();
        this.coordinatorReady = coordinator;
        return coordinator;
      });
    }
    return this.coordinator;
  }

  /**
   * The notify to send from the insert statement itself, when the enqueue is urgent and the coordinator
   * can fold (postgres): the other nodes hear of the job as it commits, a round trip sooner.
   */
  private foldWakeup(jobs: readonly NewJob[], transactional: boolean): FoldedNotify | undefined {
    const coordinator = this.coordinatorReady;
    if (!coordinator?.foldNotify || this.stopping) return undefined;
    const now = Date.now();
    const hint = urgentHint(
      jobs.map((j) => hintJobOfNew(j, now)),
      this.nodeId,
    );
    return hint ? coordinator.foldNotify(hint, transactional) : undefined;
  }

  private async afterEnqueue(
    jobs: readonly EnqueuedJob[],
    tx: Queryable | undefined,
    folded: boolean,
    released: boolean,
  ): Promise<void> {
    const now = Date.now();
    const fresh = jobs.filter((j) => j.inserted && j.status === "PENDING").map((j) => hintJobOfRow(j, now));
    if (fresh.length === 0) return;
    if (this.runtime && fresh.some((j) => j.due && this.types.has(j.type))) this.runtime.wake("local");
    // Delayed jobs this node runs: it knows when they come due, and looks then (src/logic/due-times.ts).
    this.runtime?.noteDue(
      jobs
        .filter((j) => j.inserted && j.status === "PENDING" && this.types.has(j.type))
        .map((j) => ({ priority: j.priority, inMs: j.scheduledTime.getTime() - now })),
    );
    if (folded || this.stopping) return;
    const urgent = urgentHint(fresh, this.nodeId);
    if (!urgent) return;
    const hint = released ? { ...urgent, released: true } : urgent;
    if (tx) {
      const coordinator = await this.ensureCoordinator();
      const stmt = coordinator.inTransaction?.(hint);
      if (stmt) {
        // Delivered at commit, and never if the caller rolls back.
        await tx.query(stmt.text, stmt.values);
        return;
      }
    }
    this.ensureCoordinator().then(
      (c) => c.notifyNewWork(hint),
      (error: unknown) => this.events.emit("error", { where: "coordinator", error: toError(error) }),
    );
  }

  private afterCancel(result: CancelResult): void {
    if (result.outcome !== "running-canceled") return;
    this.runtime?.canceledHere(result);
    if (result.job.pickedBy === this.nodeId) return;
    this.ensureCoordinator().then(
      (c) => c.notifyNewWork({ kind: "cancel", jobId: result.job.id, priority: 0, source: this.nodeId }),
      (error: unknown) => this.events.emit("error", { where: "coordinator", error: toError(error) }),
    );
  }
}
