/**
 * History partitions: SUCCEEDED rows go to time partitions of the finished table (migration 0016), and
 * this service keeps them, one pass at a time under the `pawl:history` lease: it makes the partitions
 * ahead of now and drops the ones whose rows are all past `succeededRetentionMs`, as
 * {@link planHistoryPartitions} decides from the list and the database's time. Dropping a partition is
 * the pruning of its rows: no DELETE, no vacuum.
 *
 * A pass that cannot do its DDL loses nothing: with no partition covering now, completions put SUCCEEDED
 * rows in the partition pruned row by row (as before 0016), and the pruner deletes them there. A failed
 * make or drop (a lock not granted within the function's lock_timeout, a role without EXECUTE on the
 * functions) is logged and tried again next pass; the pass never throws for it.
 */
import type { Clock } from "../core/clock.js";
import type { PawlEventEmitter } from "../core/events.js";
import type { Logger } from "../core/logger.js";
import type { BackgroundService } from "../core/periodic.js";
import { planHistoryPartitions, type HistoryRange } from "../logic/history-partitions.js";
import type { ClusterStore } from "../store/job-store.js";
import { leaseNames, type Lease, type LeaseManager } from "./lease.js";

/** What one pass did. */
export interface HistoryPartitionResult {
  /** False when another node held the lease. */
  ran: boolean;
  /** Partitions made. */
  created: number;
  /** Partitions dropped. */
  dropped: number;
  /** Rows the dropped partitions held (SUCCEEDED jobs pruned). */
  droppedRows: number;
  /** Makes or drops that failed (tried again next pass). */
  failed: number;
  durationMs: number;
}

/** What a {@link HistoryPartitioner} works with. */
export interface HistoryPartitionerDeps {
  store: Pick<ClusterStore, "listHistoryPartitions" | "addHistoryPartition" | "dropHistoryPartition">;
  leases: LeaseManager;
  clock: Clock;
  events: PawlEventEmitter;
  logger: Logger;
  /** How long SUCCEEDED rows are kept (ms). */
  succeededRetentionMs: number;
  /** How often a pass runs (ms): partitions are made three passes ahead. */
  intervalMs: number;
}

const insufficientPrivilege = "42501";
const undefinedFunction = "42883";
const lockNotAvailable = "55P03";

/** Makes and drops the time partitions of SUCCEEDED history. */
export class HistoryPartitioner implements BackgroundService<HistoryPartitionResult> {
  /** Error codes already logged at warn, so a lasting fault (no EXECUTE grant) logs once per process. */
  private readonly warned = new Set<string>();

  constructor(private readonly deps: HistoryPartitionerDeps) {}

  /** One pass under the lease. `now` overrides the time retention is measured from (tests). */
  async runOnce(now: Date | null = null): Promise<HistoryPartitionResult> {
    const started = this.deps.clock.now();
    const outcome = await this.deps.leases.withLease(
      leaseNames.history,
      (lease) => this.maintain(lease, now),
      now,
    );
    const durationMs = this.deps.clock.now() - started;
    if (!outcome.acquired) {
      return { ran: false, created: 0, dropped: 0, droppedRows: 0, failed: 0, durationMs };
    }
    const r = { ...outcome.value, durationMs };
    if (r.created + r.dropped + r.failed > 0) {
      this.deps.events.emit("history:done", {
        created: r.created,
        dropped: r.dropped,
        droppedRows: r.droppedRows,
        failed: r.failed,
        durationMs,
      });
    }
    return r;
  }

  private async maintain(
    lease: Lease,
    now: Date | null,
  ): Promise<Omit<HistoryPartitionResult, "durationMs">> {
    const d = this.deps;
    const list = await d.store.listHistoryPartitions();
    const dbNow = list.now.getTime();
    const plan = planHistoryPartitions({
      now: dbNow,
      pruneNow: now?.getTime() ?? dbNow,
      existing: list.partitions.map((p) => ({ start: p.start.getTime(), end: p.end.getTime() })),
      retentionMs: d.succeededRetentionMs,
      intervalMs: d.intervalMs,
    });
    const r = { ran: true, created: 0, dropped: 0, droppedRows: 0, failed: 0 };
    // Drops first: a drop frees what the retention says is gone even when a make then fails.
    for (const range of plan.drop) {
      if (!lease.valid()) break;
      const rows = await this.attempt("drop", range, () =>
        d.store.dropHistoryPartition(new Date(range.start)),
      );
      if (rows === null) r.failed++;
      else {
        r.dropped++;
        r.droppedRows += rows;
      }
    }
    for (const range of plan.create) {
      if (!lease.valid()) break;
      const ok = await this.attempt("make", range, () =>
        d.store.addHistoryPartition(new Date(range.start), new Date(range.end)),
      );
      if (ok === null) {
        // The next range starts where this one ends: without it, making the rest would leave a hole.
        r.failed++;
        break;
      }
      r.created++;
    }
    return r;
  }

  /** Runs one make or drop; null when it failed (logged). */
  private async attempt<T>(what: string, range: HistoryRange, run: () => Promise<T>): Promise<T | null> {
    try {
      return await run();
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      const fields = {
        start: new Date(range.start).toISOString(),
        end: new Date(range.end).toISOString(),
        error: String(error),
      };
      if (code === lockNotAvailable) {
        // Completions or reads held the lock past the function's lock_timeout; next pass tries again.
        this.deps.logger.debug(`history partition ${what} waited too long for its lock`, fields);
      } else if (!this.warned.has(String(code))) {
        this.warned.add(String(code));
        const hint =
          code === insufficientPrivilege || code === undefinedFunction
            ? " (run `pawl migrate` and `pawl grants <role>` as the schema's owner; until then SUCCEEDED rows are pruned row by row)"
            : "";
        this.deps.logger.warn(`history partition ${what} failed${hint}`, fields);
      }
      return null;
    }
  }
}
