/**
 * Pruning: finished jobs leave the hot table after their retention, SUCCEEDED and CANCELED after a short
 * one (a day by default), DEAD after a longer one (14 days), so the claim path stays fast. One pass, under
 * the `pawl:prune` lease, deletes in batches of `pruneBatchSize` rows (a short statement on each partition
 * pruned row by row: the rows partition, then the time partitions' default) until a batch comes back
 * short, the pass's batch budget is spent, or the lease's deadline is near. SUCCEEDED rows in time
 * partitions are not deleted here: the history partitioner drops their partitions whole
 * (src/cluster/history-partitioner.ts). The same pass then drops the rate-limit log's expired starts and
 * idle keys (src/store/cluster/rate-limit-sql.ts), and walks on through the durable handlers' steps and
 * signals and the durable machines' rows (with their events), deleting those whose job is gone, however it went (src/store/durable/step-prune-sql.ts): up to
 * 10 batches per pass from where the last pass stopped while batches find rows to delete, one while they
 * do not, so steps follow their job's history (pruned row by row, dropped with its partition, deleted at
 * success) at a bounded cost per pass.
 */
import type { Clock } from "../core/clock.js";
import type { PawlEventEmitter } from "../core/events.js";
import type { Logger } from "../core/logger.js";
import type { ClusterStore } from "../store/job-store.js";
import type { PrunableStatus } from "../store/cluster/prune-sql.js";
import { leaseNames, type Lease, type LeaseManager } from "./lease.js";
import type { BackgroundService } from "../core/periodic.js";

/** What one pruning pass did. */
export interface PruneResult {
  /** False when another node held the lease. */
  ran: boolean;
  succeeded: number;
  canceled: number;
  dead: number;
  /** DELETE statements run. */
  batches: number;
  /** Whether rows past their retention may remain (the budget or the lease ran out). */
  more: boolean;
  /** Durable steps and signals deleted because their job is gone. */
  durable: number;
  durationMs: number;
}

/** Retentions (ms) and batching. */
export interface PruneSettings {
  succeededRetentionMs: number;
  canceledRetentionMs: number;
  deadRetentionMs: number;
  batchSize: number;
  /** Statements per pass at most. Default 100. */
  maxBatches?: number;
  /** Jobs whose durable rows one statement of the pass looks at. Default 1000. */
  durableBatchJobs?: number;
  /** Statements per pass over each durable table at most. Default 10. */
  durableMaxBatches?: number;
}

/** What a {@link Pruner} works with. */
export interface PrunerDeps extends PruneSettings {
  store: ClusterStore;
  leases: LeaseManager;
  clock: Clock;
  events: PawlEventEmitter;
  logger: Logger;
}

/** Deletes old finished jobs. */
export class Pruner implements BackgroundService<PruneResult> {
  /** Where the pass over each durable table goes on from (a job id; "0": from the start). */
  private readonly durableCursor = { steps: "0", signals: "0", machines: "0" };
  /** Whether the last batch over each durable table deleted anything (then a pass runs its full budget). */
  private readonly durableFound = { steps: true, signals: true, machines: true };

  constructor(private readonly deps: PrunerDeps) {}

  /** One pass under the lease. `now` overrides the database's time (tests). */
  async runOnce(now: Date | null = null): Promise<PruneResult> {
    const started = this.deps.clock.now();
    const outcome = await this.deps.leases.withLease(
      leaseNames.prune,
      (lease) => this.prune(lease, now),
      now,
    );
    const durationMs = this.deps.clock.now() - started;
    if (!outcome.acquired)
      return {
        ran: false,
        succeeded: 0,
        canceled: 0,
        dead: 0,
        batches: 0,
        more: false,
        durable: 0,
        durationMs,
      };
    const r = { ...outcome.value, durationMs };
    if (r.batches > 0 && r.succeeded + r.canceled + r.dead > 0) {
      this.deps.logger.debug("pruned finished jobs", {
        succeeded: r.succeeded,
        canceled: r.canceled,
        dead: r.dead,
      });
    }
    this.deps.events.emit("prune:done", {
      succeeded: r.succeeded,
      canceled: r.canceled,
      dead: r.dead,
      batches: r.batches,
      durationMs,
    });
    return r;
  }

  private async prune(lease: Lease, now: Date | null): Promise<Omit<PruneResult, "durationMs">> {
    const d = this.deps;
    const budget = d.maxBatches ?? 100;
    const counts: Record<PrunableStatus, number> = { SUCCEEDED: 0, CANCELED: 0, DEAD: 0 };
    const retention: Record<PrunableStatus, number> = {
      SUCCEEDED: d.succeededRetentionMs,
      CANCELED: d.canceledRetentionMs,
      DEAD: d.deadRetentionMs,
    };
    let batches = 0;
    let more = false;
    for (const status of ["SUCCEEDED", "CANCELED", "DEAD"] as const) {
      for (;;) {
        if (batches >= budget || !lease.valid()) {
          more = true;
          break;
        }
        const n = await d.store.pruneBatch(status, retention[status], d.batchSize, now);
        batches++;
        counts[status] += n;
        if (n < d.batchSize) break;
      }
      if (more) break;
    }
    // An admission prunes its own keys; a key no job asks for any more (a payload key) is left to this.
    if (lease.valid() && d.store.pruneRateLimits) await d.store.pruneRateLimits();
    const durable = await this.pruneDurable(lease);
    return {
      durable,
      ran: true,
      succeeded: counts.SUCCEEDED,
      canceled: counts.CANCELED,
      dead: counts.DEAD,
      batches,
      more,
    };
  }

  /** The pass over the durable tables (see the file header); returns the rows deleted. */
  private async pruneDurable(lease: Lease): Promise<number> {
    const store = this.deps.store.durable;
    if (!store) return 0;
    const jobs = this.deps.durableBatchJobs ?? 1000;
    const budget = this.deps.durableMaxBatches ?? 10;
    let deleted = 0;
    for (const table of ["steps", "signals", "machines"] as const) {
      // While the rows it walks belong to live jobs (100,000 parked sleepers), one batch a pass: an idle
      // cluster pays three statements a minute for them, and a batch that finds work brings the budget back.
      const passBudget = this.durableFound[table] ? budget : 1;
      for (let i = 0; i < passBudget && lease.valid(); i++) {
        const batch = await store.pruneOrphans(table, this.durableCursor[table], jobs);
        deleted += batch.deleted;
        this.durableFound[table] = batch.deleted > 0;
        // At the end of the table the next pass starts over from the beginning.
        this.durableCursor[table] = batch.lastJobId ?? "0";
        if (batch.lastJobId === null) break;
      }
    }
    return deleted;
  }
}
