/**
 * The PostgreSQL implementation of the store gateway ({@link JobStore}): each method runs the named
 * statement of its table's file (claim-jobs.ts, finish-jobs.ts, flow-sql.ts, ...) on this gateway's
 * connection. Stateless apart from the pool, so any number can share a database.
 *
 * A gateway runs on the pool, or, once bound with `withClient(client)` or handed out by `transaction(fn)`,
 * on that one client: the caller's transaction or a held one (store/held-client.ts). Multi-statement
 * operations (pause rules, permits) open their own transaction on a pool gateway and join the bound one
 * otherwise, except permits, which always take their own (they lock the resource for their statements).
 * The cluster's statements (node registry, leases, orphans, pruning, recurring schedules) are inherited
 * from {@link PostgresClusterStatements} (postgres-cluster-statements.ts).
 */
import {
  readKeyCountDrift,
  repairKeyCounts,
  repairKeyCountsOn,
  type KeyCountDrift,
} from "./operator/key-counts-sql.js";
import { asPrivilegeError } from "../db/privilege-error.js";
import { claimKeyedJobs, type KeyedClaim, type KeyedClaimArgs } from "./claim/keyed-claim.js";
import { PostgresOperatorReads, type OperatorReads } from "./operator/operator-reads.js";
import { PostgresDurableStatements, type DurableStore } from "./durable/durable-store.js";
import type pg from "pg";
import type { FoldedNotify } from "../../coordinators/spi.js";
import type { NewJob } from "../input/enqueue-input.js";
import type { Logger } from "../core/logger.js";
import { cancelJob, canceledAmong, type CancelResult } from "./jobs/cancel-job.js";
import {
  claimJobById,
  claimJobs,
  loadPayloads,
  type ClaimArgs,
  type ClaimedJob,
} from "./claim/claim-jobs.js";
import {
  listDead,
  purgeDead,
  retryDead,
  type DeadLetterFilter,
  type RetriedJobs,
} from "./jobs/dead-letter.js";
import { enqueueJobs, type EnqueuedJob } from "./jobs/enqueue-jobs.js";
import {
  completeJobs,
  killJobs,
  rescheduleJobs,
  retryJobs,
  type Completion,
  type Death,
  type Reschedule,
  type Retry,
  type SucceededRetention,
} from "./outcomes/finish-jobs.js";
import {
  allocateJobIds,
  cancelFlowMembers,
  flowMembers,
  insertBatchChildren,
  insertCompletionJob,
  insertFlow,
  insertMembers,
  listFlowRows,
  readFlow,
  readJobComposition,
  type FlowFailurePolicy,
  type FlowKind,
  type FlowListFilter,
  type FlowMemberInsert,
  type FlowRow,
  type JobCompositionRow,
} from "./composition/flow-sql.js";
import { inHeldTransaction } from "../db/held-client.js";
import type { Job } from "./jobs/job-row.js";
import type { DedicatedClusterStore, JobStore as Gateway } from "./job-store.js";
import { migrate, migrationStatus, type MigrateResult, type MigrationStatus } from "./migrations/migrate.js";
import {
  listPauses,
  pauseOneJob,
  pauseRule,
  resumeOneJob,
  resumeRule,
  type JobPauseResult,
  type PauseChange,
  type PauseKind,
  type PauseRow,
} from "./composition/pause-sql.js";
import { acquirePermit, releasePermit } from "./cluster/permits.js";
import { admitRate, rateWindows, type RateAdmission, type RateWindow } from "./cluster/rate-limit-sql.js";
import type { RateKey } from "../logic/rate-limit.js";
import {
  countJobs,
  getJob,
  getJobsByIds,
  listJobs,
  type JobCount,
  type ListJobsFilter,
} from "./jobs/read-jobs.js";
import { writeProgress, type ProgressWrite } from "./outcomes/progress-sql.js";
import {
  deliverSignal,
  nextWaitDeadlineMs,
  parkJobs,
  timeOutWaits,
  type DeliverResult,
  type Park,
  type TimedOutWaits,
} from "./composition/signal-sql.js";
import { createPool } from "../db/pool.js";
import { PostgresClusterStatements } from "./cluster/postgres-cluster-statements.js";
import { tablesFor, type Queryable, type Tables } from "../db/sql.js";

/** How a gateway treats what it writes. */
export interface PostgresJobStoreOptions {
  /**
   * `keep` (the default): a SUCCEEDED job moves to the finished table with its result, readable until it
   * is pruned. `delete`: its row is deleted when it succeeds (no result is kept, `get` returns null), except
   * a flow's rows, which are kept so the flow can count them. createPawl's `keepSucceeded: false`.
   */
  succeeded?: SucceededRetention;
  /**
   * Whether statements are named, so pg prepares each once per connection (default true). `false` runs
   * every statement unnamed, for transaction poolers (createPawl's `preparedStatements`). Read when the
   * gateway is built from a schema name; a bound copy shares its parent's tables.
   */
  preparedStatements?: boolean;
}

/**
 * The store gateway on PostgreSQL, for one schema.
 *
 * @example
 * ```ts
 * const store = new PostgresJobStore(pool, "pawl");
 * await store.transaction(async (tx) => {
 *   const [job] = await tx.enqueue([newJob]);
 *   await tx.pauseJob(job.id);
 * });
 * ```
 */
export class PostgresJobStore extends PostgresClusterStatements implements Gateway {
  constructor(
    pool: pg.Pool,
    /** The schema name (or, for a bound copy, the pool gateway's tables, so statements stay cached). */
    schema: string | Tables,
    /** @internal The client a bound gateway runs on; use {@link withClient} or {@link transaction}. */
    client?: Queryable,
    /** What the gateway keeps; a bound copy keeps its parent's. */
    readonly options: PostgresJobStoreOptions = {},
  ) {
    super(
      pool,
      typeof schema === "string" ? tablesFor(schema, options.preparedStatements !== false) : schema,
      client,
    );
  }

  /** Bounded reads for operators' views (the console), on the same connection as the gateway. */
  get operator(): OperatorReads {
    return new PostgresOperatorReads(this.db, this.tables);
  }

  /** The durable handlers' statements (docs/durable.md), on the same connection as the gateway. */
  get durable(): DurableStore {
    return new PostgresDurableStatements(this.db, this.tables);
  }

  // Transactions and housekeeping.

  transaction<T>(fn: (tx: JobStore) => Promise<T>): Promise<T> {
    return this.inTransaction((db) => fn(db === this.client ? this : this.withClient(db)));
  }

  /** Runs `fn` on the bound client (its transaction), else in a held transaction of its own. */
  private inTransaction<T>(fn: (db: Queryable) => Promise<T>): Promise<T> {
    return this.client ? fn(this.client) : inHeldTransaction(this.pool, fn);
  }

  withClient(client: Queryable): PostgresJobStore {
    return new PostgresJobStore(this.pool, this.tables, client, this.options);
  }

  async transactionId(): Promise<string | null> {
    if (!this.client) return null; // on the pool, every statement is a transaction of its own
    const res = await this.client.query<{ xid: string }>("SELECT txid_current()::text AS xid");
    return res.rows[0]?.xid ?? null;
  }

  async transactionStatus(xid: string): Promise<"committed" | "aborted" | "in progress" | null> {
    const res = await this.db.query<{ status: "committed" | "aborted" | "in progress" | null }>(
      "SELECT txid_status($1::bigint) AS status",
      [xid],
    );
    return res.rows[0]?.status ?? null;
  }

  checkKeyCounts(): Promise<KeyCountDrift[]> {
    return readKeyCountDrift(this.db, this.tables);
  }

  repairKeyCounts(): Promise<KeyCountDrift[]> {
    // Bound to a caller's transaction, the repair joins it (its locks are then held to that commit).
    return this.client
      ? repairKeyCountsOn(this.client, this.tables)
      : repairKeyCounts(this.pool, this.tables);
  }

  async migrate(): Promise<MigrateResult> {
    try {
      return await migrate(this.pool, this.tables.schema);
    } catch (error) {
      throw asPrivilegeError(
        error,
        `migrations need the schema's owner: run "pawl migrate" (or pawl.migrate()) with the owner's role, ` +
          `and give this role only what "pawl grants <role>" prints (docs/deployment.md#roles)`,
      );
    }
  }

  async migrationStatus(): Promise<MigrationStatus> {
    try {
      return await migrationStatus(this.db, this.tables.schema);
    } catch (error) {
      throw asPrivilegeError(
        error,
        `this role has no grants on schema "${this.tables.schema}": run what "pawl grants <role>" prints, ` +
          `as the schema's owner (docs/deployment.md#roles)`,
      );
    }
  }

  dedicated(connectionString: string, logger: Logger, applicationName: string): DedicatedClusterStore {
    // Behind a pooler (unnamed statements) the dedicated connection sets no session settings either.
    const pool = createPool(connectionString, 1, logger, applicationName, {
      sessionSettings: this.tables.prepared,
    });
    return { store: new PostgresJobStore(pool, this.tables, undefined, this.options), end: () => pool.end() };
  }

  async databaseTime(): Promise<Date> {
    const res = await this.db.query<{ now: Date }>("SELECT now() AS now");
    return (res.rows[0] as { now: Date }).now;
  }

  // The jobs' lifecycle.

  enqueue(jobs: readonly NewJob[], notify?: FoldedNotify): Promise<EnqueuedJob[]> {
    return enqueueJobs(this.db, this.tables, jobs, notify);
  }

  claim(args: ClaimArgs): Promise<ClaimedJob[]> {
    return this.budgeted(args.budgetMs, (db) => claimJobs(db, this.tables, args));
  }

  claimKeyed(args: KeyedClaimArgs): Promise<KeyedClaim> {
    return this.budgeted(args.budgetMs, (db) => claimKeyedJobs(db, this.tables, args));
  }

  /** Runs a claim statement under its time budget (a transaction of its own), or as it is without one. */
  private budgeted<T>(budgetMs: number | undefined, fn: (db: Queryable) => Promise<T>): Promise<T> {
    if (this.client || budgetMs === undefined || budgetMs <= 0) return fn(this.db);
    return inHeldTransaction(this.pool, fn, { statementTimeoutMs: budgetMs });
  }

  claimById(id: string, nodeId: string): Promise<ClaimedJob | null> {
    return claimJobById(this.db, this.tables, id, nodeId);
  }

  loadPayloads(ids: readonly string[]): Promise<Map<string, unknown>> {
    return loadPayloads(this.db, this.tables, ids);
  }

  complete(nodeId: string, items: readonly Completion[]): Promise<Set<string>> {
    return completeJobs(this.db, this.tables, nodeId, items, this.options.succeeded ?? "keep");
  }

  retry(nodeId: string, items: readonly Retry[]): Promise<Set<string>> {
    return retryJobs(this.db, this.tables, nodeId, items);
  }

  kill(nodeId: string, items: readonly Death[]): Promise<Set<string>> {
    return killJobs(this.db, this.tables, nodeId, items);
  }

  reschedule(nodeId: string, items: readonly Reschedule[]): Promise<Set<string>> {
    return rescheduleJobs(this.db, this.tables, nodeId, items);
  }

  writeProgress(nodeId: string, items: readonly ProgressWrite[]): Promise<Set<string>> {
    return writeProgress(this.db, this.tables, nodeId, items);
  }

  cancel(id: string, reason = "canceled by request"): Promise<CancelResult | null> {
    return cancelJob(this.db, this.tables, id, reason);
  }

  canceledAmong(ids: readonly string[]): Promise<Set<string>> {
    return canceledAmong(this.db, this.tables, ids);
  }

  get(id: string): Promise<Job | null> {
    return getJob(this.db, this.tables, id);
  }

  list(filter?: ListJobsFilter): Promise<Job[]> {
    return listJobs(this.db, this.tables, filter);
  }

  /** Reads many jobs by id in one statement (absent ids have no entry); what waitFor's reads use. */
  getMany(ids: readonly string[]): Promise<Job[]> {
    return getJobsByIds(this.db, this.tables, ids);
  }

  counts(maxTypes?: number): Promise<JobCount[]> {
    return countJobs(this.db, this.tables, maxTypes);
  }

  // The dead letter queue.

  listDead(filter?: DeadLetterFilter): Promise<Job[]> {
    return listDead(this.db, this.tables, filter);
  }

  retryDead(ids: readonly string[]): Promise<RetriedJobs> {
    return retryDead(this.db, this.tables, ids);
  }

  purgeDead(filter?: DeadLetterFilter): Promise<number> {
    return purgeDead(this.db, this.tables, filter);
  }

  // Resource permits: always a transaction of their own on the pool (the advisory lock is theirs alone).

  acquirePermit(resource: string, jobId: string, nodeId: string, capacity: number): Promise<boolean> {
    return acquirePermit(this.pool, this.tables, resource, jobId, nodeId, capacity);
  }

  releasePermit(resource: string, jobId: string): Promise<void> {
    return releasePermit(this.pool, this.tables, resource, jobId);
  }

  // Rate limits: admissions take their own transaction on the pool (they lock their keys' rows).

  admitRate(keys: readonly RateKey[], jobId: string, now?: Date): Promise<RateAdmission> {
    return admitRate(this.pool, this.tables, keys, jobId, now);
  }

  rateWindows(keys?: readonly string[], now?: Date): Promise<RateWindow[]> {
    return rateWindows(this.db, this.tables, keys, now);
  }

  // Flows.

  insertFlow(f: {
    kind: FlowKind;
    name: string | null;
    policy: FlowFailurePolicy;
    total: number;
  }): Promise<string> {
    return insertFlow(this.db, this.tables, f);
  }

  allocateJobIds(n: number): Promise<string[]> {
    return allocateJobIds(this.db, this.tables, n);
  }

  insertFlowMembers(flowId: string, members: readonly FlowMemberInsert[]): Promise<Job[]> {
    return insertMembers(this.db, this.tables, flowId, members);
  }

  insertBatchChildren(
    flowId: string,
    shared: NewJob,
    payloads: readonly string[],
    offset: number,
  ): Promise<number> {
    return insertBatchChildren(this.db, this.tables, flowId, shared, payloads, offset);
  }

  insertCompletionJob(flowId: string, job: NewJob): Promise<Job> {
    return insertCompletionJob(this.db, this.tables, flowId, job);
  }

  readFlow(id: string): Promise<FlowRow | null> {
    return readFlow(this.db, this.tables, id);
  }

  listFlowRows(filter?: FlowListFilter): Promise<FlowRow[]> {
    return listFlowRows(this.db, this.tables, filter);
  }

  flowMembers(flowId: string, limit: number): Promise<Job[]> {
    return flowMembers(this.db, this.tables, flowId, limit);
  }

  cancelFlowMembers(flowId: string, reason: string): Promise<number> {
    return cancelFlowMembers(this.db, this.tables, flowId, reason);
  }

  readComposition(jobId: string): Promise<JobCompositionRow | null> {
    return readJobComposition(this.db, this.tables, jobId);
  }

  // Signals.

  park(nodeId: string, items: readonly Park[]): Promise<Set<string>> {
    return parkJobs(this.db, this.tables, nodeId, items);
  }

  deliverSignal(id: string, payloadJson: string): Promise<DeliverResult> {
    return deliverSignal(this.db, this.tables, id, payloadJson);
  }

  timeOutWaits(limit: number): Promise<TimedOutWaits> {
    return timeOutWaits(this.db, this.tables, limit);
  }

  nextWaitDeadlineMs(): Promise<number | null> {
    return nextWaitDeadlineMs(this.db, this.tables);
  }

  // Pauses: a rule locks the job table, so it runs in a transaction (its own, or the bound one).

  pauseRule(kind: PauseKind, name: string, by: string): Promise<PauseChange> {
    return this.inTransaction((db) => pauseRule(db, this.tables, kind, name, by));
  }

  resumeRule(kind: PauseKind, name: string): Promise<PauseChange> {
    return this.inTransaction((db) => resumeRule(db, this.tables, kind, name));
  }

  listPauses(): Promise<PauseRow[]> {
    return listPauses(this.db, this.tables);
  }

  pauseJob(id: string): Promise<JobPauseResult> {
    return pauseOneJob(this.db, this.tables, id);
  }

  resumeJob(id: string): Promise<JobPauseResult> {
    return resumeOneJob(this.db, this.tables, id);
  }
}

/**
 * Builds the PostgreSQL gateway: `new JobStore(pool, schema)` is `new PostgresJobStore(pool, schema)`,
 * kept so the constructor existing code and users call goes on working. As a type, `JobStore` is the
 * gateway's interface (job-store.ts).
 *
 * @example
 * ```ts
 * const store = new JobStore(pool, "pawl");
 * const batch = await store.claim({ nodeId: "a", limit: 10, types: ["email.send"], boostIntervalMs: 0, withPayload: true });
 * await store.complete("a", batch.map((j) => ({ id: j.id, resultJson: null })));
 * ```
 */
export const JobStore = PostgresJobStore;
/** The gateway's interface (job-store.ts), under the constructor's name. */
export type JobStore = Gateway;
