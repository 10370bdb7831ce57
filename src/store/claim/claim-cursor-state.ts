/**
 * The claim cursors' bookkeeping, without I/O: which pass a poll runs, where each priority level's seek
 * starts, and how a pass's result moves the cursors, the floors and the discovery cadence. Time comes in
 * as arguments (`nowMs` from the node's clock for the cadence, the database's now() in epoch microseconds
 * for positions), so every rule is table-tested without a database. See docs/claim-cursors.md.
 *
 * The full pass backs off while it finds nothing: each empty full pass doubles its interval, up to
 * `fullDiscoveryMaxMs`, and any claim (or a full pass that sees a due candidate) brings it back to
 * `fullDiscoveryMs` ({@link nextFullInterval}).
 *
 * Positions (./claim-positions.ts) are (scheduled_time, id) with the scheduled time in epoch **microseconds** as a bigint:
 * PostgreSQL keeps microseconds and a JS Date only milliseconds, so a cursor held as a Date could skip or
 * repeat rows that share a millisecond.
 */
import { effectivePriority } from "../../logic/age-boost.js";
import {
  comparePositions,
  minPosition,
  positionBefore,
  type FullOutcome,
  type PassOutcome,
  type Position,
  type SeekTarget,
  type WindowRow,
} from "./claim-positions.js";

/**
 * `ms` shortened by up to `fraction` of itself, so nodes that booted together drift apart instead of
 * running their discovery passes in lockstep. Never longer than `ms`, never below 1.
 *
 * @example
 * ```ts
 * jitterDown(10_000, () => 0.5); // 8750 (with the default fraction 0.25)
 * ```
 */
export function jitterDown(ms: number, random: () => number, fraction = 0.25): number {
  const r = Math.min(1, Math.max(0, random()));
  return Math.max(1, Math.round(ms - ms * fraction * r));
}

/**
 * The full pass's interval after a pass: `baseMs` when the pass found work (claimed a row, or a full pass
 * saw a due candidate), else twice `currentMs`, capped at `maxMs` (a cap below `baseMs` means no backoff).
 *
 * @example
 * ```ts
 * nextFullInterval(10_000, false, 10_000, 60_000); // 20_000
 * nextFullInterval(40_000, false, 10_000, 60_000); // 60_000 (the cap)
 * nextFullInterval(60_000, true, 10_000, 60_000); // 10_000
 * ```
 */
export function nextFullInterval(
  currentMs: number,
  foundWork: boolean,
  baseMs: number,
  maxMs: number,
): number {
  if (foundWork) return baseMs;
  return Math.max(baseMs, Math.min(maxMs, currentMs * 2));
}

/** What a poll does: seek past the cursors, a floored or full discovery pass, or nothing at all. */
export type PassKind = "seek" | "floored" | "full" | "skip";

/** Taken by {@link CursorState.begin} before a pass, handed back after it. */
export interface PassToken {
  wakeups: number;
  fullRequests: number;
}

/** Options of {@link CursorState}. */
export interface CursorStateOptions {
  /** The floored pass's cadence (ms, node clock). */
  discoveryMs: number;
  /** The full pass's cadence (ms, node clock), and its interval again after any pass that found work. */
  fullDiscoveryMs: number;
  /** The cap of the full pass's interval while full passes find nothing (ms; at least `fullDiscoveryMs`). */
  fullDiscoveryMaxMs: number;
  /** Jitter source in [0, 1). */
  random: () => number;
}

/** Counters for the inspector. */
export interface CursorCounters {
  /** Statements sent to the database by this claimer. */
  queries: number;
  /** Polls answered without any statement (no cursor, no discovery due). */
  skippedPolls: number;
  /** Polls per pass kind (a skipped poll counts as `skip`). */
  passes: Record<PassKind, number>;
  /** Jobs claimed. */
  claimed: number;
}

const neverPosition = (): Position => ({ us: -(2n ** 62n), id: 0n });

/** Whether a pass claimed as many rows as it asked for (more work is likely waiting). */
const claimedAll = (outcome: PassOutcome): boolean => outcome.claimed.length >= outcome.limit;

/**
 * While claims come back full, a wakeup within this long of the last floored pass runs a seek instead
 * (ms, node clock). Under a stream of enqueues every enqueue is a wakeup, and each floored pass reads its
 * window from the id floor, which lags a full interval behind: at 18,000 jobs/s offered to one node, 100
 * floored passes a second at 18 ms each were the claim's whole budget, and the node ran 12,000/s. A full
 * claim means the poller asks again as soon as slots free, so the deferred pass runs within this bound;
 * fresh rows of known levels are what the seek finds meanwhile.
 */
export const wakeupFlooredGapMs = 100;

/**
 * A node's claim cursors and discovery schedule. The claimer asks {@link plan} what to run, runs it, and
 * reports the outcome with `afterSeek` / `afterFloored` / `afterFull`. A wakeup makes the floored pass due.
 */
export class CursorState {
  /** Per level: the last position claimed (or just before the first unclaimed candidate). */
  readonly cursors = new Map<number, Position>();
  /** Levels seen lately (by a full pass, a claim or the window), with the node-clock time last seen. */
  readonly known = new Map<number, number>();
  /** The id floor: the floored pass reads rows above it. Null until a full pass has observed the stream. */
  floorId: bigint | null = null;
  /** The time floor (epoch µs): the floored pass seeks known levels from it. */
  floorUs: bigint | null = null;
  /** The highest id observed so far (claims, windows, full passes' max(id)). */
  highWater: bigint | null = null;
  /** The database time of the last full pass (µs); the next full pass lowers the time floor to it. */
  lastFullUs: bigint | null = null;
  /** When the next floored pass is due (node clock ms). */
  nextDiscoveryAt = 0;
  /** When the next full pass is due (node clock ms). */
  nextFullDiscoveryAt = 0;
  /**
   * The full pass's current interval (ms, before jitter): `fullDiscoveryMs`, doubled after each full pass
   * that found nothing, up to `fullDiscoveryMaxMs`, and back to `fullDiscoveryMs` on any claim.
   */
  fullIntervalMs: number;
  /** A floored pass is due at the next poll (a wakeup, or the last one left window rows uncovered). */
  discoveryDue = true;
  /** A full pass is due at the next poll (boot, the job types changed, or {@link requestFull}). */
  fullDue = true;
  readonly counters: CursorCounters = {
    queries: 0,
    skippedPolls: 0,
    passes: { seek: 0, floored: 0, full: 0, skip: 0 },
    claimed: 0,
  };
  /** Discovery is due because the last floored pass left window rows no cursor covers (not deferred). */
  private uncoveredDue = false;
  /** When the last floored pass ran (node clock ms). */
  private lastFlooredAt = -Infinity;
  /** Whether the last pass of any kind claimed as many rows as it asked for. */
  private lastFull = false;
  private typesKey: string | null = null;
  private wakeups = 0;
  private fullRequests = 0;

  constructor(private readonly o: CursorStateOptions) {
    this.fullIntervalMs = o.fullDiscoveryMs;
  }

  /** The cap of {@link fullIntervalMs} (a configured cap below `fullDiscoveryMs` means no backoff). */
  get fullDiscoveryMaxMs(): number {
    return Math.max(this.o.fullDiscoveryMs, this.o.fullDiscoveryMaxMs);
  }

  /**
   * New work was announced: the floored pass runs at the next poll. It leaves the full pass's interval
   * alone: new work lands above the id floor, where the floored pass finds it, and claiming it resets the
   * interval.
   */
  wakeup(): void {
    this.wakeups++;
    this.discoveryDue = true;
  }

  /** Rows went back to PENDING where only a full pass can see them: the full pass runs at the next poll. */
  requestFull(): void {
    this.fullRequests++;
    this.fullDue = true;
  }

  /** A token for a pass about to run, so a wakeup or full-pass request that lands while it runs is not lost. */
  begin(): PassToken {
    return { wakeups: this.wakeups, fullRequests: this.fullRequests };
  }

  /**
   * Which pass the poll at `nowMs` runs. A change of the claimed types clears the cursors and makes a full
   * pass due (rows of a newly registered type may sit below them). `dueLevels` (levels where rows this node
   * wrote have just come due) make the floored pass run: a retry or snooze keeps its old id, below the id
   * floor, so only a seek of its level from the time floor finds it.
   */
  plan(nowMs: number, types: readonly string[], dueLevels: readonly number[] = []): PassKind {
    const key = [...new Set(types)].sort().join("\u0000");
    if (this.typesKey !== null && key !== this.typesKey) {
      this.cursors.clear();
      this.fullDue = true;
    }
    this.typesKey = key;
    if (this.fullDue || this.floorId === null || this.floorUs === null || nowMs >= this.nextFullDiscoveryAt) {
      return "full";
    }
    if (this.uncoveredDue || nowMs >= this.nextDiscoveryAt || dueLevels.length > 0) return "floored";
    if (this.discoveryDue) return this.deferWakeup(nowMs) ? "seek" : "floored";
    return this.cursors.size > 0 ? "seek" : "skip";
  }

  /** Whether a wakeup's floored pass waits (see {@link wakeupFlooredGapMs}); it stays due meanwhile. */
  private deferWakeup(nowMs: number): boolean {
    return this.lastFull && this.cursors.size > 0 && nowMs - this.lastFlooredAt < wakeupFlooredGapMs;
  }

  /**
   * The seeks of a claim statement. `seek`: every level with a cursor, from its cursor. `floored`: also
   * every level seen lately, each from the lower of its cursor and the time floor, so rows that became due
   * since (retries, snoozes, scheduled jobs, late commits) are found in claim order. `dueLevels` are
   * sought like seen levels even when forgotten (a snooze may outlast two full intervals): their rows came
   * due just now, after the time floor (a full pass before now would have found them due otherwise).
   */
  seekTargets(kind: "seek" | "floored", nowMs: number, dueLevels: readonly number[] = []): SeekTarget[] {
    const targets = new Map<number, Position>(this.cursors);
    if (kind === "floored") {
      this.forget(nowMs);
      const floor: Position = { us: this.floorUs ?? neverPosition().us, id: 0n };
      for (const level of new Set([...this.known.keys(), ...dueLevels])) {
        const c = targets.get(level);
        targets.set(level, c ? minPosition(c, floor) : floor);
      }
    }
    return [...targets].sort((a, b) => b[0] - a[0]).map(([priority, after]) => ({ priority, after }));
  }

  /**
   * After a seek-only poll: advance the cursors of levels that claimed, drop those that came back empty. A
   * claim brings the full pass's interval back to `fullDiscoveryMs`.
   */
  afterSeek(targets: readonly SeekTarget[], outcome: PassOutcome, nowMs: number): void {
    this.moveCursors(targets, outcome, nowMs);
    this.lastFull = claimedAll(outcome);
    if (outcome.claimed.length > 0) this.resetFullInterval(nowMs);
  }

  /**
   * After a floored pass: cursors move as after a seek; a level claimed only through the window (no seek
   * of its own) gets a cursor at its last claimed row; every level in the window becomes known. Discovery
   * stays due when the pass left window rows unclaimed that no cursor covers (it filled its limit before
   * reaching them: a backlog below a cursor drains before the seeks move on), or a wakeup came in while it
   * ran. A claim brings the full pass's interval back to `fullDiscoveryMs`.
   */
  afterFloored(
    token: PassToken,
    targets: readonly SeekTarget[],
    window: readonly WindowRow[],
    outcome: PassOutcome | null,
    nowMs: number,
  ): void {
    for (const row of window) {
      this.known.set(row.priority, nowMs);
      this.observe(row.id);
    }
    if (outcome) {
      this.moveCursors(targets, outcome, nowMs);
      const sought = new Set(targets.map((t) => t.priority));
      for (const c of outcome.claimed) {
        if (sought.has(c.priority)) continue;
        const cur = this.cursors.get(c.priority);
        if (!cur || comparePositions(c.pos, cur) > 0) this.cursors.set(c.priority, c.pos);
      }
      if (outcome.claimed.length > 0) this.resetFullInterval(nowMs);
    }
    const taken = new Set((outcome?.claimed ?? []).map((c) => c.pos.id));
    const uncovered = window.some((row) => {
      if (taken.has(row.id)) return false;
      const cur = this.cursors.get(row.priority);
      return !cur || comparePositions(row, cur) <= 0;
    });
    this.uncoveredDue = uncovered;
    this.discoveryDue = uncovered || token.wakeups !== this.wakeups;
    this.lastFlooredAt = nowMs;
    this.lastFull = outcome !== null && claimedAll(outcome);
    this.nextDiscoveryAt = nowMs + jitterDown(this.o.discoveryMs, this.o.random);
  }

  /**
   * After a full pass (the classic claim over every level): the cursors are rebuilt from it (every level
   * with an unclaimed candidate gets a cursor just before it, so nothing it saw is left uncovered), the
   * floors drop to what was observed before it (at boot, to its own observation, the time floor one full
   * interval back), and both cadences restart. The full pass's interval doubles when the pass found
   * nothing (no claim, no due candidate), up to `fullDiscoveryMaxMs`, and is `fullDiscoveryMs` again when
   * it found work ({@link nextFullInterval}).
   */
  afterFull(token: PassToken, outcome: FullOutcome, nowMs: number): void {
    const before = this.highWater;
    this.observe(outcome.highId);
    this.floorId = before ?? outcome.highId ?? 0n;
    // The boot time floor looks back one *base* interval, not the current one: at the first full pass
    // nothing has backed off yet (the interval only changes after a full pass), so the two are equal. Later
    // floors are the previous full pass's own time, so they follow the backed-off gap by themselves.
    this.floorUs = this.lastFullUs ?? outcome.nowUs - BigInt(this.o.fullDiscoveryMs) * 1000n;
    this.lastFullUs = outcome.nowUs;
    this.cursors.clear();
    for (const level of outcome.levels) this.known.set(level, nowMs);
    const all = new Set<number>([...outcome.heads.keys(), ...outcome.claimed.map((c) => c.priority)]);
    const targets = [...all].map((priority) => ({ priority, after: neverPosition() }));
    this.moveCursors(targets, outcome, nowMs);
    this.fullDue = token.fullRequests !== this.fullRequests;
    this.uncoveredDue = false;
    this.discoveryDue = token.wakeups !== this.wakeups;
    this.lastFull = claimedAll(outcome);
    this.nextDiscoveryAt = nowMs + jitterDown(this.o.discoveryMs, this.o.random);
    const foundWork = outcome.claimed.length > 0 || outcome.heads.size > 0;
    this.fullIntervalMs = nextFullInterval(
      this.fullIntervalMs,
      foundWork,
      this.o.fullDiscoveryMs,
      this.o.fullDiscoveryMaxMs,
    );
    this.nextFullDiscoveryAt = nowMs + jitterDown(this.fullIntervalMs, this.o.random);
  }

  /**
   * A seek or floored pass claimed work: the full pass's interval is `fullDiscoveryMs` again, and a full
   * pass scheduled further out than that (the node was idle) is brought forward, so the bound on
   * stragglers is back to one base interval while the node works. Nothing changes (and no jitter is
   * drawn) when the interval was not backed off, so a steady stream of claims keeps the cadence as it is.
   */
  private resetFullInterval(nowMs: number): void {
    const base = this.o.fullDiscoveryMs;
    if (this.fullIntervalMs === base) return;
    this.fullIntervalMs = base;
    this.nextFullDiscoveryAt = Math.min(this.nextFullDiscoveryAt, nowMs + jitterDown(base, this.o.random));
  }

  /**
   * The cursor rule for the levels a statement sought. Within one level the claim takes a prefix of its
   * candidates in (scheduled_time, id) order (the age boost only favours older rows of a level), so:
   * rows claimed above the seek's start -> the cursor is the last of them; candidates but none claimed
   * (outranked by other levels) -> the cursor sits just before the first candidate; no candidates -> the
   * level loses its cursor.
   */
  private moveCursors(targets: readonly SeekTarget[], outcome: PassOutcome, nowMs: number): void {
    for (const c of outcome.claimed) {
      this.known.set(c.priority, nowMs);
      this.observe(c.pos.id);
    }
    this.counters.claimed += outcome.claimed.length;
    for (const { priority, after } of targets) {
      let last: Position | null = null;
      for (const c of outcome.claimed) {
        if (c.priority !== priority || comparePositions(c.pos, after) <= 0) continue;
        if (last === null || comparePositions(c.pos, last) > 0) last = c.pos;
      }
      const head = outcome.heads.get(priority);
      const cur = this.cursors.get(priority);
      if (last) this.cursors.set(priority, last);
      else if (head)
        this.cursors.set(priority, cur ? minPosition(cur, positionBefore(head)) : positionBefore(head));
      else this.cursors.delete(priority);
    }
  }

  private observe(id: bigint | null): void {
    if (id !== null && (this.highWater === null || id > this.highWater)) this.highWater = id;
  }

  /**
   * Levels not seen for two full intervals stop being sought by the floored pass (unless they hold a
   * cursor). The TTL follows the *current* (backed-off) interval: a full pass re-marks every level holding
   * PENDING rows, so a level with rows not yet due (a retry, a scheduled job) must outlive the gap between
   * two full passes, or its row would wait for the full pass (up to `fullDiscoveryMaxMs`) instead of the
   * next floored pass. The cost is a few more levels sought by an idle floored pass, each an index seek.
   * When a claim resets the interval, levels seen only by a full pass long ago may drop out early; the
   * reset also brings the next full pass within one base interval, which sees them again.
   */
  private forget(nowMs: number): void {
    const ttl = 2 * this.fullIntervalMs;
    for (const [level, seen] of this.known) {
      if (nowMs - seen > ttl && !this.cursors.has(level)) this.known.delete(level);
    }
  }
}

/**
 * The floored pass's picks: the window in claim order at the database's `nowUs` (effective priority with
 * the age boost of src/logic/age-boost.ts, then scheduled time, then id, as `compareClaimOrder` orders
 * them, but with the scheduled time compared in microseconds like the SQL), best `limit` first.
 */
export function pickWindow(
  window: readonly WindowRow[],
  limit: number,
  nowUs: bigint,
  boostIntervalMs: number,
): WindowRow[] {
  const nowMs = Number(nowUs / 1000n);
  const keyed = window.map((row) => ({
    row,
    effective: effectivePriority(row.priority, Number(row.us / 1000n), nowMs, boostIntervalMs),
  }));
  keyed.sort((a, b) => b.effective - a.effective || comparePositions(a.row, b.row));
  return keyed.slice(0, Math.max(0, limit)).map((k) => k.row);
}
