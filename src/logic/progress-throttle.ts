/**
 * When a running job's progress may be written. A handler may report progress in a tight loop; the store
 * must see a bounded number of writes per job, yet never miss the value the job ended with. So:
 *
 * - a value is written at once when this job's last write is at least `minIntervalMs` ago (or it has none);
 * - otherwise it waits out the rest of the interval, and newer values replace it meanwhile (only the newest
 *   is ever written: the interval bounds writes, not values);
 * - when the attempt's outcome is queued, the waiting value is written now, ahead of the outcome, so the
 *   row carries the last value into the finished table.
 *
 * Pure: the caller passes `now` (the node's clock) and the last write time.
 */

/** The default minimum interval between two progress writes of one job, in ms. */
export const defaultProgressIntervalMs = 250;

/** What {@link progressWriteDelay} decides from. */
export interface ProgressThrottleInput {
  /** When this job's progress was last handed to the store (epoch ms), or null if never in this attempt. */
  lastWriteAtMs: number | null;
  /** The current time (epoch ms). */
  now: number;
  /** The minimum interval between writes of one job (ms, >= 0). */
  minIntervalMs?: number;
  /** Whether the attempt's outcome is queued: the waiting value goes now, ahead of it. */
  ending?: boolean;
}

/**
 * How long a new progress value must wait before it is written: 0 to write now.
 *
 * @example
 * ```ts
 * progressWriteDelay({ lastWriteAtMs: null, now: 1000 }); // 0
 * progressWriteDelay({ lastWriteAtMs: 1000, now: 1100 }); // 150
 * progressWriteDelay({ lastWriteAtMs: 1000, now: 1100, ending: true }); // 0
 * ```
 */
export function progressWriteDelay(input: ProgressThrottleInput): number {
  const { lastWriteAtMs, now, minIntervalMs = defaultProgressIntervalMs, ending = false } = input;
  if (ending || lastWriteAtMs === null) return 0;
  const elapsed = now - lastWriteAtMs;
  // A clock that went backwards must not hold a value for longer than one interval.
  if (elapsed < 0 || elapsed >= minIntervalMs) return 0;
  return minIntervalMs - elapsed;
}
