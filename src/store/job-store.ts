/**
 * The store gateway: every statement pawl runs goes through one {@link JobStore}, an interface grouped by
 * concept (the jobs' lifecycle, the dead letter queue, resource permits, flows, signals, pauses,
 * transactions, and the cluster's node registry, leases, orphan recovery, pruning and recurring schedules
 * in cluster-store.ts). Code outside src/store never sees a pool or a table name, so a node's runtime can
 * run on the in-memory twin (src/testing/in-memory-store.ts) as well as on PostgreSQL, and the two are
 * held to the same claim order by one contract suite (test/contract/store-contract.ts).
 *
 * {@link NodeStore} is the slice a node's runtime uses; the twin implements that slice. The PostgreSQL
 * implementation is `PostgresJobStore` (postgres-job-store.ts); `new JobStore(pool, schema)` still builds one.
 */
import type { KeyedClaim, KeyedClaimArgs } from "./claim/keyed-claim.js";
import type { FoldedNotify } from "../../coordinators/spi.js";
import type { NewJob } from "../input/enqueue-input.js";
import type { CancelResult } from "./jobs/cancel-job.js";
import type { ClaimArgs, ClaimedJob } from "./claim/claim-jobs.js";
import type { DeadLetterFilter, RetriedJobs } from "./jobs/dead-letter.js";
import type { EnqueuedJob } from "./jobs/enqueue-jobs.js";
import type { Completion, Death, Reschedule, Retry } from "./outcomes/finish-jobs.js";
import type { Job } from "./jobs/job-row.js";
import type { ProgressWrite } from "./outcomes/progress-sql.js";
import type { MigrateResult, MigrationStatus } from "./migrations/migrate.js";
import type {
  LeaseStore,
  NodeRegistryStore,
  OrphanStore,
  PruneStore,
  HistoryPartitionStore,
  RecurringStore,
} from "./cluster/cluster-store.js";
import type { JobCount, ListJobsFilter } from "./jobs/read-jobs.js";
import type { Queryable } from "../db/sql.js";
import type { Logger } from "../core/logger.js";
import type { RateAdmission, RateWindow } from "./cluster/rate-limit-sql.js";
import type { RateKey } from "../logic/rate-limit.js";
import type { FlowStore, PauseStore, SignalStore } from "./composition/composition-store.js";
import type { DurableStore } from "./durable/durable-store.js";

/** The jobs' lifecycle: insert, claim, finish, cancel, read. */
export interface JobLifecycleStore {
  /**
   * Inserts jobs in one statement (a unique key already held by a live job returns that job with
   * `inserted: false`). `notify`, when given, is sent from the same statement if it inserts any row.
   */
  enqueue(jobs: readonly NewJob[], notify?: FoldedNotify): Promise<EnqueuedJob[]>;
  /**
   * Claims up to `limit` due PENDING jobs of `types` (and of `queue`, when given) for `nodeId`, marking
   * them RUNNING with the attempt counted, in claim order: effective priority (priority + age boost)
   * descending, then scheduled time, then id.
   */
  claim(args: ClaimArgs): Promise<ClaimedJob[]>;
  /**
   * Claims jobs that carry a concurrency key, fair across keys and within each key's limit (migration
   * 0011, docs/fairness.md). Optional: a store without it runs no keyed jobs.
   */
  claimKeyed?(args: KeyedClaimArgs): Promise<KeyedClaim>;
  /**
   * Claims one PENDING job by id for `nodeId`, due or not (pawl/testing's inline mode); null if not PENDING
   * and unleased, or if its concurrency key already runs its limit of jobs.
   */
  claimById(id: string, nodeId: string): Promise<ClaimedJob | null>;
  /** The payloads of jobs claimed without them (lazy claims), by id. */
  loadPayloads(ids: readonly string[]): Promise<Map<string, unknown>>;
  /** Marks jobs SUCCEEDED; returns the ids still RUNNING under `nodeId` (the others are left alone). */
  complete(nodeId: string, items: readonly Completion[]): Promise<Set<string>>;
  /** Puts failed jobs back to PENDING after their delay, recording the error; returns the ids `nodeId` still held. */
  retry(nodeId: string, items: readonly Retry[]): Promise<Set<string>>;
  /** Moves jobs to the dead letter queue; returns the ids `nodeId` still held. */
  kill(nodeId: string, items: readonly Death[]): Promise<Set<string>>;
  /** Hands jobs back to PENDING without counting the attempt; returns the ids `nodeId` still held. */
  reschedule(nodeId: string, items: readonly Reschedule[]): Promise<Set<string>>;
  /**
   * Stores running jobs' latest progress (`ctx.progress`); returns the ids `nodeId` still held. Optional:
   * a store without it (an older twin) drops progress, which no outcome depends on.
   */
  writeProgress?(nodeId: string, items: readonly ProgressWrite[]): Promise<Set<string>>;
  /** Cancels a job that has not finished (null when there is no such job). */
  cancel(id: string, reason?: string): Promise<CancelResult | null>;
  /** Of `ids`, the ones whose row is CANCELED. */
  canceledAmong(ids: readonly string[]): Promise<Set<string>>;
  /** Reads one job (null when there is none). */
  get(id: string): Promise<Job | null>;
  /** Lists jobs, newest first. */
  list(filter?: ListJobsFilter): Promise<Job[]>;
  /** Counts PENDING, RUNNING and DEAD jobs by type. */
  counts(maxTypes?: number): Promise<JobCount[]>;
}

/** The dead letter queue. */
export interface DeadLetterStore {
  /** DEAD jobs, newest first. */
  listDead(filter?: DeadLetterFilter): Promise<Job[]>;
  /** Sends DEAD jobs back to PENDING with attempts reset (a unique key held by a live job cancels them). */
  retryDead(ids: readonly string[]): Promise<RetriedJobs>;
  /** Deletes DEAD jobs; returns how many. */
  purgeDead(filter?: DeadLetterFilter): Promise<number>;
}

/** Cluster-wide resource permits (one per running job of a resource, at most `capacity`). */
export interface PermitStore {
  /**
   * Takes a permit of `resource` for `jobId` if fewer than `capacity` are held (idempotent per job);
   * returns whether the job holds one now. Permits of jobs no longer RUNNING are freed first.
   */
  acquirePermit(resource: string, jobId: string, nodeId: string, capacity: number): Promise<boolean>;
  /** Gives a job's permit back. */
  releasePermit(resource: string, jobId: string): Promise<void>;
}

/** Cluster-wide rate limits: an exact sliding log of starts per key (src/store/cluster/rate-limit-sql.ts). */
export interface RateLimitStore {
  /**
   * Admits one attempt of `jobId` under every key of `keys`, or under none: admitted when each key has
   * fewer than its `limit` starts in the last `perMs` (store time), and then a start is recorded for each.
   * A refusal answers when the windows have room again. `now` replaces the store's clock (tests only).
   */
  admitRate(keys: readonly RateKey[], jobId: string, now?: Date): Promise<RateAdmission>;
  /** The windows of `keys` (every key when omitted, at most 200), as of `now` (the store's clock). Reads only. */
  rateWindows(keys?: readonly string[], now?: Date): Promise<RateWindow[]>;
}

/** What a transaction of the gateway hands out, and the store's own housekeeping. */
export interface TransactionStore {
  /**
   * Runs `fn` with a gateway whose statements share one transaction: committed when `fn` resolves,
   * rolled back when it throws. On a gateway already bound to a transaction ({@link withClient}), `fn`
   * joins it and nothing is committed here.
   */
  transaction<T>(fn: (tx: JobStore) => Promise<T>): Promise<T>;
  /**
   * A gateway whose statements run on `client`: the caller's own transaction (a transactional enqueue,
   * a flow created with `client`). The caller commits or rolls back.
   */
  withClient(client: Queryable): JobStore;
  /** The id of the transaction this gateway is bound to (pawl/testing's inline mode watches it). */
  transactionId(): Promise<string | null>;
  /** Whether a transaction id committed, aborted or is still in progress (null when unknown). */
  transactionStatus(xid: string): Promise<"committed" | "aborted" | "in progress" | null>;
  /** Applies pending migrations (idempotent, safe from many nodes at once). */
  migrate(): Promise<MigrateResult>;
  /** Where the schema stands: its version, and the migrations it has not had yet (changes nothing). */
  migrationStatus(): Promise<MigrationStatus>;
  /** The store's current time (the single clock for scheduling). */
  databaseTime(): Promise<Date>;
}

/** Every statement pawl runs on its jobs: the gateway. */
export interface JobStore
  extends
    JobLifecycleStore,
    DeadLetterStore,
    PermitStore,
    RateLimitStore,
    FlowStore,
    SignalStore,
    PauseStore,
    TransactionStore,
    ClusterStore {
  /** The durable handlers' statements (docs/durable.md), on this gateway's connection. */
  readonly durable: DurableStore;
}

/**
 * What a node's runtime needs from the store: claim, finish, cancel checks, permits, rate limits, and a running job's
 * view of its flow and signal (read, park). The in-memory twin implements exactly this.
 */
export type NodeStore = JobLifecycleStore &
  PermitStore &
  RateLimitStore &
  Pick<FlowStore, "readComposition"> &
  Pick<SignalStore, "park">;

/** A gateway on a connection of its own, and how to close that connection. */
export interface DedicatedClusterStore {
  /** The gateway, on its own connection. */
  store: ClusterStore;
  /** Closes the connection. */
  end(): Promise<void>;
}

/**
 * What the cluster services need from the store: the cluster's slices (cluster/cluster-store.ts), a
 * recurring fire's enqueue and transaction, and the database's time. It is declared here, beside the
 * gateway, because its transaction hands out the whole gateway.
 */
export interface ClusterStore
  extends
    NodeRegistryStore,
    LeaseStore,
    OrphanStore,
    PruneStore,
    HistoryPartitionStore,
    RecurringStore,
    Pick<JobLifecycleStore, "enqueue">,
    Pick<TransactionStore, "transaction" | "databaseTime"> {
  /** The durable handlers' statements; the pruner's pass deletes steps and signals of jobs that are gone. */
  readonly durable?: DurableStore;
  /** The schema the gateway's tables are in (one node id may run once per schema in a process). */
  readonly schema: string;
  /**
   * The same gateway on a pool of one connection of its own to `connectionString` (the heartbeat's, so
   * beats never queue behind job traffic on a saturated pool), named `applicationName` in pg_stat_activity.
   */
  dedicated(connectionString: string, logger: Logger, applicationName: string): DedicatedClusterStore;
}
