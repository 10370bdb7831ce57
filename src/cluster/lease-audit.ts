/**
 * The lease audit: a live node releases the rows leased to it that it does not run. A claim whose reply
 * was lost (the connection reset after the commit: a TCP reset, a pooler restart, a NAT timeout, a
 * failover) leaves rows PENDING under this node's `picked_by` that the node never received. The orphan
 * sweep rescues dead nodes only and this node keeps beating, so without the audit those rows, and the
 * concurrency-key slots they count against, stay taken for the node's lifetime.
 *
 * One pass ({@link LeaseAudit.runOnce}):
 * 1. reads the ids leased to this node more than a grace ago (database time), and the cutoff it used;
 * 2. waits for the node's claims in flight to settle, so every row a claim delivered is in memory;
 * 3. compares with what the node holds (attempts running, jobs buffered, outcomes and parks not written);
 * 4. releases the rest, guarded by the cutoff (a row claimed again since the read is never touched).
 *
 * Why an audit rather than a claim token looked up after an error: it needs no schema change and no change
 * to the claim statements, and it also covers a failure nobody saw (a reply lost without an error on this
 * side), on the interval. The claim path stays as it is, a HOT update of four columns.
 *
 * The loop runs every `leaseAuditIntervalMs`, and a grace after every failed claim (`suspect()`), so a
 * stranded lease is released within the grace of the failure the node saw, plus one statement.
 */
import type { Clock } from "../core/clock.js";
import { toError, type PawlEventEmitter } from "../core/events.js";
import type { Logger } from "../core/logger.js";
import { PeriodicTask, type BackgroundService } from "../core/periodic.js";
import { auditSettles, leaseAuditDelayMs, strandedLeases } from "../logic/lease-audit.js";
import type { OrphanStore } from "../store/cluster/cluster-store.js";
import type { ReleasedLease } from "../store/cluster/lease-audit-sql.js";

/** What the audit asks of the node it audits (src/node/node-runtime.ts supplies it). */
export interface AuditedNode {
  /** The job ids the node holds a lease for in memory: running, buffered, outcome or park not yet written. */
  heldIds(): ReadonlySet<string>;
  /** Settles once the claims in flight now have been handled; null when none is. */
  claimsInFlight(): Promise<void> | null;
  /** Rows went back to PENDING: poll again (and let the claim cursors look everywhere). */
  released(jobs: readonly ReleasedLease[]): void;
}

/** What one audit did. */
export interface LeaseAuditResult {
  /** Rows leased to this node, picked more than a grace ago. */
  leased: number;
  /** Those released: nothing on the node held them. */
  released: ReleasedLease[];
  durationMs: number;
}

/** What a {@link LeaseAudit} works with. */
export interface LeaseAuditDeps {
  store: Pick<OrphanStore, "readNodeLeases" | "releaseNodeLeases">;
  nodeId: string;
  node: AuditedNode;
  /** The longest wait between two audits (ms). */
  intervalMs: number;
  /** How old a lease must be before it may be released, and how long after a failed claim the audit runs (ms). */
  graceMs: number;
  clock: Clock;
  events: PawlEventEmitter;
  logger: Logger;
}

/** Audits one node's leases. */
export class LeaseAudit implements BackgroundService<LeaseAuditResult> {
  private readonly loop: PeriodicTask<LeaseAuditResult>;
  /** When a failure that may have stranded leases was seen, until an audit settles it (clock ms). */
  private suspectAt: number | null = null;

  constructor(private readonly deps: LeaseAuditDeps) {
    this.loop = new PeriodicTask<LeaseAuditResult>({
      clock: deps.clock,
      run: () => this.runOnce(),
      nextDelay: (r) =>
        leaseAuditDelayMs({
          now: deps.clock.now(),
          intervalMs: deps.intervalMs,
          graceMs: deps.graceMs,
          suspectAt: this.suspectAt,
          failed: !r.ok,
        }),
      onError: (error) => {
        deps.logger.warn("lease audit failed; retrying", { error: String(error) });
        deps.events.emit("error", { where: "lease audit", error: toError(error) });
      },
    });
  }

  /**
   * A statement that may have leased rows to this node failed (its reply may have been lost after the
   * commit): audit a grace from now.
   */
  suspect(): void {
    this.suspectAt ??= this.deps.clock.now();
    this.loop.wakeWithin(this.deps.graceMs);
  }

  /** One audit: read this node's leases, release those it does not hold. */
  async runOnce(): Promise<LeaseAuditResult> {
    const { store, nodeId, node, clock, graceMs } = this.deps;
    const started = clock.now();
    const suspicion = this.suspectAt;
    const { ids, cutoff } = await store.readNodeLeases(nodeId, graceMs);
    let released: ReleasedLease[] = [];
    if (ids.length > 0) {
      // A claim sent before the read may have leased rows the node has not received yet: wait for it.
      await node.claimsInFlight()?.catch(() => {});
      const stranded = strandedLeases(ids, node.heldIds());
      released = await store.releaseNodeLeases(nodeId, stranded, cutoff);
    }
    // A newer suspicion raised meanwhile stays for the next pass.
    if (this.suspectAt === suspicion && auditSettles(started, suspicion, graceMs)) this.suspectAt = null;
    const result = { leased: ids.length, released, durationMs: clock.now() - started };
    if (released.length > 0) {
      this.deps.logger.warn(
        "released leases this node held without running them (a claim's reply was lost)",
        {
          jobs: released.length,
        },
      );
      node.released(released);
    }
    {
      this.deps.events.emit("cluster:lease-audit", {
        nodeId,
        leased: ids.length,
        released: released.map((j) => ({ id: j.id, type: j.type })),
        durationMs: result.durationMs,
      });
    }
    return result;
  }

  /** Starts the loop: the first audit after the interval (or a grace after a suspicion). Idempotent. */
  start(): void {
    this.loop.start(this.deps.intervalMs);
  }

  /** Stops the loop and waits for an audit in flight. */
  async stop(): Promise<void> {
    await this.loop.stop();
  }
}
