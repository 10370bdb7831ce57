/**
 * The cluster's statements of the PostgreSQL gateway ({@link ClusterStore}'s node registry, leases, orphan
 * recovery, pruning and recurring schedules), as the base class {@link PostgresJobStore} extends. It
 * holds what every method runs on (the pool, the schema's tables, the bound client if any), so the
 * gateway reads by concept across two files and each stays small; the SQL is in the table files.
 */
import type pg from "pg";
import type {
  HistoryPartitionStore,
  LeaseStore,
  NodeRegistryStore,
  OrphanStore,
  PruneStore,
  RecurringStore,
} from "./cluster-store.js";
import { grantLock, listLocks, releaseLock, type LockGrant, type LockRow } from "./lock-sql.js";
import {
  deleteExpiredNodes,
  getNode,
  listNodes,
  missingNodes,
  readDatabaseClock,
  reapDeadNodes,
  removeNode,
  upsertHeartbeat,
  type DeadNode,
  type HeartbeatRow,
  type NodeInfo,
  type NodeRow,
  type NodeStatus,
} from "./node-sql.js";
import { recoverNodeRows, recoverOrphans, type RecoveredJob } from "./orphan-sql.js";
import { releaseNodePermits } from "./permits.js";
import { readNodeLeases, releaseNodeLeases, type NodeLeases, type ReleasedLease } from "./lease-audit-sql.js";
import { pruneBatch, type PrunableStatus } from "./prune-sql.js";
import {
  addHistoryPartition,
  dropHistoryPartition,
  listHistoryPartitions,
  type HistoryPartitionList,
} from "./history-partition-sql.js";
import { pruneRateLimits } from "./rate-limit-sql.js";
import {
  advanceRecurring,
  claimDueRecurring,
  deleteRecurring,
  disableRecurring,
  listRecurring,
  msUntilNextFire,
  upsertRecurring,
  type NewRecurring,
  type RecurringRow,
} from "./recurring-sql.js";
import { tablesFor, type Queryable, type Tables } from "../../db/sql.js";

/** The cluster's statements, on the pool or on the client a gateway is bound to. */
export abstract class PostgresClusterStatements
  implements NodeRegistryStore, LeaseStore, OrphanStore, PruneStore, HistoryPartitionStore, RecurringStore
{
  /** The schema's qualified table names (tests and tools that write their own SQL). */
  readonly tables: Tables;
  /** Where statements run: the pool, or the client this gateway is bound to. */
  protected readonly db: Queryable;

  constructor(
    /** The pool: statements run on it unless the gateway is bound to a client. */
    readonly pool: pg.Pool,
    /** The schema name (or, for a bound copy, the pool gateway's tables, so statements stay cached). */
    schema: string | Tables,
    /** The client a bound gateway runs on (its transaction); none on the pool. */
    protected readonly client?: Queryable,
  ) {
    this.tables = typeof schema === "string" ? tablesFor(schema) : schema;
    this.db = client ?? pool;
  }

  /** The bare schema name. */
  get schema(): string {
    return this.tables.schema;
  }

  // The node registry.

  writeHeartbeat(nodeId: string, info: NodeInfo, now: Date | null = null): Promise<HeartbeatRow> {
    return upsertHeartbeat(this.db, this.tables, nodeId, info, now);
  }

  readNode(nodeId: string, now: Date | null = null): Promise<{ node: NodeRow | null; databaseTime: Date }> {
    return getNode(this.db, this.tables, nodeId, now);
  }

  listNodes(thresholdMs: number, now: Date | null = null): Promise<NodeStatus[]> {
    return listNodes(this.db, this.tables, thresholdMs, now);
  }

  removeNode(nodeId: string, instance: string): Promise<boolean> {
    return removeNode(this.db, this.tables, nodeId, instance);
  }

  reapDeadNodes(thresholdMs: number, now: Date | null = null): Promise<DeadNode[]> {
    return reapDeadNodes(this.db, this.tables, thresholdMs, now);
  }

  deleteExpiredNodes(retentionMs: number, now: Date | null = null): Promise<string[]> {
    return deleteExpiredNodes(this.db, this.tables, retentionMs, now);
  }

  missingNodes(nodeIds: readonly string[]): Promise<string[]> {
    return missingNodes(this.db, this.tables, nodeIds);
  }

  databaseClock(): Promise<Date> {
    return readDatabaseClock(this.db, this.tables);
  }

  // Leases.

  acquireLock(
    name: string,
    owner: string,
    ttlMs: number,
    now: Date | null = null,
  ): Promise<LockGrant | null> {
    return grantLock(this.db, this.tables, "acquire", name, owner, ttlMs, now);
  }

  renewLock(name: string, owner: string, ttlMs: number, now: Date | null = null): Promise<LockGrant | null> {
    return grantLock(this.db, this.tables, "renew", name, owner, ttlMs, now);
  }

  releaseLock(name: string, owner: string, restMs = 0, now: Date | null = null): Promise<boolean> {
    return releaseLock(this.db, this.tables, name, owner, restMs, now);
  }

  listLocks(now: Date | null = null): Promise<LockRow[]> {
    return listLocks(this.db, this.tables, now);
  }

  // Orphan recovery.

  recoverOrphans(
    thresholdMs: number,
    limit: number,
    now: Date | null = null,
    scanAll = true,
  ): Promise<RecoveredJob[]> {
    return recoverOrphans(this.db, this.tables, thresholdMs, limit, now, scanAll);
  }

  recoverNodeRows(
    nodeId: string,
    before: Date,
    limit: number,
    now: Date | null = null,
  ): Promise<RecoveredJob[]> {
    return recoverNodeRows(this.db, this.tables, nodeId, before, limit, now);
  }

  releaseNodePermits(nodeId: string): Promise<number> {
    return releaseNodePermits(this.db, this.tables, nodeId);
  }

  readNodeLeases(nodeId: string, graceMs: number, now: Date | null = null): Promise<NodeLeases> {
    return readNodeLeases(this.db, this.tables, nodeId, graceMs, now);
  }

  releaseNodeLeases(nodeId: string, ids: readonly string[], cutoff: string): Promise<ReleasedLease[]> {
    return releaseNodeLeases(this.db, this.tables, nodeId, ids, cutoff);
  }

  // Pruning.

  pruneBatch(
    status: PrunableStatus,
    retentionMs: number,
    batchSize: number,
    now: Date | null = null,
  ): Promise<number> {
    return pruneBatch(this.db, this.tables, status, retentionMs, batchSize, now);
  }

  pruneRateLimits(): Promise<number> {
    return pruneRateLimits(this.db, this.tables);
  }

  // History partitions.

  listHistoryPartitions(): Promise<HistoryPartitionList> {
    return listHistoryPartitions(this.db, this.tables);
  }

  addHistoryPartition(start: Date, end: Date): Promise<void> {
    return addHistoryPartition(this.db, this.tables, start, end);
  }

  dropHistoryPartition(start: Date): Promise<number> {
    return dropHistoryPartition(this.db, this.tables, start);
  }

  // Recurring schedules.

  upsertRecurring(r: NewRecurring): Promise<RecurringRow> {
    return upsertRecurring(this.db, this.tables, r);
  }

  deleteRecurring(name: string): Promise<boolean> {
    return deleteRecurring(this.db, this.tables, name);
  }

  listRecurring(): Promise<RecurringRow[]> {
    return listRecurring(this.db, this.tables);
  }

  claimDueRecurring(
    limit: number,
    now: Date | null = null,
  ): Promise<{ rows: RecurringRow[]; databaseTime: Date }> {
    return claimDueRecurring(this.db, this.tables, limit, now);
  }

  advanceRecurring(name: string, nextFireAt: Date, firedAt: Date | null): Promise<void> {
    return advanceRecurring(this.db, this.tables, name, nextFireAt, firedAt);
  }

  disableRecurring(name: string): Promise<void> {
    return disableRecurring(this.db, this.tables, name);
  }

  msUntilNextFire(now: Date | null = null): Promise<number | null> {
    return msUntilNextFire(this.db, this.tables, now);
  }
}
