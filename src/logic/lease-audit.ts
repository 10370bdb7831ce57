/**
 * The lease audit's pure decisions (the service is src/cluster/lease-audit.ts): which of the rows leased to
 * this node it does not hold, and when to look next.
 *
 * A statement that commits but whose reply is lost leaves the database and the node disagreeing. For a
 * claim, rows are leased to a node that never received them; no one else rescues them while the node
 * beats. The audit compares the node's leases in the database with what it holds (attempts running,
 * jobs buffered, outcomes and parks not yet written) and releases the rest. It runs a grace after a
 * failed claim (a claim's rows carry the database time of the claim, so once the grace has passed they
 * are old enough to be read), and otherwise every `intervalMs`, for anything else that was never reported.
 */

/** What {@link leaseAuditDelayMs} decides from. */
export interface LeaseAuditDelayInput {
  /** Now, on the node's clock (ms). */
  now: number;
  /** The longest wait between two audits (ms). */
  intervalMs: number;
  /** How old a lease must be before the audit may release it (ms). */
  graceMs: number;
  /** When a failure that may have left leases behind was seen (ms), or null when none is waiting. */
  suspectAt: number | null;
  /** Whether the audit just failed (the database is unreachable). */
  failed: boolean;
}

/**
 * The wait before the next audit: the interval; sooner, the moment a suspicion is a grace old. After a
 * failed audit it waits at least a grace (at least 100 ms, at most the interval) before trying again, so
 * an unreachable database is not asked in a busy loop.
 *
 * @example
 * ```ts
 * leaseAuditDelayMs({ now: 1000, intervalMs: 60_000, graceMs: 2000, suspectAt: null, failed: false }); // 60000
 * leaseAuditDelayMs({ now: 1000, intervalMs: 60_000, graceMs: 2000, suspectAt: 500, failed: false }); // 1500
 * leaseAuditDelayMs({ now: 9000, intervalMs: 60_000, graceMs: 2000, suspectAt: 500, failed: true }); // 2000
 * ```
 */
export function leaseAuditDelayMs(i: LeaseAuditDelayInput): number {
  const interval = Math.max(1, i.intervalMs);
  const due =
    i.suspectAt === null ? interval : Math.min(interval, Math.max(0, i.suspectAt + i.graceMs - i.now));
  if (!i.failed) return due;
  return Math.max(due, Math.min(interval, Math.max(100, i.graceMs)));
}

/**
 * Whether an audit that started at `startedAt` settles the suspicion raised at `suspectAt`: only an audit
 * that started a grace after it can have read the leases of the failure (they are younger than the grace
 * before that).
 *
 * @example
 * ```ts
 * auditSettles(2500, 500, 2000); // true
 * auditSettles(2499, 500, 2000); // false
 * ```
 */
export function auditSettles(startedAt: number, suspectAt: number | null, graceMs: number): boolean {
  return suspectAt === null || startedAt >= suspectAt + graceMs;
}

/**
 * The leases to release: those in `leased` (the rows leased to this node, older than the grace) that the
 * node does not hold. In `leased`'s order.
 *
 * @example
 * ```ts
 * strandedLeases(["1", "2", "3"], new Set(["2"])); // ["1", "3"]
 * ```
 */
export function strandedLeases(leased: readonly string[], held: ReadonlySet<string>): string[] {
  return leased.filter((id) => !held.has(id));
}
