/**
 * {@link Pawl}: the node, a {@link PawlClient} that also runs jobs. register() adds job types, start()
 * builds the actor tree (src/node/node-runtime.ts) and joins the cluster, stop() drains. What the
 * client's writes do to running work (wake the local poller, hint the other nodes through the
 * coordinator) is in src/api/node-hooks.ts, handed to the client at construction with the one resolved config.
 */
import { durableServices } from "../composition/durable/durable-services.js";
import { attemptTracer } from "../node/attempt/attempt-spans.js";
import { traceOutcomeWrites } from "../node/internal-spans.js";
import { resolveConfig, type PawlConfig } from "../input/config.js";
import { usesEmbeddedDatabase } from "../input/embedded-config.js";
import { checkIsolation } from "./isolation-check.js";
import { onConnectionFault } from "../db/held-client.js";
import { PawlError, SchemaVersionError } from "../core/errors.js";
import { PawlEventEmitter, type PawlEventName, type PawlEvents } from "../core/events.js";
import { PawlClient } from "./client.js";
import { NodeHooks } from "./node-hooks.js";
import { NodeRuntime } from "../node/node-runtime.js";
import { resolveJobType, type Handler, type JobType, type RegisterOptions } from "../node/registry.js";
import { inspectNode, type ActorTree } from "../node/inspect.js";
import { parseCoordinatorSpec } from "../../coordinators/index.js";
import type { Coordinator } from "../../coordinators/spi.js";
import { ClusterServices, readClusterView, type ClusterView } from "../cluster/cluster-services.js";
import { buildNodeRegistry } from "../cluster/heartbeat.js";
import {
  listSchedules,
  registerSchedule,
  unregisterSchedule,
  type Schedule,
  type ScheduleOptions,
} from "../cluster/recurring.js";
import { ClassicClaimer } from "../store/claim/claimer.js";
import { CursorClaimer } from "../store/claim/claim-cursor.js";
import { startNodeServices, type NodeServices } from "./node-services.js";
import type { AnyStateMachine } from "xstate";
import { MachineRegistry } from "../node/machines/machine-registry.js";
import { runMachine } from "../node/machines/machine-runner.js";
import { MachineInspection } from "../node/machines/machine-inspection.js";
import type { IsTyped, PawlTasks, TaskName, TaskPayload, TaskResult, TypedEvent } from "../input/task-map.js";
import type { HealthReport } from "../logic/health.js";
import { HealthProbe, type HealthOptions } from "./node-health.js";

/**
 * The payload a handler of `K` receives: the task map's, else `P` (from the handler's annotation or the
 * type's Standard Schema); without a map, `P`.
 */
export type HandlerPayload<Tasks, K, P> = IsTyped<Tasks> extends true ? TaskPayload<Tasks, K, P> : P;
/** What a handler of `K` must return: the task map's result, else `R`; without a map, `R`. */
export type HandlerResult<Tasks, K, R> = IsTyped<Tasks> extends true ? TaskResult<Tasks, K, R> : R;

/** The payload of a schedule's children of type `K`: the task map's, or anything without a map. */
export type ScheduledPayload<Tasks, K> = IsTyped<Tasks> extends true ? TaskPayload<Tasks, K> : unknown;

/**
 * The arguments of {@link Pawl.schedule} after the cron when the schedule's name is its children's type:
 * the payload (required when the task map's payload does not accept undefined) and the options.
 */
export type ScheduleArgs<Tasks, K> =
  undefined extends ScheduledPayload<Tasks, K>
    ? [payload?: ScheduledPayload<Tasks, K>, options?: Omit<ScheduleOptions, "type"> & { type?: K }]
    : [payload: ScheduledPayload<Tasks, K>, options?: Omit<ScheduleOptions, "type"> & { type?: K }];

/** Options of {@link Pawl.stop}. */
export interface StopOptions {
  /** How long running jobs may take to finish before they are aborted (ms). Default 25,000. */
  graceMs?: number;
}

/** Options of {@link Pawl.registerMachine}: the job type's options, and the machine's version. */
export interface MachineOptions extends Omit<RegisterOptions, "validate" | "rateLimit" | "__payload"> {
  /**
   * The definition's version (a non-negative integer or a short name; default 1). A job keeps the version
   * it started with while that version is registered on the node that runs it.
   */
  version?: string | number;
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
export class Pawl<Tasks extends object = PawlTasks> extends PawlClient<Tasks> {
  /** The typed event stream (jobs, polls, claims, breakers, coordinator). */
  readonly events: PawlEventEmitter;
  private readonly types: Map<string, JobType>;
  /** The client hooks this node installed, and the coordinator they publish through. */
  private readonly node: NodeHooks;
  private runtime: NodeRuntime | null = null;
  private stopping: Promise<void> | null = null;
  private keepAlive: NodeJS.Timeout | null = null;
  private clusterRef: ClusterServices | null = null;
  /** The sweep, the lease audit and the event wiring of a started node (./node-services.ts). */
  private services: NodeServices | null = null;
  private machineRegistry: MachineRegistry | null = null;
  /** The machines this node runs, as the inspection views see them (their definitions from the registry). */
  private readonly machineInspection = new MachineInspection(
    (type, version) => this.machineRegistry?.definition(type, version)?.machine.config,
  );
  /** Forwards the pool's survived connection faults as `database:connection-error` events (metrics). */
  private readonly offConnectionFaults: () => void;
  /** Follows the heartbeat and the polls for {@link Pawl.health}. */
  private readonly healthProbe: HealthProbe;

  /**
   * @deprecated Use `createPawl(config)`, the one documented way to make a node; this constructor stays
   *   for existing code and will be removed in a later major release.
   */
  constructor(config: PawlConfig = {}) {
    // Resolved once, here, and handed to the client with the hooks, which must exist before it does.
    const resolved = resolveConfig(config);
    // A bad coordinator spec fails at construction, not at the first enqueue or start().
    if (typeof resolved.coordinator === "string") parseCoordinatorSpec(resolved.coordinator);
    const types = new Map<string, JobType>();
    const events = new PawlEventEmitter();
    const node = new NodeHooks({ config: resolved, types, events });
    super(config, { config: resolved, hooks: node });
    this.types = types;
    this.events = events;
    this.node = node;
    this.healthProbe = new HealthProbe(events, resolved.clock);
    this.offConnectionFaults = onConnectionFault(this.pool, (fault) =>
      this.events.emit("database:connection-error", fault),
    );
    // A node never hears its own completion notices: its outcomes wake this instance's waiters directly.
    node.onFinished({ wanted: () => this.hasWaiters, wake: (ids) => this.finishedHere(ids) });
  }

  /** waitFor listens to the node's own coordinator (one connection for wakeups and notices). */
  protected override waitCoordinator(): Promise<Coordinator | null> {
    return this.node.coordinator();
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
   * With a task map, the type must be one of its names and the handler takes its payload and returns its
   * result; a Standard Schema as `validate` types the payload where the map does not.
   *
   * @throws ValidationError for a bad type name or option.
   * @throws PawlError `INVALID_STATE` after stop(): a stopped node never claims again, so the handler could
   *   never run.
   */
  register<P = unknown, R = unknown, K extends TaskName<Tasks> = TaskName<Tasks>>(
    type: K,
    handler: Handler<HandlerPayload<Tasks, K, P>, HandlerResult<Tasks, K, R>>,
    options?: RegisterOptions<HandlerPayload<Tasks, K, P>>,
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

  /**
   * Registers an xstate v5 machine as the handler of a job type: a durable machine
   * (docs/durable-machines.md). `enqueue(type, input)` starts one with the payload as the machine's
   * `input`; `send(jobId, event)` delivers events to it from any process. While it has work (an invoked
   * promise running) it runs on a node like any job; once it only waits for events or timers, its
   * persisted snapshot is saved and the job parks (WAITING: no slot, no connection, no node). `after`
   * delays are durable timers; invoked promise actors run as durable steps; a final state ends the job
   * SUCCEEDED with the machine's `output`. Invoke actors by name (`setup({ actors })`).
   *
   * Registering the type again with another `version` adds that definition and makes it the one new jobs
   * start on; a job stays on the version it started with while that version is registered.
   *
   * @throws ValidationError for a bad type name, option or version, or a machine that invokes an inline
   *   actor.
   * @example
   * ```ts
   * const order = setup({ actors: { charge: fromPromise(async ({ input }) => chargeCard(input)) } }).createMachine({
   *   id: "order", initial: "awaitingPayment",
   *   states: {
   *     awaitingPayment: { on: { PAY: "charging" }, after: { 86_400_000: "canceled" } },
   *     charging: { invoke: { src: "charge", onDone: "paid", onError: "awaitingPayment" } },
   *     paid: { type: "final" },
   *     canceled: { type: "final" },
   *   },
   * });
   * pawl.registerMachine("order", order, { version: 1 });
   * ```
   */
  registerMachine(type: string, machine: AnyStateMachine, options: MachineOptions = {}): this {
    this.assertOpen();
    const { version, ...typeOptions } = options;
    const def = MachineRegistry.define(type, machine, version);
    const registry = (this.machineRegistry ??= new MachineRegistry());
    const deps = { store: this.machines, registry, inspection: this.machineInspection };
    const handler: Handler = (payload, ctx) => runMachine(deps, type, payload, ctx);
    // The handler reads the registry on every run, so a later version only adds a definition.
    if (!registry.has(type)) this.register(type as never, handler as never, typeOptions as never);
    registry.add(def);
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

  /**
   * Subscribes to an event; returns the unsubscribe function. With a task map, the job types the payload
   * names are the map's ({@link TypedEvent}).
   */
  on<E extends PawlEventName>(name: E, listener: (payload: TypedEvent<Tasks, E>) => void): () => void {
    return this.events.on(name, listener as (payload: PawlEvents[E]) => void);
  }

  /**
   * Starts the node: the actor tree, the first poll, the coordinator. Idempotent. Checks the schema first
   * (`checkSchema()`): start() does not migrate.
   *
   * @throws SchemaVersionError when the schema lacks this release's migrations (run `pawl migrate` or
   *   `pawl.migrate()`) or a newer release applied a breaking one.
   * @throws PawlError `INVALID_CONFIG` when statements on the pool run above read committed (a pool
   *   without pawl's session settings, on a role whose default is repeatable read or serializable).
   * @throws NodeIdInUseError when a live process runs under this node id.
   */
  async start(): Promise<void> {
    this.assertOpen();
    if (this.stopping) throw new PawlError("INVALID_STATE", "this node was stopped; create a new instance");
    if (this.runtime) return;
    // The coordinator first: a transport whose client is not installed is a configuration error, reported
    // before anything reads the database. Then a release the schema does not fit refuses, naming what to run.
    const coordinator = await this.node.coordinator();
    await this.checkSchema();
    await checkIsolation(this.pool);
    // Before the first claim: sends from any process accept these types' jobs from now on (migration 0021).
    if (this.machineRegistry) await this.machines.recordTypes(this.machineRegistry.typeNames());
    const c = this.config;
    // Without @opentelemetry/api installed the load answers null, and the node has no tracer at all.
    const tracing = this.tracing && (await this.tracing.ready()) ? this.tracing : null;
    // Join the cluster before claiming: first heartbeat, then recovery of this node id's previous run.
    const cluster = new ClusterServices({
      store: this.store,
      nodeId: c.nodeId,
      freshNodeId: c.nodeIdGenerated,
      concurrency: c.concurrency,
      transport: coordinator.status().transport,
      options: c.runtimeOptions.cluster,
      events: this.events,
      logger: c.logger.child({ nodeId: c.nodeId }),
      clock: c.clock,
      typeDefaults: (type) => this.node.typeDefaults(type),
      maxPayloadBytes: c.maxPayloadBytes,
      tracing,
      afterEnqueue: (jobs) => void this.node.afterEnqueue(jobs, undefined),
      registry: () =>
        buildNodeRegistry({
          types: this.types.values(),
          tree: this.inspect(),
          concurrency: c.concurrency,
          resources: c.runtimeOptions.resources,
          queueRateLimits: c.runtimeOptions.queueRateLimits,
          defaultTimeoutMs: c.runtimeOptions.defaultTimeoutMs,
          breakerOpenMs: (service) => c.runtimeOptions.breakerFor(service).openMs,
        }),
      // A newer release recorded a breaking migration: this node stops itself cleanly (drains, hands
      // back what it buffered, deletes its row); the heartbeat has logged why.
      onIncompatibleSchema: (found) => {
        this.events.emit("error", {
          where: "schema check",
          error: new SchemaVersionError(
            "SCHEMA_INCOMPATIBLE",
            `schema migration ${found.newestBreaking} is incompatible with this release (it knows up to ` +
              `${found.releaseVersion}): the node stopped; deploy the newer release`,
            { schemaVersion: found.schemaVersion, requiredVersion: found.releaseVersion },
          ),
        });
        void this.stop().catch(() => {});
      },
      // Heartbeats get their own connection unless the caller brought the pool.
      ...(c.pool === undefined ? { heartbeatConnectionString: c.connectionString } : {}),
      // The node id's session lock needs a session of its own on PostgreSQL itself: the direct connection,
      // or the main one unless it goes through a transaction pooler (unprepared statements).
      ...(usesEmbeddedDatabase(c.pool, c.connectionString)
        ? {}
        : nodeIdLockUrl(c.directConnectionString, c.preparedStatements ? c.connectionString : undefined)),
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
      options: c.runtimeOptions,
      store: tracing?.options.internals ? traceOutcomeWrites(tracing, this.store) : this.store,
      types: this.types,
      events: this.events,
      logger: c.logger.child({ nodeId: c.nodeId }),
      clock: c.clock,
      coordinator,
      queues: c.queues,
      durable: durableServices(this.composition),
      machines: this.machineInspection,
      tracer: tracing ? attemptTracer(tracing, c.nodeId) : null,
      createClaimer: (options) =>
        c.claimCursors
          ? new CursorClaimer({
              ...options,
              store: this.store,
              discoveryMs: c.claimCursorDiscoveryMs,
              fullDiscoveryMs: c.claimCursorFullDiscoveryMs,
              fullDiscoveryMaxMs: c.claimCursorFullDiscoveryMaxMs,
            })
          : new ClassicClaimer(options),
    });
    this.node.attach(this.runtime);
    this.runtime.start();
    cluster.start();
    this.services = startNodeServices({
      config: c,
      composition: this.composition,
      store: this.store,
      events: this.events,
      runtime: this.runtime,
      node: this.node,
      tracing,
      runsMachines: this.machineRegistry !== null,
    });
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
    this.node.quiesce();
    this.stopping = (async () => {
      // Maintenance stops first; the heartbeat goes on until the drain is over, so a long grace is not
      // mistaken for a death, and the node leaves the cluster once its last outcome is written.
      await this.clusterRef?.stopMaintenance();
      await this.services?.stopSweeps();
      const aborted = this.runtime ? await this.runtime.stop(graceMs) : 0;
      await this.clusterRef?.stop();
      await this.node.closeCoordinator();
      this.services?.off();
      if (this.keepAlive) clearInterval(this.keepAlive);
      this.keepAlive = null;
      this.events.emit("node:stopped", { nodeId: this.nodeId, aborted });
    })();
    return this.stopping;
  }

  /** Stops the node (if started, with no grace) and closes the pool. Idempotent. */
  override async close(): Promise<void> {
    if (this.closed) return;
    if (this.runtime || this.node.hasCoordinator) await this.stop({ graceMs: 0 });
    this.offConnectionFaults();
    this.healthProbe.close();
    await super.close();
  }

  /**
   * The node's health: each check (database reachable, heartbeat age, claim loop alive, outcome backlog,
   * coordinator) and the verdicts a readiness and a liveness probe need. A stopping node is not ready.
   * Never rejects. Served as `/readyz` and `/healthz` by `serveMetrics` and `healthHandler`
   * (docs/observability.md#health).
   *
   * @example
   * ```ts
   * const report = await pawl.health();
   * if (!report.ready) console.warn(report.checks);
   * ```
   */
  async health(options?: HealthOptions): Promise<HealthReport> {
    const c = this.config.runtimeOptions.cluster;
    // Only a started node's: start() awaited it, so this never waits on a transport that is connecting.
    const started = this.runtime !== null && this.node.hasCoordinator;
    const coordinator = started ? await this.node.coordinator().catch(() => null) : null;
    return this.healthProbe.report(
      {
        pool: this.pool,
        state: this.stopping !== null ? "stopping" : this.runtime !== null ? "running" : "client",
        runtime: this.runtime,
        coordinator,
        heartbeatIntervalMs: c.heartbeatIntervalMs,
        deadNodeThresholdMs: c.deadNodeThresholdMs,
      },
      options,
    );
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
  schedule<K extends TaskName<Tasks>>(
    name: K,
    cron: string,
    ...rest: ScheduleArgs<Tasks, K>
  ): Promise<Schedule>;
  /**
   * Registers a recurring job whose children are of `options.type`, not of the schedule's name; with a
   * task map the payload is that type's.
   *
   * @example
   * ```ts
   * await pawl.schedule("nightly", "0 3 * * *", { format: "pdf" }, { type: "report.build" });
   * ```
   */
  schedule<K extends TaskName<Tasks>>(
    name: string,
    cron: string,
    payload: ScheduledPayload<Tasks, K>,
    options: Omit<ScheduleOptions, "type"> & { type: K },
  ): Promise<Schedule>;
  async schedule(
    name: string,
    cron: string,
    payload?: unknown,
    options?: ScheduleOptions,
  ): Promise<Schedule> {
    this.assertOpen();
    const schedule = await registerSchedule(this.store, name, cron, payload, options, {
      typeDefaults: (type) => this.node.typeDefaults(type),
      maxPayloadBytes: this.config.maxPayloadBytes,
    });
    this.clusterRef?.triggerRecurring();
    return schedule;
  }

  /** Removes a recurring job; returns whether it existed. Children already enqueued are kept. */
  async unschedule(name: string): Promise<boolean> {
    this.assertOpen();
    return unregisterSchedule(this.store, name);
  }

  /** Every recurring job, by name, with its next fire time. */
  async listSchedules(): Promise<Schedule[]> {
    this.assertOpen();
    return listSchedules(this.store);
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
      this.store,
      this.nodeId,
      this.config.runtimeOptions.cluster.deadNodeThresholdMs,
      null,
    );
  }

  /** @internal The cluster services of a started node (tests, observability); null before start(). */
  get clusterServices(): ClusterServices | null {
    return this.clusterRef;
  }

  /**
   * The running node runtime, or null before start(): what `pawl/observability`'s inspector and Stately
   * bridge read. Not for application code; it stays in the declarations (not stripped as internal) as those
   * public functions take a Pawl by this member.
   */
  get nodeRuntime(): NodeRuntime | null {
    return this.runtime;
  }
}

/** The `nodeIdLockConnectionString` of ClusterServices: the direct URL, else the main one, else none. */
function nodeIdLockUrl(
  direct: string | undefined,
  main: string | undefined,
): { nodeIdLockConnectionString?: string } {
  const url = direct ?? main;
  return url === undefined ? {} : { nodeIdLockConnectionString: url };
}
