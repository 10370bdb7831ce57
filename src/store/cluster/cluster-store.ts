/**
 * The cluster's slice of the store gateway (src/store/job-store.ts): the node registry, leases, orphan
 * recovery, pruning and recurring schedules. The cluster services (src/cluster/*.ts) take a
 * `ClusterStore` (these slices with a transaction, declared in job-store.ts) and never a pool or a table name; the SQL behind each
 * method is in node-sql.ts, lock-sql.ts, orphan-sql.ts, prune-sql.ts, recurring-sql.ts and permits.ts.
 *
 * Every method that decides by time takes an optional `now`: null (the default) is the database's `now()`,
 * the cluster's single clock; a date overrides it, so tests can move time without waiting.
 */
import type { HistoryPartitionList } from "./history-partition-sql.js";
import type { LockGrant, LockRow } from "./lock-sql.js";
import type { DeadNode, HeartbeatRow, NodeInfo, NodeRow, NodeStatus } from "./node-sql.js";
import type { RecoveredJob } from "./orphan-sql.js";
import type { NodeLeases, ReleasedLease } from "./lease-audit-sql.js";
import type { PrunableStatus } from "./prune-sql.js";
import type { NewRecurring, RecurringRow } from "./recurring-sql.js";

/** scheduler_node: who is in the cluster, and since when they last beat. */
export interface NodeRegistryStore {
  /**
   * Writes `nodeId`'s heartbeat with `info` (inserting its row on the first beat). `startedAt` is kept
   * while `info.instance` stays the same; `wasDeclaredDead` says the sweep had marked the node dead.
   */
  writeHeartbeat(nodeId: string, info: NodeInfo, now?: Date | null): Promise<HeartbeatRow>;
  /** One node's row (null when it has none) and the database's time, read together. */
  readNode(nodeId: string, now?: Date | null): Promise<{ node: NodeRow | null; databaseTime: Date }>;
  /** Every node row, oldest first, with its heartbeat's age and whether it is within `thresholdMs`. */
  listNodes(thresholdMs: number, now?: Date | null): Promise<NodeStatus[]>;
  /** Deletes this run's own row (`instance` must match: a newer run's row is kept); whether it did. */
  removeNode(nodeId: string, instance: string): Promise<boolean>;
  /**
   * Finds the nodes whose heartbeat is older than `thresholdMs`, frees their permits and marks the new ones
   * dead, in one statement.
   */
  reapDeadNodes(thresholdMs: number, now?: Date | null): Promise<DeadNode[]>;
  /** Deletes node rows older than `retentionMs` that no RUNNING job names; returns their ids. */
  deleteExpiredNodes(retentionMs: number, now?: Date | null): Promise<string[]>;
  /** Of `nodeIds`, those with no row. */
  missingNodes(nodeIds: readonly string[]): Promise<string[]>;
  /** The database's clock read as late as possible in the statement (`clock_timestamp()`, for skew). */
  databaseClock(): Promise<Date>;
}

/** scheduler_lock: named leases with a TTL, by the database's clock. */
export interface LeaseStore {
  /** Takes `name` for `owner` for `ttlMs` when it is free, expired or already `owner`'s; null when held. */
  acquireLock(name: string, owner: string, ttlMs: number, now?: Date | null): Promise<LockGrant | null>;
  /** Extends `owner`'s unexpired lease by `ttlMs`; null when it expired or another owner holds it. */
  renewLock(name: string, owner: string, ttlMs: number, now?: Date | null): Promise<LockGrant | null>;
  /**
   * Gives the lease back if `owner` holds it; whether it did. With `restMs` (> 0) it stays held, by
   * `rest:<owner>`, for `restMs` more at most: refused to every node, `owner` too, until then.
   */
  releaseLock(name: string, owner: string, restMs?: number, now?: Date | null): Promise<boolean>;
  /** Every lease row, valid or not, by name. */
  listLocks(now?: Date | null): Promise<LockRow[]>;
}

/**
 * Orphan recovery: the RUNNING jobs of nodes that stopped beating, and their permits; and the lease
 * audit, a live node's own leases that nothing on it runs.
 */
export interface OrphanStore {
  /**
   * Recovers up to `limit` RUNNING jobs of dead nodes (heartbeat older than `thresholdMs`, or no row and
   * picked longer ago): PENDING with the attempt counted, DEAD on the last one. Call again while it
   * returns `limit` jobs. With `scanAll` false (default true) it reads the jobs only when some node is
   * stale and not yet marked dead: finding running rows reads the backlog (no index holds the lease), so
   * the sweeper asks for the unconditional read only once per threshold.
   */
  recoverOrphans(
    thresholdMs: number,
    limit: number,
    now?: Date | null,
    scanAll?: boolean,
  ): Promise<RecoveredJob[]>;
  /** Recovers up to `limit` RUNNING jobs `nodeId` picked before `before` (a previous run's, at startup). */
  recoverNodeRows(nodeId: string, before: Date, limit: number, now?: Date | null): Promise<RecoveredJob[]>;
  /** Frees every resource permit `nodeId` holds; returns how many. */
  releaseNodePermits(nodeId: string): Promise<number>;
  /**
   * The lease audit's read (src/cluster/lease-audit.ts): the ids leased to `nodeId` picked more than
   * `graceMs` before the database's now (or `now`), and that cutoff.
   */
  readNodeLeases(nodeId: string, graceMs: number, now?: Date | null): Promise<NodeLeases>;
  /** Releases `nodeId`'s leases on `ids` taken before `cutoff` (attempt not counted); returns those released. */
  releaseNodeLeases(nodeId: string, ids: readonly string[], cutoff: string): Promise<ReleasedLease[]>;
}

/** Pruning the finished jobs. */
export interface PruneStore {
  /** Deletes one batch of up to `batchSize` `status` jobs finished more than `retentionMs` ago; how many. */
  pruneBatch(
    status: PrunableStatus,
    retentionMs: number,
    batchSize: number,
    now?: Date | null,
  ): Promise<number>;
  /**
   * Deletes rate-limit starts that left their window, and the keys idle for more than a window with none
   * left (payload keys come and go); returns the keys deleted. Optional: a store without rate limits.
   */
  pruneRateLimits?(): Promise<number>;
}

/** The time partitions of SUCCEEDED history (migration 0016), made and dropped by the nodes. */
export interface HistoryPartitionStore {
  /** The partitions that exist, oldest first, and the database's time. */
  listHistoryPartitions(): Promise<HistoryPartitionList>;
  /** Makes the partition for [start, end). */
  addHistoryPartition(start: Date, end: Date): Promise<void>;
  /** Drops the partition that starts at `start`; returns how many rows it held. */
  dropHistoryPartition(start: Date): Promise<number>;
}

/** scheduler_recurring: the schedules of recurring jobs and their next fires. */
export interface RecurringStore {
  /** Creates or updates a schedule; the same cron and zone keep the row's next fire. */
  upsertRecurring(r: NewRecurring): Promise<RecurringRow>;
  /** Deletes a schedule; whether it existed. */
  deleteRecurring(name: string): Promise<boolean>;
  /** Every schedule, by name. */
  listRecurring(): Promise<RecurringRow[]>;
  /**
   * Locks up to `limit` due schedules (SKIP LOCKED) and reads the database's time. Only meaningful inside
   * {@link ClusterStore.transaction}: the locks last until it ends.
   */
  claimDueRecurring(limit: number, now?: Date | null): Promise<{ rows: RecurringRow[]; databaseTime: Date }>;
  /** Moves a schedule to `nextFireAt`, recording `firedAt` as its last fire when given. */
  advanceRecurring(name: string, nextFireAt: Date, firedAt: Date | null): Promise<void>;
  /** Turns a schedule off (its cron no longer computes); registering it again turns it back on. */
  disableRecurring(name: string): Promise<void>;
  /** Milliseconds from the database's now to the earliest enabled fire (negative when overdue); null if none. */
  msUntilNextFire(now?: Date | null): Promise<number | null>;
}
