/**
 * The public face of pawl: createPawl() returns a {@link Pawl} that enqueues, inspects and cancels jobs,
 * and (once handlers are registered and start() is called) runs them as a node of the cluster.
 */
import type pg from "pg";
import { resolveConfig, type PawlConfig, type ResolvedConfig } from "./config.js";
import { buildNewJob, type EnqueueOptions, type TypeDefaults } from "./enqueue-input.js";
import { JobNotFoundError, PawlError, ValidationError } from "./errors.js";
import { createPool } from "./store/pool.js";
import { JobStore } from "./store/job-store.js";
import type { EnqueuedJob } from "./store/enqueue-jobs.js";
import type { Job } from "./store/job-row.js";
import type { CancelResult } from "./store/cancel-job.js";
import type { ListJobsFilter } from "./store/read-jobs.js";
import type { DeadLetterFilter } from "./store/dead-letter.js";
import type { MigrateResult } from "./store/migrate.js";
import { validateJobId } from "./store/job-id.js";
import type { Queryable } from "./store/sql.js";

/** One item of {@link Pawl.enqueueMany}: a job type, its payload, and the options of enqueue. */
export type EnqueueItem = { type: string; payload?: unknown } & Omit<EnqueueOptions, "client">;

/** The dead letter queue API. */
export interface DeadLetterQueue {
  /** DEAD jobs, newest first. */
  list(filter?: DeadLetterFilter): Promise<Job[]>;
  /** Sends DEAD jobs back to PENDING with attempts reset; returns those that were DEAD. */
  retry(ids: string | readonly string[]): Promise<Job[]>;
  /** Deletes DEAD jobs matching the filter; returns how many. */
  purge(filter?: DeadLetterFilter): Promise<number>;
}

/**
 * Hooks the runtime installs on a Pawl: type defaults for enqueue, and what to do after jobs were
 * enqueued or canceled (wake the local poller, publish a hint).
 */
export interface PawlHooks {
  typeDefaults(type: string): TypeDefaults | undefined;
  afterEnqueue(jobs: readonly EnqueuedJob[], inTransaction: Queryable | undefined): Promise<void>;
  afterCancel(result: CancelResult): void;
}

/**
 * A pawl instance: the enqueue API over one schema, and the node runtime.
 *
 * @example
 * ```ts
 * const pawl = createPawl({ connectionString: process.env.DATABASE_URL });
 * await pawl.migrate();
 * const job = await pawl.enqueue("email.send", { to: "a@b.c" }, { priority: "high" });
 * console.log((await pawl.getJob(job.id))?.status); // PENDING
 * await pawl.close();
 * ```
 */
export class PawlClient {
  /** The resolved configuration. */
  readonly config: ResolvedConfig;
  /** The job store (every SQL operation), for advanced use. */
  readonly store: JobStore;
  /** The dead letter queue. */
  readonly dlq: DeadLetterQueue;
  protected readonly pool: pg.Pool;
  protected hooks: PawlHooks | undefined;
  private readonly ownsPool: boolean;
  protected closed = false;

  constructor(config: PawlConfig = {}) {
    this.config = resolveConfig(config);
    this.ownsPool = this.config.pool === undefined;
    this.pool =
      this.config.pool ??
      createPool(this.config.connectionString, this.config.maxConnections, this.config.logger, "pawl");
    this.store = new JobStore(this.pool, this.config.schema);
    this.dlq = {
      list: (f) => this.store.listDead(f),
      retry: async (ids) => {
        const list = (typeof ids === "string" ? [ids] : ids).map(validateJobId);
        const jobs = await this.store.retryDead(list);
        await this.hooks?.afterEnqueue(
          jobs.map((j) => ({ ...j, inserted: true })),
          undefined,
        );
        return jobs;
      },
      purge: (f) => this.store.purgeDead(f),
    };
  }

  /** Creates or upgrades pawl's tables in the configured schema. Idempotent; safe from many nodes at once. */
  async migrate(): Promise<MigrateResult> {
    this.assertOpen();
    return this.store.migrate();
  }

  /**
   * Enqueues a job. With `options.client` the insert runs in the caller's transaction and the job exists
   * only once that commits.
   *
   * @throws ValidationError for bad input; nothing is written then.
   */
  async enqueue<P = unknown>(type: string, payload?: P, options?: EnqueueOptions): Promise<EnqueuedJob<P>> {
    this.assertOpen();
    const job = buildNewJob(type, payload, options, this.hooks?.typeDefaults(type), this.config.maxPayloadBytes);
    const db = options?.client;
    const [row] = await this.store.enqueue([job], db ?? this.pool);
    const out = row as EnqueuedJob<P>;
    await this.hooks?.afterEnqueue([out], db);
    return out;
  }

  /**
   * Enqueues many jobs in one round trip. Every item is validated first; one bad item rejects the call
   * and nothing is written.
   */
  async enqueueMany(items: readonly EnqueueItem[], options: { client?: Queryable } = {}): Promise<EnqueuedJob[]> {
    this.assertOpen();
    if (!Array.isArray(items)) throw new ValidationError("INVALID_OPTION", "enqueueMany takes an array of jobs");
    if (items.length === 0) return [];
    const jobs = items.map((item, i) => {
      if (typeof item !== "object" || item === null) {
        throw new ValidationError("INVALID_OPTION", `enqueueMany item ${i} is not an object`);
      }
      const { type, payload, ...opts } = item;
      try {
        return buildNewJob(type, payload, opts, this.hooks?.typeDefaults(type), this.config.maxPayloadBytes);
      } catch (error) {
        if (error instanceof PawlError) error.message = `item ${i}: ${error.message}`;
        throw error;
      }
    });
    const rows = await this.store.enqueue(jobs, options.client ?? this.pool);
    await this.hooks?.afterEnqueue(rows, options.client);
    return rows;
  }

  /** Reads a job by id; null when there is none. */
  async getJob(id: string): Promise<Job | null> {
    this.assertOpen();
    return this.store.get(validateJobId(id));
  }

  /** Lists jobs, newest first. */
  async listJobs(filter?: ListJobsFilter): Promise<Job[]> {
    this.assertOpen();
    return this.store.list(filter);
  }

  /**
   * Cancels a job. A PENDING job becomes CANCELED; a RUNNING one becomes CANCELED too, its handler sees
   * the request in its context, and its result is discarded. A finished job is left as it is.
   *
   * @throws JobNotFoundError when no job has this id.
   */
  async cancel(id: string, reason?: string): Promise<CancelResult> {
    this.assertOpen();
    const result = await this.store.cancel(validateJobId(id), reason);
    if (!result) throw new JobNotFoundError(String(id));
    this.hooks?.afterCancel(result);
    return result;
  }

  /** Closes the pool (if pawl created it). Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.ownsPool) await this.pool.end();
  }

  protected assertOpen(): void {
    if (this.closed) throw new PawlError("CLOSED", "this pawl instance is closed");
  }
}
