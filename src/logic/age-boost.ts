/**
 * Age boosting, so old low-priority jobs are not starved by a steady stream of urgent ones. The claim query
 * must compute exactly the same thing in SQL; this module is its executable specification, with the
 * interval boundaries pinned by table tests:
 *
 *   boost = CASE WHEN intervalMs > 0 THEN floor(greatest(0, nowMs - scheduledMs) / intervalMs) ELSE 0 END
 *
 * The boost only orders claims; the stored priority is never rewritten.
 */

/** One priority step per 15 minutes of waiting. */
export const defaultBoostIntervalMs = 15 * 60_000;

/**
 * How many priority steps a job has earned by waiting since it became due. Zero before it is due and when
 * `boostIntervalMs <= 0` (boosting disabled).
 *
 * @example
 * ```ts
 * ageBoost(0, 15 * 60_000, defaultBoostIntervalMs); // 1
 * ageBoost(0, 15 * 60_000 - 1, defaultBoostIntervalMs); // 0
 * ```
 */
export function ageBoost(scheduledTimeMs: number, nowMs: number, boostIntervalMs: number): number {
  if (!(boostIntervalMs > 0)) return 0;
  return Math.floor(Math.max(0, nowMs - scheduledTimeMs) / boostIntervalMs);
}

/**
 * The priority a job is claimed with: its own priority plus its {@link ageBoost}.
 *
 * @example
 * ```ts
 * effectivePriority(-2, 0, 45 * 60_000, defaultBoostIntervalMs); // 1
 * ```
 */
export function effectivePriority(
  priority: number,
  scheduledTimeMs: number,
  nowMs: number,
  boostIntervalMs: number,
): number {
  return priority + ageBoost(scheduledTimeMs, nowMs, boostIntervalMs);
}

/** The fields of a job that decide when it is claimed. */
export interface ClaimOrderKey {
  /** The stored priority (higher first). */
  priority: number;
  /** When the job became (or becomes) due, ms since the epoch. */
  scheduledTimeMs: number;
  /** The job id; a bigint, an integer or a decimal string (as `pg` returns bigint columns). */
  id: bigint | number | string;
}

/**
 * A comparator in claim order, matching the claim query's
 * `ORDER BY effective priority DESC, scheduled_time ASC, id ASC`. Ids compare numerically, so `"10"` comes
 * after `"9"`; ids that are not integers fall back to a plain string comparison.
 *
 * @returns A negative number when `a` is claimed before `b`, positive when after, 0 when equal.
 *
 * @example
 * ```ts
 * jobs.sort((a, b) => compareClaimOrder(a, b, now, defaultBoostIntervalMs));
 * ```
 */
export function compareClaimOrder(
  a: ClaimOrderKey,
  b: ClaimOrderKey,
  nowMs: number,
  boostIntervalMs: number,
): number {
  const pa = effectivePriority(a.priority, a.scheduledTimeMs, nowMs, boostIntervalMs);
  const pb = effectivePriority(b.priority, b.scheduledTimeMs, nowMs, boostIntervalMs);
  if (pa !== pb) return pb > pa ? 1 : -1;
  if (a.scheduledTimeMs !== b.scheduledTimeMs) return a.scheduledTimeMs < b.scheduledTimeMs ? -1 : 1;
  return compareIds(a.id, b.id);
}

function compareIds(a: bigint | number | string, b: bigint | number | string): number {
  const ia = toBigInt(a);
  const ib = toBigInt(b);
  if (ia !== null && ib !== null) return ia === ib ? 0 : ia < ib ? -1 : 1;
  const sa = String(a);
  const sb = String(b);
  return sa === sb ? 0 : sa < sb ? -1 : 1;
}

function toBigInt(id: bigint | number | string): bigint | null {
  if (typeof id === "bigint") return id;
  if (typeof id === "number") return Number.isInteger(id) ? BigInt(id) : null;
  return /^\s*-?\d+\s*$/.test(id) ? BigInt(id.trim()) : null;
}
