/**
 * A claimer that adds the keyed claim (./keyed-claim.ts, docs/fairness.md) to a node's unkeyed claimer.
 *
 * Each poll runs both claims, one after the other, and alternates which goes first, so a backlog of keyed
 * jobs and a backlog of unkeyed jobs share a node's room about evenly. While no keyed row is live (the
 * keyed statement says so), the keyed claim is not sent at all until a wakeup (a local enqueue or a
 * coordinator hint) or `recheckMs` later: a node whose jobs carry no keys pays no extra statement per poll.
 */
import type { Clock } from "../../core/clock.js";
import type { Claimer } from "./claimer.js";
import type { ClaimedJob } from "./claim-jobs.js";
import type { KeyedClaim } from "./keyed-claim.js";
import type { ClaimArgs } from "./claim-jobs.js";

/** What {@link KeyedClaimer} needs besides the unkeyed claimer it wraps. */
export interface KeyedClaimerOptions {
  /** Runs the keyed claim statement (the store's `claimKeyed`). */
  claimKeyed: (args: ClaimArgs) => Promise<KeyedClaim>;
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
    this.keyedFirst = !this.keyedFirst;
    const [first, second] = this.keyedFirst
      ? [() => this.keyed(limit, types), (room: number) => this.inner.claim(room, types, dueLevels)]
      : [() => this.inner.claim(limit, types, dueLevels), (room: number) => this.keyed(room, types)];
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
    });
    this.keyedLive = r.keyed;
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
    // New work may carry a key: look at the next poll.
    this.nextLookMs = 0;
    this.inner.onWakeup();
  }

  requestFullPass(): void {
    this.nextLookMs = 0;
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
        secondClaimFailures: this.secondFailures,
      },
    };
  }
}
