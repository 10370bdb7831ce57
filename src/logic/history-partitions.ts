/**
 * Which time partitions of SUCCEEDED history to make and which to drop (migration 0016,
 * docs/job-lifecycle.md#where-a-job-lives): a pure function of the partitions that exist, the database's
 * time and the retention, so every rule here is table-tested and the node only carries it out.
 *
 * - **Width.** About a twelfth of the retention, rounded down to a width from a fixed ladder (5 minutes
 *   to 1 day), so a day's retention makes 2-hour partitions. A row is then kept for its retention and at
 *   most one width more (a partition goes when its newest possible row is past retention), and there are
 *   about twelve partitions for a read by id to look into.
 * - **None under an hour.** A retention shorter than an hour makes no partitions: a width of a few
 *   minutes would keep rows several times their retention, and such a history is small enough to prune
 *   row by row. Partitions made under a longer retention are still dropped as they expire.
 * - **Ahead.** The ranges cover from now to at least one width and three passes ahead, so a pass or two
 *   missed (a lease held by a node that died) leaves no gap. A new range starts where the last one ends,
 *   or at now (rounded down to the second) when none covers now; after the first it ends on a multiple of
 *   the width (UTC), so partitions line up on the clock.
 * - **Drop.** A partition whose end is at or before `now - retention` holds only rows past retention.
 */

/** A partition's range of finished_at, [start, end) in epoch ms. */
export interface HistoryRange {
  start: number;
  end: number;
}

/** What {@link planHistoryPartitions} decides from. */
export interface HistoryPlanInput {
  /** The database's time (ms), from which ranges are made. */
  now: number;
  /** The time retention is measured from (ms): `now`, or a later instant a test passes. */
  pruneNow: number;
  /** The partitions that exist, in any order. */
  existing: readonly HistoryRange[];
  /** How long SUCCEEDED rows are kept (ms). */
  retentionMs: number;
  /** How often the plan runs (ms): the lead covers three runs. */
  intervalMs: number;
}

/** What to do: ranges to make (in order) and ranges to drop. */
export interface HistoryPlan {
  /** The width chosen for new partitions (ms); null when the retention is too short to partition. */
  widthMs: number | null;
  create: HistoryRange[];
  drop: HistoryRange[];
}

const second = 1000;
const minute = 60 * second;
const hour = 60 * minute;
const day = 24 * hour;

/** The widths a partition may have, smallest first. The add function refuses more than a day. */
export const historyWidthsMs: readonly number[] = [
  5 * minute,
  15 * minute,
  30 * minute,
  hour,
  2 * hour,
  3 * hour,
  6 * hour,
  12 * hour,
  day,
];

/** Partitions per retention the width aims at. */
const partitionsPerRetention = 12;
/** At most this many partitions are made in one pass (a long outage is caught up over a few). */
export const maxCreatesPerPass = 48;

/**
 * The partition width for a retention: the largest ladder width at most retention / 12, or null when even
 * the smallest is more than that (a retention under an hour).
 */
export function historyWidthMs(retentionMs: number): number | null {
  const target = retentionMs / partitionsPerRetention;
  let width: number | null = null;
  for (const w of historyWidthsMs) if (w <= target) width = w;
  return width;
}

/** The ranges to make and drop; see the module comment for the rules. */
export function planHistoryPartitions(input: HistoryPlanInput): HistoryPlan {
  const widthMs = historyWidthMs(input.retentionMs);
  const cutoff = input.pruneNow - input.retentionMs;
  const drop = input.existing.filter((r) => r.end <= cutoff).sort((a, b) => a.start - b.start);
  const dropped = new Set(drop);
  const kept = input.existing.filter((r) => !dropped.has(r));

  const create: HistoryRange[] = [];
  if (widthMs === null) return { widthMs, create, drop };
  const target = input.now + Math.max(widthMs, 3 * input.intervalMs);
  // Where the next range starts: the end of the ranges that reach past now, or now itself.
  const lastEnd = kept.reduce((m, r) => Math.max(m, r.end), -Infinity);
  let start = lastEnd > input.now ? lastEnd : Math.floor(input.now / second) * second;
  while (start < target && create.length < maxCreatesPerPass) {
    const end = Math.floor(start / widthMs) * widthMs + widthMs;
    create.push({ start, end });
    start = end;
  }
  return { widthMs, create, drop };
}
