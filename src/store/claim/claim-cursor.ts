/**
 * Claim cursors: a {@link Claimer} whose polls seek past dead index entries instead of scanning them, and
 * send no statement at all when there is nothing it could find. The design, its cadences and the bound on
 * its ordering slack are in docs/claim-cursors.md; the bookkeeping is {@link CursorState}
 * (claim-cursor-state.ts) and the statements are in claim-cursor-sql.ts.
 *
 * Each poll runs exactly one of:
 * - **full pass** (every `fullDiscoveryMs`, jittered downward; at boot; when the job types change): the
 *   classic claim over every level. It rebuilds the cursors and drops the floors to what was observed
 *   before it. One statement. While full passes find nothing, each one doubles the interval to the next,
 *   up to `fullDiscoveryMaxMs`; any claim brings it back to `fullDiscoveryMs`.
 * - **floored pass** (every `discoveryMs`, jittered downward; at once after a wakeup; again right after a
 *   discovery that left window rows uncovered): reads a window of PENDING due rows above the id floor in
 *   id order, picks the best of it by claim order, and claims them together with a seek of every cursor
 *   and every recently seen level from its time floor. One statement: it runs on the wakeup path
 *   (enqueue -> NOTIFY -> wakeup -> claim), where a second round trip was about half the latency.
 * - **seek**: one statement seeking past each level's cursor. Levels that come back empty lose their
 *   cursor.
 * - **nothing**: no cursor left and no discovery due.
 */
import { inHeldTransaction } from "../../db/held-client.js";
import type { Queryable } from "../../db/sql.js";
import type { ClaimStatementKind } from "./claim-budgets.js";
import type { ClaimedJob } from "./claim-jobs.js";
import type { Claimer, ClaimerOptions } from "./claimer.js";
import type { PostgresJobStore } from "../postgres-job-store.js";
import { flooredClaim, fullPassClaim, seekClaim, type CursorClaimArgs } from "./claim-cursor-sql.js";
import { CursorState, type PassKind, type PassToken } from "./claim-cursor-state.js";
import { usToIso } from "./claim-positions.js";

/** The floored pass's default window (rows read above the id floor). */
export const defaultDiscoveryWindow = 500;
/** Default cadence of the floored discovery pass (ms). */
export const defaultClaimCursorDiscoveryMs = 1000;
/** Default cadence of the full discovery pass (ms). */
export const defaultClaimCursorFullDiscoveryMs = 10_000;
/** Default cap of the full discovery pass's interval while it finds nothing (ms). */
export const defaultClaimCursorFullDiscoveryMaxMs = 60_000;

/** Options of {@link CursorClaimer}: the node's {@link ClaimerOptions} plus the cursor cadences. */
export interface CursorClaimerOptions extends ClaimerOptions {
  /** Cursors seek in PostgreSQL's claim index (./claim-cursor-sql.ts), so they need the PostgreSQL store. */
  store: PostgresJobStore;
  /** The floored pass's cadence in ms of `clock` (jittered downward). Default 1000. */
  discoveryMs?: number;
  /** The full pass's cadence in ms of `clock` (jittered downward). Default 10,000. */
  fullDiscoveryMs?: number;
  /**
   * The cap of the full pass's interval, which doubles after each full pass that found nothing (ms of
   * `clock`, jittered downward). Default 60,000, or `fullDiscoveryMs` if that is longer.
   */
  fullDiscoveryMaxMs?: number;
  /** Rows the floored pass reads above the id floor. Default 500. */
  window?: number;
  /** Jitter source in [0, 1). Default Math.random. */
  random?: () => number;
  /** Overrides the database's now() in every statement (tests). Default: the database's now(). */
  databaseNow?: () => Date | null;
}

/** What one poll did (returned by {@link CursorClaimer.poll}; tests and the benchmark read it). */
export interface PollReport {
  kind: PassKind;
  jobs: ClaimedJob[];
  /** Statements sent. */
  statements: number;
}

/**
 * The claim-cursor claimer (on by default: `claimCursors`). One instance per node; its state is process
 * memory and dies with the node.
 *
 * @example
 * ```ts
 * const claimer = new CursorClaimer({ store, nodeId, boostIntervalMs, withPayload: true, clock });
 * const jobs = await claimer.claim(100, ["email.send"]);
 * ```
 */
export class CursorClaimer implements Claimer {
  /** The cursors, floors and cadence (exposed for tests and the inspector). */
  readonly state: CursorState;
  private readonly window: number;
  private tail: Promise<unknown> = Promise.resolve();

  constructor(private readonly o: CursorClaimerOptions) {
    this.window = o.window ?? defaultDiscoveryWindow;
    const fullDiscoveryMs = o.fullDiscoveryMs ?? defaultClaimCursorFullDiscoveryMs;
    this.state = new CursorState({
      discoveryMs: o.discoveryMs ?? defaultClaimCursorDiscoveryMs,
      fullDiscoveryMs,
      fullDiscoveryMaxMs:
        o.fullDiscoveryMaxMs ?? Math.max(defaultClaimCursorFullDiscoveryMaxMs, fullDiscoveryMs),
      random: o.random ?? Math.random,
    });
  }

  /**
   * Claims up to `limit` due jobs of `types`, in claim order. With `dueLevels` (rows known to have just
   * come due there) the poll is at least a floored pass that seeks those levels from the time floor.
   */
  async claim(limit: number, types: readonly string[], dueLevels?: readonly number[]): Promise<ClaimedJob[]> {
    return (await this.poll(limit, types, dueLevels)).jobs;
  }

  /**
   * One poll, reporting which pass ran. Polls are serialised: the poller may start a second claim while
   * one is out (claim ahead), but each pass plans from the cursors and floors the pass before it left, so
   * the second waits here and starts as soon as the first's statement returns.
   */
  poll(limit: number, types: readonly string[], dueLevels: readonly number[] = []): Promise<PollReport> {
    const run = this.tail.then(
      () => this.pollNow(limit, types, dueLevels),
      () => this.pollNow(limit, types, dueLevels),
    );
    this.tail = run.catch(() => {});
    return run;
  }

  /** New work was announced (a local enqueue or a coordinator hint): the floored pass runs at the next poll. */
  onWakeup(): void {
    this.state.wakeup();
  }

  /**
   * Makes the full pass due at the next poll. For changes that return rows to PENDING without moving
   * their scheduled time past the floors (resuming a paused queue or type, a manual `UPDATE ... SET status
   * = 'PENDING'`): no cursor or floored pass can see such rows, so without this they wait for the next
   * full pass (at most the current interval: `fullDiscoveryMs` on a node that works, up to
   * `fullDiscoveryMaxMs` on one that has been idle).
   */
  requestFullPass(): void {
    this.state.requestFull();
  }

  /**
   * Cursors, floors, next discovery times, the full pass's current (backed-off) interval and its cap, and
   * counters, for the inspector.
   */
  describe(): Record<string, unknown> {
    const s = this.state;
    return {
      kind: "cursors",
      cursors: [...s.cursors]
        .sort((a, b) => b[0] - a[0])
        .map(([priority, p]) => ({ priority, scheduledTime: usToIso(p.us), id: p.id.toString() })),
      floor: {
        id: s.floorId?.toString() ?? null,
        scheduledTime: s.floorUs === null ? null : usToIso(s.floorUs),
      },
      highWater: s.highWater?.toString() ?? null,
      knownLevels: [...s.known.keys()].sort((a, b) => b - a),
      nextDiscoveryAt: s.nextDiscoveryAt,
      nextFullDiscoveryAt: s.nextFullDiscoveryAt,
      fullDiscoveryIntervalMs: s.fullIntervalMs,
      fullDiscoveryMaxMs: s.fullDiscoveryMaxMs,
      discoveryDue: s.discoveryDue,
      fullDiscoveryDue: s.fullDue,
      counters: { ...s.counters, passes: { ...s.counters.passes } },
    };
  }

  private args(limit: number, types: readonly string[]): CursorClaimArgs {
    return {
      nodeId: this.o.nodeId,
      limit,
      types,
      boostIntervalMs: this.o.boostIntervalMs,
      withPayload: this.o.withPayload,
      now: this.o.databaseNow?.() ?? null,
    };
  }

  private now(): number {
    return this.o.clock.now();
  }

  /**
   * One statement of the pass under the node's claim budget for its kind (./claim-budgets.ts): null
   * when it ran out of time. Without budgets, the statement as it is.
   */
  private async budgeted<T extends { jobs: ClaimedJob[] }>(
    kind: ClaimStatementKind,
    fn: (db: Queryable) => Promise<T>,
  ): Promise<T | null> {
    const pool = this.o.store.pool;
    const budgets = this.o.budgets;
    if (!budgets) return fn(pool);
    return budgets.run(
      kind,
      (ms) => (ms > 0 ? inHeldTransaction(pool, fn, { statementTimeoutMs: ms }) : fn(pool)),
      (r) => r.jobs.length,
    );
  }

  private async pollNow(
    limit: number,
    types: readonly string[],
    dueLevels: readonly number[],
  ): Promise<PollReport> {
    const s = this.state;
    if (limit <= 0 || types.length === 0) return { kind: "skip", jobs: [], statements: 0 };
    const kind = s.plan(this.now(), types, dueLevels);
    s.counters.passes[kind]++;
    const t = this.o.store.tables;
    const args = this.args(limit, types);
    const token = s.begin();
    switch (kind) {
      case "skip":
        s.counters.skippedPolls++;
        return { kind, jobs: [], statements: 0 };
      case "seek": {
        const targets = s.seekTargets("seek", this.now());
        s.counters.queries++;
        const r = await this.budgeted("unkeyed", (db) => seekClaim(db, t, args, targets));
        // Out of time: nothing moved, and the cursors stay where they were for the next poll.
        if (r === null) return { kind, jobs: [], statements: 1 };
        s.afterSeek(targets, { claimed: r.positions, heads: r.heads, limit, nowUs: r.nowUs }, this.now());
        return { kind, jobs: r.jobs, statements: 1 };
      }
      case "full": {
        s.counters.queries++;
        const r = await this.budgeted("full", (db) => fullPassClaim(db, t, args));
        // Out of time: the full pass stays due (only its outcome clears it), with a longer budget.
        if (r === null) return { kind, jobs: [], statements: 1 };
        s.afterFull(
          token,
          { claimed: r.positions, heads: r.heads, limit, nowUs: r.nowUs, highId: r.highId, levels: r.levels },
          this.now(),
        );
        return { kind, jobs: r.jobs, statements: 1 };
      }
      case "floored":
        return this.floored(token, limit, args, dueLevels);
    }
  }

  private async floored(
    token: PassToken,
    limit: number,
    args: CursorClaimArgs,
    dueLevels: readonly number[],
  ): Promise<PollReport> {
    const s = this.state;
    const targets = s.seekTargets("floored", this.now(), dueLevels);
    s.counters.queries++;
    const r = await this.budgeted("floored", (db) =>
      flooredClaim(db, this.o.store.tables, args, targets, s.floorId ?? 0n, this.window),
    );
    // Out of time: the floored pass stays due (only its outcome clears it), with a longer budget.
    if (r === null) return { kind: "floored", jobs: [], statements: 1 };
    // Always an outcome, even for an empty window and no targets: it then moves nothing, as null did.
    s.afterFloored(
      token,
      targets,
      r.window,
      { claimed: r.positions, heads: r.heads, limit, nowUs: r.nowUs },
      this.now(),
    );
    return { kind: "floored", jobs: r.jobs, statements: 1 };
  }
}
