/**
 * A claimer that adds the keyed claim (./keyed-claim.ts, docs/fairness.md) to a node's unkeyed claimer.
 *
 * Each poll runs both claims, one after the other, and alternates which goes first, so a backlog of keyed
 * jobs and a backlog of unkeyed jobs share a node's room about evenly. While no keyed row is live (the
 * keyed statement says so), the keyed claim is not sent at all until a wakeup (a local enqueue or a
 * coordinator hint) or `recheckMs` later: a node whose jobs carry no keys pays no extra statement per poll.
 * When the unkeyed claim came back with less than it was asked for, the keyed claim goes first for the next
 * `recheckMs` (or until a wakeup); when it came back empty while keyed rows are live, it is not sent at
 * all for that long. A node whose due work all carries keys then sends one statement per poll, not two
 * (an unkeyed claim that finds nothing still reads the oldest rows of the claim index, which are keyed
 * rows it must step over), and unkeyed work that appears meanwhile still gets its turn within `recheckMs`,
 * or at once when its enqueue wakes the node.
 *
 * While no keyed row was live at the last look, a poll woken for new work sends the unkeyed claim alone
 * when it finds jobs, and the keyed look follows at the next poll: a wakeup's jobs then start after one
 * statement, not two.
 *
 * The keyed claim reads a window of keys after the key its previous claim stopped at (migration 0013), so
 * this claimer keeps that key: across polls the window goes round every key with due work.
 */
import type { Clock } from "../../core/clock.js";
import type { Claimer } from "./claimer.js";
import type { ClaimedJob } from "./claim-jobs.js";
import type { KeyedClaim, KeyedClaimArgs } from "./keyed-claim.js";

/** What {@link KeyedClaimer} needs besides the unkeyed claimer it wraps. */
export interface KeyedClaimerOptions {
  /** Runs the keyed claim statement (the store's `claimKeyed`). */
  claimKeyed: (args: KeyedClaimArgs) => Promise<KeyedClaim>;
  nodeId: string;
  boostIntervalMs: number;
  withPayload: boolean;
  clock: Clock;
  /** Only this queue's keyed jobs (a per-queue lane); absent: every queue. */
  queue?: string;
  /** How long a node that saw no keyed row waits before looking again without a wakeup. Default 1000. */
  recheckMs?: number;
}

/** The unkeyed claimer plus the keyed claim; see the module comment. */
export class KeyedClaimer implements Claimer {
  private keyedFirst = false;
  private keyedLive = true;
  private nextLookMs = 0;
  private keyedClaims = 0;
  private keyedJobs = 0;
  private skipped = 0;
  private lastHeldBack = false;
  private secondFailures = 0;
  /** Until when the keyed claim goes first: the unkeyed claim's last answer was short. */
  private keyedFirstUntilMs = 0;
  /** Until when the unkeyed claim is not sent: its last answer was empty while keyed rows were live. */
  private unkeyedQuietUntilMs = 0;
  private unkeyedSkipped = 0;
  /** A poll returned unkeyed jobs without looking at keyed rows: the next poll looks. */
  private keyedOwed = false;
  /** Where the next keyed claim's window starts. */
  private afterKey: string | null = null;

  constructor(
    /** The unkeyed claimer this one wraps (the node's cursor or classic claimer). */
    readonly inner: Claimer,
    private readonly o: KeyedClaimerOptions,
  ) {}

  async claim(limit: number, types: readonly string[], dueLevels?: readonly number[]): Promise<ClaimedJob[]> {
    const now = this.o.clock.now();
    const lookKeyed = this.keyedLive || now >= this.nextLookMs;
    if (!lookKeyed) {
      this.skipped++;
      return this.inner.claim(limit, types, dueLevels);
    }
    if (now < this.unkeyedQuietUntilMs) {
      this.unkeyedSkipped++;
      return this.keyed(limit, types);
    }
    const unkeyed = async (room: number): Promise<ClaimedJob[]> => {
      const jobs = await this.inner.claim(room, types, dueLevels);
      const until = this.o.clock.now() + (this.o.recheckMs ?? 1000);
      this.keyedFirstUntilMs = jobs.length < room ? until : 0;
      this.unkeyedQuietUntilMs = jobs.length === 0 && this.keyedLive ? until : 0;
      return jobs;
    };
    if (!this.keyedLive && !this.keyedOwed) {
      // No keyed row was live at the last look, so the work that woke this poll most likely carries no
      // key: its jobs start now, without waiting for a keyed statement (that wait was most of a wakeup's
      // pickup time), and the next poll looks at keyed rows.
      const jobs = await unkeyed(limit);
      if (jobs.length > 0) {
        this.keyedOwed = true;
        return jobs;
      }
      return this.keyed(limit, types);
    }
    this.keyedOwed = false;
    this.keyedFirst = now < this.keyedFirstUntilMs || !this.keyedFirst;
    const [first, second] = this.keyedFirst
      ? [() => this.keyed(limit, types), unkeyed]
      : [() => unkeyed(limit), (room: number) => this.keyed(room, types)];
    const claimed = await first();
    const room = limit - claimed.length;
    if (room <= 0) return claimed;
    try {
      return [...claimed, ...(await second(room))];
    } catch (error) {
      // The first claim committed: its jobs are leased to this node. Rejecting now would lose them to the
      // runtime, held by a live node that never runs them and that no sweep rescues. They are returned;
      // a database that is still failing fails the next poll's first claim, which reports it.
      if (claimed.length === 0) throw error;
      this.secondFailures++;
      return claimed;
    }
  }

  private async keyed(limit: number, types: readonly string[]): Promise<ClaimedJob[]> {
    this.keyedClaims++;
    const r = await this.o.claimKeyed({
      nodeId: this.o.nodeId,
      limit,
      types,
      boostIntervalMs: this.o.boostIntervalMs,
      withPayload: this.o.withPayload,
      queue: this.o.queue ?? null,
      afterKey: this.afterKey,
    });
    this.keyedLive = r.keyed;
    this.afterKey = r.nextKey;
    // Keyed rows are live but the claim took fewer than asked: some key was at its limit (or its rows
    // are running or not due yet); a freed slot is worth a claim at once.
    this.lastHeldBack = r.keyed && r.jobs.length < limit;
    if (!r.keyed) this.nextLookMs = this.o.clock.now() + (this.o.recheckMs ?? 1000);
    this.keyedJobs += r.jobs.length;
    return r.jobs;
  }

  heldBack(): boolean {
    return this.lastHeldBack;
  }

  onWakeup(): void {
    // New work may carry a key, or none: look at the next poll, with both claims.
    this.nextLookMs = 0;
    this.keyedFirstUntilMs = 0;
    this.unkeyedQuietUntilMs = 0;
    this.inner.onWakeup();
  }

  requestFullPass(): void {
    this.nextLookMs = 0;
    this.unkeyedQuietUntilMs = 0;
    this.inner.requestFullPass?.();
  }

  describe(): Record<string, unknown> {
    return {
      ...this.inner.describe(),
      keyed: {
        live: this.keyedLive,
        claims: this.keyedClaims,
        claimed: this.keyedJobs,
        skippedPolls: this.skipped,
        unkeyedSkippedPolls: this.unkeyedSkipped,
        secondClaimFailures: this.secondFailures,
        afterKey: this.afterKey,
      },
    };
  }
}
