/**
 * The job store: every SQL operation on jobs for one schema, bound to a pool. The runtime drives it;
 * tests and the CLI use it directly. Stateless apart from the pool, so any number can share a database.
 */
import type { FoldedNotify } from "../../coordinators/spi.js";
import type pg from "pg";
import type { NewJob } from "../enqueue-input.js";
import { cancelJob, canceledAmong, type CancelResult } from "./cancel-job.js";
import { claimJobs, loadPayloads, type ClaimArgs, type ClaimedJob } from "./claim-jobs.js";
import { listDead, purgeDead, retryDead, type DeadLetterFilter, type RetriedJobs } from "./dead-letter.js";
import { enqueueJobs, type EnqueuedJob } from "./enqueue-jobs.js";
import {
  completeJobs,
  killJobs,
  rescheduleJobs,
  retryJobs,
  type Completion,
  type Death,
  type Reschedule,
  type Retry,
} from "./finish-jobs.js";
import type { Job } from "./job-row.js";
import { migrate, type MigrateResult } from "./migrate.js";
import { countJobs, getJob, listJobs, type JobCount, type ListJobsFilter } from "./read-jobs.js";
import { tablesFor, type Queryable, type Tables } from "./sql.js";

/**
 * Every job operation for one schema.
 *
 * @example
 * ```ts
 * const store = new JobStore(pool, "pawl");
 * const batch = await store.claim({ nodeId: "a", limit: 10, types: ["email.send"], boostIntervalMs: 0, withPayload: true });
 * await store.complete("a", batch.map((j) => ({ id: j.id, resultJson: null })));
 * ```
 */
export class JobStore {
  /** The schema's qualified table names. */
  readonly tables: Tables;

  constructor(
    /** The pool statements run on (unless a caller passes its own client). */
    readonly pool: pg.Pool,
    schema: string,
  ) {
    this.tables = tablesFor(schema);
  }

  /** Applies pending migrations (idempotent, safe from many nodes at once). */
  migrate(): Promise<MigrateResult> {
    return migrate(this.pool, this.tables.schema);
  }

  /**
   * Inserts jobs in one statement; `db` may be the caller's transaction. `notify`, when given, is sent
   * with pg_notify from the same statement if it inserts any row.
   */
  enqueue(jobs: readonly NewJob[], db: Queryable = this.pool, notify?: FoldedNotify): Promise<EnqueuedJob[]> {
    return enqueueJobs(db, this.tables, jobs, notify);
  }

  /** Claims a batch (see {@link claimJobs}). */
  claim(args: ClaimArgs): Promise<ClaimedJob[]> {
    return claimJobs(this.pool, this.tables, args);
  }

  /** Loads payloads for lightweight claims. */
  loadPayloads(ids: readonly string[]): Promise<Map<string, unknown>> {
    return loadPayloads(this.pool, this.tables, ids);
  }

  /** Marks jobs SUCCEEDED; returns the ids this node still held. */
  complete(nodeId: string, items: readonly Completion[]): Promise<Set<string>> {
    return completeJobs(this.pool, this.tables, nodeId, items);
  }

  /** Schedules retries; returns the ids this node still held. */
  retry(nodeId: string, items: readonly Retry[]): Promise<Set<string>> {
    return retryJobs(this.pool, this.tables, nodeId, items);
  }

  /** Moves jobs to the dead letter queue; returns the ids this node still held. */
  kill(nodeId: string, items: readonly Death[]): Promise<Set<string>> {
    return killJobs(this.pool, this.tables, nodeId, items);
  }

  /** Hands jobs back without counting the attempt; returns the ids this node still held. */
  reschedule(nodeId: string, items: readonly Reschedule[]): Promise<Set<string>> {
    return rescheduleJobs(this.pool, this.tables, nodeId, items);
  }

  /** Cancels a job (null when there is no such job). */
  cancel(id: string, reason = "canceled by request"): Promise<CancelResult | null> {
    return cancelJob(this.pool, this.tables, id, reason);
  }

  /** Of `ids`, the ones whose row is CANCELED. */
  canceledAmong(ids: readonly string[]): Promise<Set<string>> {
    return canceledAmong(this.pool, this.tables, ids);
  }

  /** Reads one job. */
  get(id: string): Promise<Job | null> {
    return getJob(this.pool, this.tables, id);
  }

  /** Lists jobs, newest first. */
  list(filter?: ListJobsFilter): Promise<Job[]> {
    return listJobs(this.pool, this.tables, filter);
  }

  /** Counts PENDING, RUNNING and DEAD jobs by type. */
  counts(maxTypes?: number): Promise<JobCount[]> {
    return countJobs(this.pool, this.tables, maxTypes);
  }

  /** Lists the dead letter queue. */
  listDead(filter?: DeadLetterFilter): Promise<Job[]> {
    return listDead(this.pool, this.tables, filter);
  }

  /** Sends dead jobs back to PENDING with attempts reset. */
  retryDead(ids: readonly string[]): Promise<RetriedJobs> {
    return retryDead(this.pool, this.tables, ids);
  }

  /** Deletes dead jobs; returns how many. */
  purgeDead(filter?: DeadLetterFilter): Promise<number> {
    return purgeDead(this.pool, this.tables, filter);
  }

  /** The database's current time (the single clock for scheduling). */
  async databaseTime(): Promise<Date> {
    const res = await this.pool.query<{ now: Date }>("SELECT now() AS now");
    return (res.rows[0] as { now: Date }).now;
  }
}
