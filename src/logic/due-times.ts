/**
 * Known due times: when rows this node knows about become claimable, so it looks then instead of at its
 * next poll or discovery pass. A node knows a due time when it wrote it: a retry's backoff, a snooze or
 * another hand-back with a delay, or an enqueue with `delayMs` / `runAt` on this node. The list is pure
 * data; the runtime keeps it, the poller caps its wait by its earliest entry ({@link capDelay}), and a
 * poll at or after an entry's time takes it ({@link takeDue}) and tells the claimer the entry's priority
 * level, so the pass it runs seeks that level (docs/claim-cursors.md, "Known due times").
 *
 * Times are in ms of the node's clock. The runtime records an entry when its write has landed, as
 * `now + delay`: the database set `scheduled_time = now() + delay` before that, so on one host the entry
 * is never earlier than the row's due time. With clock skew between hosts the look may come early by the
 * skew; the row is then found by the next regular pass, as before.
 */

/** A row of `priority` becomes due at `at` (node clock ms). */
export interface DueEntry {
  at: number;
  priority: number;
}

/** The most entries kept; beyond it the latest are dropped (the regular passes still find their rows). */
export const maxDueEntries = 1000;

/**
 * The list with `entries` added, ordered by time (equal times keep their arrival order), at most `max`
 * long: the latest entries are the ones dropped.
 *
 * @example
 * ```ts
 * addDue([{ at: 100, priority: 10 }], [{ at: 50, priority: 30 }]); // [{ at: 50, ... }, { at: 100, ... }]
 * ```
 */
export function addDue(
  list: readonly DueEntry[],
  entries: readonly DueEntry[],
  max = maxDueEntries,
): DueEntry[] {
  // Array.prototype.sort is stable, so earlier arrivals stay first among equal times.
  const next = [...list, ...entries].sort((a, b) => a.at - b.at);
  return next.length > max ? next.slice(0, max) : next;
}

/**
 * Splits the list at `now`: the entries due by then (taken by the poll that runs now) and the rest.
 * `levels` are the distinct priorities of the due entries, highest first.
 *
 * @example
 * ```ts
 * takeDue([{ at: 10, priority: 1 }, { at: 20, priority: 5 }], 15); // { levels: [1], rest: [{ at: 20, ... }] }
 * ```
 */
export function takeDue(
  list: readonly DueEntry[],
  now: number,
): { levels: number[]; taken: DueEntry[]; rest: DueEntry[] } {
  let n = 0;
  while (n < list.length && list[n]!.at <= now) n++;
  const taken = list.slice(0, n);
  const levels = [...new Set(taken.map((e) => e.priority))].sort((a, b) => b - a);
  return { levels, taken, rest: list.slice(n) };
}

/** The earliest known due time, or null when none is known. */
export function nextDueAt(list: readonly DueEntry[]): number | null {
  return list[0]?.at ?? null;
}

/**
 * The poller's wait: the strategy's `delayMs`, cut short to end at `dueAt` when that comes first (never
 * below 0: a due time already passed means "poll now").
 *
 * @example
 * ```ts
 * capDelay(2000, null, 0); // 2000
 * capDelay(2000, 1000, 0); // 1000
 * capDelay(2000, 5000, 0); // 2000
 * capDelay(2000, 90, 100); // 0
 * ```
 */
export function capDelay(delayMs: number, dueAt: number | null | undefined, now: number): number {
  if (dueAt === null || dueAt === undefined) return delayMs;
  return Math.max(0, Math.min(delayMs, dueAt - now));
}

/**
 * Whether a due time learned during a wait that began at `waitFrom` and lasts `delayMs` ends it sooner. An
 * unknown start (null) counts as sooner, so the due time is never slept through; the re-armed wait then
 * ends at `dueAt`, which may be later than the old wait would have.
 */
export function dueEndsWaitSooner(waitFrom: number | null, delayMs: number, dueAt: number): boolean {
  return waitFrom === null || dueAt < waitFrom + delayMs;
}
