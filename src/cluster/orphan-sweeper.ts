/**
 * Failure detection and orphan recovery. One pass, under the `pawl:orphan-sweep` lease:
 *
 * 1. RUNNING jobs of dead nodes go back to PENDING (or DEAD on their last attempt) with the lost attempt
 *    recorded as a `NodeLostError`, in batches ({@link recoverOrphans}).
 * 2. Jobs held by node ids with no row at all free those ids' permits.
 * 3. Stale nodes lose their resource permits and new ones are marked dead, reported once as
 *    `cluster:node-dead` ({@link reapDeadNodes}).
 * 4. Node rows past the retention are deleted.
 *
 * The same recovery serves the startup cleanup: before a node claims anything, the RUNNING rows its node
 * id holds from a previous run are recovered ({@link OrphanSweeper.recoverPreviousRun}).
 *
 * A live node never loses its jobs: only rows whose node's heartbeat is older than the threshold (or whose
 * node has no row and which were picked more than a threshold ago) qualify, re-checked under row locks;
 * and a node's own outcome writes only land on rows still RUNNING under its id, so a recovered row is never
 * overwritten by the node that lost it.
 */
import type { Clock } from "../core/clock.js";
import type { PawlEventEmitter } from "../core/events.js";
import type { Logger } from "../core/logger.js";
import type { ClusterStore } from "../store/job-store.js";
import type { DeadNode } from "../store/cluster/node-sql.js";
import type { RecoveredJob } from "../store/cluster/orphan-sql.js";
import { leaseNames, type Lease, type LeaseManager } from "./lease.js";
import type { BackgroundService } from "../core/periodic.js";

/** What one sweep did. */
export interface SweepResult {
  /** False when another node held the lease (nothing was done). */
  ran: boolean;
  /** Jobs recovered, in the order they were. */
  recovered: RecoveredJob[];
  /** Nodes whose heartbeat is past the threshold (new ones have `newlyDead`). */
  deadNodes: DeadNode[];
  /** Permits freed (of dead nodes and of unknown node ids). */
  permitsFreed: number;
  /** Node rows deleted after the retention. */
  nodesDeleted: string[];
  /** Whether the lease ran out before the pass finished (the rest waits for the next pass). */
  incomplete: boolean;
  durationMs: number;
}

/** What an {@link OrphanSweeper} works with. */
export interface OrphanSweeperDeps {
  store: ClusterStore;
  nodeId: string;
  thresholdMs: number;
  nodeRetentionMs: number;
  leases: LeaseManager;
  clock: Clock;
  events: PawlEventEmitter;
  logger: Logger;
  /** Rows recovered per statement. Default 1000. */
  batchSize?: number;
}

/** Recovers the jobs of dead nodes. */
export class OrphanSweeper implements BackgroundService<SweepResult> {
  private readonly batch: number;
  /** When this sweeper last read every running row (clock ms); the first sweep always does. */
  private lastScanAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly deps: OrphanSweeperDeps) {
    this.batch = deps.batchSize ?? 1000;
  }

  /**
   * One sweep, under the lease. `now` overrides the database's time (tests). With `restMs` the lease is
   * rested that long after the sweep instead of given back (see `sweepRestMs` in
   * src/logic/cluster-logic.ts): no node sweeps again before then.
   */
  async runOnce(now: Date | null = null, restMs = 0): Promise<SweepResult> {
    const started = this.deps.clock.now();
    const outcome = await this.deps.leases.withLease(
      leaseNames.orphanSweep,
      (lease) => this.sweep(lease, now),
      now,
      restMs,
    );
    if (!outcome.acquired) {
      return {
        ran: false,
        recovered: [],
        deadNodes: [],
        permitsFreed: 0,
        nodesDeleted: [],
        incomplete: false,
        durationMs: 0,
      };
    }
    return { ...outcome.value, durationMs: this.deps.clock.now() - started };
  }

  /** Recovers orphans in batches into `recovered`; false when the lease ran out first. */
  private async recoverInto(
    recovered: RecoveredJob[],
    lease: Lease,
    now: Date | null,
    scanAll: boolean,
  ): Promise<boolean> {
    for (;;) {
      if (!lease.valid()) return false;
      const batch = await this.deps.store.recoverOrphans(this.deps.thresholdMs, this.batch, now, scanAll);
      recovered.push(...batch);
      if (batch.length < this.batch) return true;
    }
  }

  private async sweep(lease: Lease, now: Date | null): Promise<Omit<SweepResult, "durationMs">> {
    const { store, thresholdMs, events, logger, nodeId } = this.deps;
    const recovered: RecoveredJob[] = [];
    // Finding running rows reads the backlog (no index holds the lease, see store/orphan-sql.ts): a sweep
    // reads it when a node has gone stale, and once per threshold unconditionally, for the rows no stale
    // node announces (a node id without a row, a row skipped as locked).
    const startedAt = this.deps.clock.now();
    const scanAll = startedAt - this.lastScanAt >= thresholdMs;
    let incomplete = !(await this.recoverInto(recovered, lease, now, scanAll));
    if (scanAll && !incomplete) this.lastScanAt = startedAt;
    let permitsFreed = 0;
    const deadNodes = incomplete ? [] : await store.reapDeadNodes(thresholdMs, now);
    // A node can pass the threshold between the recovery's gate and the reaper, which then marks it dead:
    // the gate skips marked nodes, so without this its jobs would wait for the next full scan (up to a
    // threshold later). Read again now for a node this pass declared dead.
    if (deadNodes.some((d) => d.newlyDead)) {
      incomplete = !(await this.recoverInto(recovered, lease, now, true));
    }
    // Node ids without a row hold no permit rows we could find through reapDeadNodes: free them here.
    const unknown = new Set(recovered.map((j) => j.nodeId));
    for (const d of deadNodes) {
      unknown.delete(d.nodeId);
      permitsFreed += d.permitsFreed;
    }
    for (const id of await store.missingNodes([...unknown]))
      permitsFreed += await store.releaseNodePermits(id);
    const nodesDeleted =
      incomplete || !lease.valid() ? [] : await store.deleteExpiredNodes(this.deps.nodeRetentionMs, now);
    if (recovered.length > 0) {
      logger.warn("recovered jobs of dead nodes", {
        jobs: recovered.length,
        nodes: [...new Set(recovered.map((j) => j.nodeId))],
      });
      events.emit("cluster:orphans-recovered", {
        sweeper: nodeId,
        startup: false,
        jobs: recovered.map(eventJob),
      });
    }
    for (const d of deadNodes) {
      if (!d.newlyDead) continue;
      logger.warn("node declared dead: no heartbeat within the threshold", {
        deadNode: d.nodeId,
        lastHeartbeat: d.heartbeatAt,
      });
      events.emit("cluster:node-dead", {
        nodeId: d.nodeId,
        lastHeartbeat: d.heartbeatAt,
        detectedBy: nodeId,
      });
    }
    return { ran: true, recovered, deadNodes, permitsFreed, nodesDeleted, incomplete };
  }

  /**
   * Startup cleanup: recovers the RUNNING rows this node id picked before `before` (a previous run that
   * crashed), and frees the permits it held. Runs under the startup-cleanup lease, waiting for it up to
   * `waitMs`. The caller guarantees no live process runs under this node id. A sweep may run meanwhile: a
   * row is recovered by whichever statement locks it first, the other skips it (both re-check it under
   * the row lock), and freeing permits twice frees nothing more.
   */
  async recoverPreviousRun(before: Date, waitMs: number, now: Date | null = null): Promise<RecoveredJob[]> {
    const { store, nodeId, clock, events, logger, leases } = this.deps;
    const deadline = clock.now() + waitMs;
    for (;;) {
      const outcome = await leases.withLease(
        leaseNames.startupCleanup,
        async () => {
          const recovered: RecoveredJob[] = [];
          for (;;) {
            const batch = await store.recoverNodeRows(nodeId, before, this.batch, now);
            recovered.push(...batch);
            if (batch.length < this.batch) break;
          }
          await store.releaseNodePermits(nodeId);
          return recovered;
        },
        now,
      );
      if (outcome.acquired) {
        if (outcome.value.length > 0) {
          logger.warn("recovered jobs of this node id's previous run", { jobs: outcome.value.length });
          events.emit("cluster:orphans-recovered", {
            sweeper: nodeId,
            startup: true,
            jobs: outcome.value.map(eventJob),
          });
        }
        return outcome.value;
      }
      if (clock.now() >= deadline) {
        throw new Error(
          `pawl: the ${leaseNames.startupCleanup} lease stayed held for ${waitMs} ms; startup cleanup gave up`,
        );
      }
      await new Promise<void>((resolve) => clock.setTimeout(() => resolve(), 100));
    }
  }
}

function eventJob(j: RecoveredJob) {
  return { id: j.id, type: j.type, nodeId: j.nodeId, attempt: j.attempt, status: j.status };
}
