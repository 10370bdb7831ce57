/**
 * {@link Pawl}: the enqueue API plus the node runtime. register() adds job types, start() builds the
 * actor tree and joins the cluster, stop() drains. Enqueues wake the local poller and, for urgent work,
 * publish a hint through the coordinator so other nodes wake too.
 */
import type { Coordinator, WakeupHint } from "../coordinators/spi.js";
import type { PawlConfig } from "./config.js";
import type { EnqueuedJob } from "./store/enqueue-jobs.js";
import type { CancelResult } from "./store/cancel-job.js";
import type { Queryable } from "./store/sql.js";
import { PawlError } from "./errors.js";
import { PawlEventEmitter, toError, type PawlEventName, type PawlEvents } from "./events.js";
import { PawlClient } from "./pawl.js";
import { priorities } from "./priority.js";
import { NodeRuntime } from "./runtime/node-runtime.js";
import { resolveJobType, typeDefaults, type Handler, type JobType, type RegisterOptions } from "./runtime/registry.js";
import { resolveRuntimeOptions, type ResolvedRuntimeOptions } from "./runtime/runtime-config.js";
import { inspectNode, type ActorTree } from "./runtime/inspect.js";
import { createCoordinator, parseCoordinatorSpec } from "../coordinators/index.js";
import { ClassicClaimer } from "./store/claimer.js";

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
  private stopping: Promise<void> | null = null;

  constructor(config: PawlConfig = {}) {
    super(config);
    this.runtimeOptions = resolveRuntimeOptions(this.config.runtime, this.config.pollIntervalMs);
    if (typeof this.config.coordinator === "string") parseCoordinatorSpec(this.config.coordinator);
    this.hooks = {
      typeDefaults: (type) => {
        const t = this.types.get(type);
        return t ? typeDefaults(t) : undefined;
      },
      afterEnqueue: (jobs, tx) => this.afterEnqueue(jobs, tx),
      afterCancel: (result) => this.afterCancel(result),
    };
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
   */
  register<P = unknown, R = unknown>(type: string, handler: Handler<P, R>, options?: RegisterOptions<P>): this {
    this.assertOpen();
    const t = resolveJobType(type, handler, options as RegisterOptions);
    this.types.set(type, t);
    return this;
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
      createClaimer: (options) => new ClassicClaimer(options),
    });
    this.runtime.start();
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
      const aborted = this.runtime ? await this.runtime.stop(graceMs) : 0;
      const coordinator = this.coordinator;
      this.coordinator = null;
      if (coordinator) await (await coordinator).close().catch(() => {});
      this.events.emit("node:stopped", { nodeId: this.nodeId, aborted });
    })();
    return this.stopping;
  }

  /** Stops the node (if started, with no grace) and closes the pool. Idempotent. */
  override async close(): Promise<void> {
    if (this.closed) return;
    if (this.runtime || this.coordinator) await this.stop({ graceMs: 0 });
    await super.close();
  }

  /** A JSON-serialisable tree of every live actor of this node (see docs/machines). */
  inspect(): ActorTree | null {
    return this.runtime ? inspectNode(this.runtime) : null;
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
        await coordinator.start();
        return coordinator;
      });
    }
    return this.coordinator;
  }

  private async afterEnqueue(jobs: readonly EnqueuedJob[], tx: Queryable | undefined): Promise<void> {
    const fresh = jobs.filter((j) => j.inserted && j.status === "PENDING");
    if (fresh.length === 0) return;
    const now = Date.now();
    const due = fresh.filter((j) => j.scheduledTime.getTime() <= now + 5);
    if (this.runtime && due.some((j) => this.types.has(j.type))) this.runtime.wake("local");
    // The reference's triggers: critical priority, or a single job enqueued to run now.
    const critical = fresh.filter((j) => j.priority >= priorities.critical);
    const urgent = critical.length > 0 || (fresh.length === 1 && due.length === 1);
    if (!urgent || this.stopping) return;
    const targets = new Set(fresh.map((j) => j.type));
    const hint: WakeupHint = {
      priority: Math.max(...fresh.map((j) => j.priority)),
      source: this.nodeId,
      ...(targets.size === 1 ? { target: fresh[0]!.type } : {}),
    };
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
    this.runtime?.cancelRequested(result.job.id);
    if (result.job.pickedBy === this.nodeId) return;
    this.ensureCoordinator().then(
      (c) => c.notifyNewWork({ kind: "cancel", jobId: result.job.id, priority: 0, source: this.nodeId }),
      (error: unknown) => this.events.emit("error", { where: "coordinator", error: toError(error) }),
    );
  }
}
