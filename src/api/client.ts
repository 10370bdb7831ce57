/**
 * {@link PawlClient}: enqueue, read, cancel and compose jobs over one schema, with no node. It runs no
 * handler and joins no cluster; `Pawl` (src/api/pawl.ts) extends it into a node and hands it the hooks that
 * make its writes wake running work (src/composition/client-hooks.ts). The compose half (flows, signals, pauses) is
 * inherited from ./client-composition.ts, which only delegates to src/composition.
 */
import { writeAction, type WriteAction } from "./write-grant.js";
import type pg from "pg";
import { coordinatorFor, resolveConfig, type PawlConfig, type ResolvedConfig } from "../input/config.js";
import { buildNewJob, type NewJob } from "../input/enqueue-input.js";
import type { ClientHooks, ClientNode } from "../composition/client-hooks.js";
import { deadLetterQueue, type DeadLetterQueue } from "./dead-letter-queue.js";
import { JobNotFoundError, PawlError, ValidationError } from "../core/errors.js";
import { createPool } from "../db/pool.js";
import { PawlTracing } from "../tracing/pawl-tracing.js";
import { traceInsert } from "../tracing/producer-spans.js";
import { PostgresJobStore } from "../store/postgres-job-store.js";
import type { EnqueuedJob } from "../store/jobs/enqueue-jobs.js";
import type { CancelResult } from "../store/jobs/cancel-job.js";
import type { ListJobsFilter } from "../store/jobs/read-jobs.js";
import type { MigrateResult } from "../store/migrations/migrate.js";
import type { SchemaVerdict } from "../logic/schema-compat.js";
import { checkSchemaVersion } from "./schema-check.js";
import { bareClientWakeup } from "./enqueue-hints.js";
import { validateJobId } from "../input/job-id.js";
import { asQueryable, type SqlClient } from "../db/sql.js";
import { readExplainFacts } from "../store/operator/explain-sql.js";
import type { Coordinator } from "../../coordinators/spi.js";
import { validateWaitForOptions, WaitRegistry, type WaitForOptions } from "./wait-for.js";
import { explainJob, type Explanation } from "../logic/explain.js";
import type { CompositionDeps } from "../composition/deps.js";
import { ClientComposition } from "./client-composition.js";
import { MachineStore } from "../store/machines/machine-store.js";
import type {
  EnqueueArgs,
  EnqueueItem,
  IsTyped,
  PawlTasks,
  TaskName,
  TaskPayload,
  TypedJob,
  UntypedTasks,
} from "../input/task-map.js";

/**
 * The enqueue and read API over one schema, without a node: for producers, scripts and the CLI. A
 * `Pawl` (what createPawl returns) is a PawlClient that also runs jobs.
 *
 * @example
 * ```ts
 * const client = new PawlClient({ connectionString: process.env.DATABASE_URL });
 * await client.migrate();
 * const job = await client.enqueue("email.send", { to: "a@b.c" }, { priority: "high" });
 * console.log((await client.getJob(job.id))?.status); // PENDING
 * await client.close();
 * ```
 */
export class PawlClient<Tasks extends object = PawlTasks> extends ClientComposition<Tasks> {
  /** The resolved configuration. */
  readonly config: ResolvedConfig;
  /** The job store (every SQL operation, on PostgreSQL), for advanced use. */
  readonly store: PostgresJobStore;
  /** The dead letter queue (its lists typed by the task map). */
  readonly dlq: DeadLetterQueue<Tasks>;
  protected readonly pool: pg.Pool;
  protected readonly writeAction: WriteAction;
  /**
   * The node's hooks; none for a bare client, whose inserts carry a NOTIFY for the nodes that LISTEN
   * (bareClientWakeup), and are otherwise found by the nodes' polls.
   */
  private readonly hooks: ClientHooks | undefined;
  private readonly ownsPool: boolean;
  protected closed = false;
  /** Every waitFor of this instance (created on first use). */
  private waits: WaitRegistry | undefined;
  /** Tracing (src/tracing), or null with `tracing: false`. */
  protected readonly tracing: PawlTracing | null;
  /** A bare client's own coordinator for waitFor's notices, connected on first use; a node uses its own. */
  private waitCoordinatorPromise: Promise<Coordinator | null> | undefined;

  /**
   * @deprecated Use `createClient(config)` (from `pawl/client` or `pawl`), the one documented way to make a
   *   client; this constructor stays for existing code and will be removed in a later major release.
   * @param config Validated here; a bad value throws `ValidationError` naming the field.
   * @param node For pawl only (a user passes none): passed by a node that extends the client: the configuration it already resolved
   *   (then `config` is not read again) and its hooks.
   */
  constructor(config: PawlConfig = {}, node?: ClientNode) {
    super();
    this.config = node?.config ?? resolveConfig(config);
    this.hooks = node?.hooks;
    this.ownsPool = this.config.pool === undefined;
    this.pool =
      this.config.pool ??
      createPool(this.config.connectionString, this.config.maxConnections, this.config.logger, "pawl", {
        sessionSettings: this.config.preparedStatements,
      });
    this.store = new PostgresJobStore(this.pool, this.config.schema, undefined, {
      succeeded: this.config.keepSucceeded ? "keep" : "delete",
      preparedStatements: this.config.preparedStatements,
    });
    this.writeAction = writeAction(this.pool, this.config.schema);
    this.dlq = deadLetterQueue<Tasks>(this.store, this.hooks, this.writeAction);
    this.tracing = this.config.tracing ? new PawlTracing(this.config.tracing) : null;
    // Loaded now, so the first enqueue need not wait for it; it never rejects.
    void this.tracing?.ready();
  }

  /** Creates or upgrades pawl's tables in the configured schema. Idempotent; safe from many nodes at once. */
  async migrate(): Promise<MigrateResult> {
    this.assertOpen();
    return this.store.migrate();
  }

  /**
   * Checks the schema against this release's migrations (what `start()` does first; the CLI too).
   * Resolves with the verdict when this release may run on it: `current`, or `ahead` when a newer release
   * applied only migrations declared compatible with older nodes (a rolling upgrade in progress).
   *
   * @throws SchemaVersionError `SCHEMA_OUTDATED` (run `pawl migrate` or `pawl.migrate()`) or
   *   `SCHEMA_INCOMPATIBLE` (deploy the newer release here), naming both versions.
   */
  async checkSchema(): Promise<SchemaVerdict> {
    this.assertOpen();
    return checkSchemaVersion(this.store, this.config.logger);
  }

  /**
   * Enqueues a job. With `options.client` the insert runs in the caller's transaction and the job exists
   * only once that commits.
   *
   * @throws ValidationError for bad input; nothing is written then.
   */
  async enqueue<P = unknown, K extends TaskName<Tasks> = TaskName<Tasks>>(
    type: K,
    ...[payload, options]: EnqueueArgs<Tasks, K, P>
  ): Promise<EnqueuedJob<IsTyped<Tasks> extends true ? TaskPayload<Tasks, K> : P, K>> {
    this.assertOpen();
    const job = buildNewJob(
      type,
      payload,
      options,
      this.hooks?.typeDefaults(type),
      this.config.maxPayloadBytes,
    );
    const [row] = await this.insert([job], options?.client);
    return row as EnqueuedJob<IsTyped<Tasks> extends true ? TaskPayload<Tasks, K> : P, K>;
  }

  /**
   * Enqueues many jobs in one round trip. Every item is validated first; one bad item rejects the call
   * and nothing is written.
   */
  async enqueueMany(
    items: readonly EnqueueItem<Tasks>[],
    options: { client?: SqlClient } = {},
  ): Promise<EnqueuedJob[]> {
    this.assertOpen();
    if (!Array.isArray(items))
      throw new ValidationError("INVALID_OPTION", "enqueueMany takes an array of jobs");
    if (items.length === 0) return [];
    const jobs = items.map((item, i) => {
      if (typeof item !== "object" || item === null) {
        throw new ValidationError("INVALID_OPTION", `enqueueMany item ${i} is not an object`);
      }
      const { type, payload, ...opts } = item as EnqueueItem<UntypedTasks>;
      try {
        return buildNewJob(type, payload, opts, this.hooks?.typeDefaults(type), this.config.maxPayloadBytes);
      } catch (error) {
        if (error instanceof PawlError) error.message = `item ${i}: ${error.message}`;
        throw error;
      }
    });
    return this.insert(jobs, options.client);
  }

  /**
   * Inserts validated jobs (in `client`'s transaction when given) and announces them: the wakeup notify
   * rides in the insert when the coordinator can fold it, else it is published afterwards.
   */
  private async insert(jobs: readonly NewJob[], client: SqlClient | undefined): Promise<EnqueuedJob[]> {
    const notify = this.hooks
      ? this.hooks.foldWakeup(jobs, client !== undefined)
      : bareClientWakeup(this.config.coordinator, this.config.schema, jobs, this.config.nodeId, Date.now());
    // Decided once per call: pg takes pawl's named statements, any other client their text (src/db/sql.ts).
    const tx = client === undefined ? undefined : asQueryable(client);
    const store = tx ? this.store.withClient(tx) : this.store;
    const rows = await traceInsert(this.tracing, jobs, (js) => store.enqueue(js, notify));
    await this.hooks?.afterEnqueue(rows, tx, {
      folded: notify !== undefined,
      keyed: jobs.some((j) => j.concurrencyKey != null),
    });
    return rows;
  }

  /**
   * Reads a job by id; null when there is none. A durable machine's job also has `machine`: its state,
   * sanitized context, pending timers and latest events.
   */
  async getJob<K extends TaskName<Tasks> = TaskName<Tasks>>(id: string): Promise<TypedJob<Tasks, K> | null> {
    this.assertOpen();
    const jobId = validateJobId(id);
    const job = await this.store.get(jobId);
    if (!job) return null;
    const machine = await this.machines.view(jobId);
    if (machine) job.machine = machine;
    return job as TypedJob<Tasks, K>;
  }

  /**
   * Why a job is (or is not) running now: `finished` (outcome, last error), `running` (node, since when,
   * heartbeat age, deadline), `orphaned` (its node is dead; when recovery is expected), or every reason
   * that holds it back, in order: paused, waiting for a signal or its flow dependencies, scheduled later,
   * no live node runs its type, its queue full on every node, its breaker open, its resource's permits all
   * held (`runnable` when none does). Node facts are as of each node's last heartbeat (docs/console.md).
   *
   * @throws JobNotFoundError when no job has this id.
   * @example
   * ```ts
   * const e = await pawl.explain(id);
   * for (const r of e.reasons) console.log(describeReason(r, e.at));
   * ```
   */
  async explain(id: string): Promise<Explanation> {
    this.assertOpen();
    const facts = await readExplainFacts(this.store, validateJobId(id), this.config.runtimeOptions.cluster);
    if (!facts) throw new JobNotFoundError(String(id));
    return explainJob(facts);
  }

  /**
   * Waits until a job is final (SUCCEEDED with its result, DEAD, or CANCELED) and resolves with it, read
   * from the store: across processes, woken by the completion notice of the node that ended it when a
   * coordinator is configured (`coordinator`, on this instance too), else by polling (100 ms backing off
   * to 2 s). Every waiter of the instance shares one listener and one batched read per wake-up. Takes an
   * id or anything with an `id` (the job `enqueue` returned). A job already final resolves at once.
   *
   * Needs the row that records the outcome: a job that succeeds with `keepSucceeded: false` leaves none,
   * so its waiter rejects with JobNotFoundError (as does one purged or pruned meanwhile).
   *
   * @throws JobNotFoundError when no job has this id (or its row disappeared while waited on).
   * @throws WaitTimeoutError (`WAIT_TIMEOUT`) after `timeoutMs`; the job is not touched.
   * @throws the signal's `reason` when `signal` aborts.
   * @throws ValidationError for a bad id or option.
   * @example
   * ```ts
   * const job = await pawl.enqueue("report.render", { month: "2030-01" });
   * const done = await pawl.waitFor(job, { timeoutMs: 30_000, signal: request.signal });
   * if (done.status === "SUCCEEDED") reply(200, done.result);
   * ```
   */
  waitFor<K extends TaskName<Tasks>>(
    job: { readonly id: string; readonly type: K },
    options?: WaitForOptions,
  ): Promise<TypedJob<Tasks, K>>;
  /** An id (or a job whose type the task map does not name): the job, typed as any of the map's types. */
  waitFor<K extends TaskName<Tasks> = TaskName<Tasks>>(
    idOrJob: string | { readonly id: string },
    options?: WaitForOptions,
  ): Promise<TypedJob<Tasks, K>>;
  async waitFor<K extends TaskName<Tasks> = TaskName<Tasks>>(
    idOrJob: string | { readonly id: string },
    options?: WaitForOptions,
  ): Promise<TypedJob<Tasks, K>> {
    this.assertOpen();
    const raw = typeof idOrJob === "object" && idOrJob !== null ? idOrJob.id : idOrJob;
    const id = validateJobId(raw);
    const opts = validateWaitForOptions(options);
    this.waits ??= new WaitRegistry({
      read: (ids) => this.store.getMany(ids),
      clock: this.config.clock,
      coordinator: () => this.waitCoordinator(),
      onError: (error) =>
        this.config.logger.warn("waitFor: a read or the coordinator failed", { error: String(error) }),
    });
    return (await this.waits.wait(id, opts)) as TypedJob<Tasks, K>;
  }

  /**
   * @internal The coordinator waitFor listens to for completion notices, or null (`coordinator: "none"`):
   * a bare client connects its own; a node overrides this with the one it already runs.
   */
  protected waitCoordinator(): Promise<Coordinator | null> {
    const c = this.config;
    this.waitCoordinatorPromise ??=
      c.coordinator === "none"
        ? Promise.resolve(null)
        : coordinatorFor(c).then(async (coordinator) => {
            await coordinator.start();
            return coordinator;
          });
    return this.waitCoordinatorPromise;
  }

  /** @internal Jobs this instance's node ended (its own notices never come back to it): wake waiters. */
  protected finishedHere(ids: readonly string[]): void {
    this.waits?.hinted(ids);
  }

  /** @internal Whether this instance has waiters (a node collects its ended jobs' ids only then). */
  protected get hasWaiters(): boolean {
    return (this.waits?.size ?? 0) > 0;
  }

  /**
   * Lists jobs, newest first. With a task map the jobs are typed like getJob's (narrow on `job.type`), and
   * a `type` filter, which must be one of the map's names, types them as that job type.
   *
   * @example
   * ```ts
   * const dead = await pawl.listJobs({ type: "email.send", status: "DEAD", limit: 10 });
   * for (const job of dead) console.log(job.payload.to, job.lastError);
   * ```
   */
  async listJobs<K extends TaskName<Tasks> = TaskName<Tasks>>(
    filter?: ListJobsFilter<K>,
  ): Promise<TypedJob<Tasks, K>[]> {
    this.assertOpen();
    return (await this.store.list(filter)) as TypedJob<Tasks, K>[];
  }

  /**
   * Cancels a job. A PENDING job becomes CANCELED; a RUNNING one becomes CANCELED too, its handler sees
   * the request in its context, and its result is discarded. A finished job is left as it is.
   *
   * @throws JobNotFoundError when no job has this id.
   */
  async cancel(id: string, reason?: string): Promise<CancelResult> {
    this.assertOpen();
    const jobId = validateJobId(id);
    const result = await this.writeAction("cancel", () => this.store.cancel(jobId, reason));
    if (!result) throw new JobNotFoundError(String(id));
    this.hooks?.afterCancel(result);
    return result;
  }

  /** @internal What the composition operations (src/composition) need; checks the instance is open. */
  protected get composition(): CompositionDeps {
    this.assertOpen();
    return {
      store: this.store,
      config: this.config,
      hooks: this.hooks,
      events: this.hooks?.events,
      tracing: this.tracing,
    };
  }

  private machineStore: MachineStore | undefined;

  /** @internal The durable machines' statements on this instance's schema (built on first use). */
  protected get machines(): MachineStore {
    this.machineStore ??= new MachineStore(this.pool, this.store.tables);
    return this.machineStore;
  }

  /** Closes the pool (if pawl created it). Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.waits?.close();
    const own = this.waitCoordinatorPromise;
    this.waitCoordinatorPromise = undefined;
    // A coordinator instance the caller passed is theirs to close; one built from a spec is ours.
    if (own && typeof this.config.coordinator === "string") await own.then((c) => c?.close()).catch(() => {});
    if (this.ownsPool) await this.pool.end();
  }

  protected assertOpen(): void {
    if (this.closed) throw new PawlError("CLOSED", "this pawl instance is closed");
  }
}
