/**
 * A claimer that adds the keyed claim (./keyed-claim.ts, docs/fairness.md) to a node's unkeyed claimer.
 * Which claims a poll sends, and in which order, is src/logic/keyed-claim-policy.ts's decision; this
 * class runs them and keeps the policy's memory.
 *
 * Two claims in one poll run at once, each on its own connection and under its own time budget, so
 * neither waits behind the other (issue 44): when one fails, the other's jobs are returned all the same
 * (they are leased to this node already).
 *
 * The keyed claim reads a window of keys after the key its previous claim stopped at (migration 0013), so
 * this claimer keeps that key: across polls the window goes round every key with due work.
 */
import type { Clock } from "../../core/clock.js";
import {
  afterFullPassRequest,
  afterKeyedAnswer,
  afterKeyedWakeup,
  afterUnkeyedAnswer,
  initialKeyedClaimMemory,
  planKeyedClaim,
  splitRoom,
  type KeyedClaimMemory,
  type KeyedClaimPlan,
} from "../../logic/keyed-claim-policy.js";
import type { ClaimBudgets } from "./claim-budgets.js";
import type { Claimer, ClaimerOptions } from "./claimer.js";
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
  /** The time budgets of the node's claim statements (./claim-budgets.ts); absent: no budget. */
  budgets?: ClaimBudgets;
  /** See {@link ClaimerOptions.onStatementFailed}. */
  onStatementFailed?: ClaimerOptions["onStatementFailed"];
}

/** The unkeyed claimer plus the keyed claim; see the module comment. */
export class KeyedClaimer implements Claimer {
  private memory: KeyedClaimMemory = initialKeyedClaimMemory;
  private keyedClaims = 0;
  private keyedJobs = 0;
  private skipped = 0;
  private lastHeldBack = false;
  private secondFailures = 0;
  private keyedTimeouts = 0;
  private unkeyedSkipped = 0;
  /** Where the next keyed claim's window starts. */
  private afterKey: string | null = null;

  constructor(
    /** The unkeyed claimer this one wraps (the node's cursor or classic claimer). */
    readonly inner: Claimer,
    private readonly o: KeyedClaimerOptions,
  ) {}

  private get recheckMs(): number {
    return this.o.recheckMs ?? 1000;
  }

  async claim(
    limit: number,
    types: readonly string[],
    dueLevels?: readonly number[],
    early?: (jobs: readonly ClaimedJob[]) => void,
  ): Promise<ClaimedJob[]> {
    const { plan, memory } = planKeyedClaim(this.memory, this.o.clock.now());
    this.memory = memory;
    switch (plan.kind) {
      case "unkeyed":
        this.skipped++;
        return this.inner.claim(limit, types, dueLevels);
      case "keyed":
        this.unkeyedSkipped++;
        return this.keyed(limit, types);
      case "unkeyed-then-keyed-if-empty": {
        const jobs = await this.unkeyed(plan, limit, types, dueLevels);
        return jobs.length > 0 ? jobs : this.keyed(limit, types);
      }
      case "both": {
        // Both at once, on two connections: a slow keyed claim never holds back unkeyed jobs, nor the
        // other way round (issue 44). The room is split so the two never take more than `limit` together.
        const room = splitRoom(this.memory, limit, plan.keyedFirst);
        // The jobs of the first claim to answer go to `early` at once, so they start while the other
        // claim is still out, however long it takes (up to its budget).
        let delivered = false;
        /** Rows each side took, those handed over early included. */
        const took = { keyed: 0, unkeyed: 0 };
        const first = async (side: "keyed" | "unkeyed", p: Promise<ClaimedJob[]>): Promise<ClaimedJob[]> => {
          const jobs = await p;
          took[side] = jobs.length;
          if (early === undefined || delivered || jobs.length === 0) return jobs;
          delivered = true;
          early(jobs);
          return [];
        };
        const [keyed, unkeyed] = await Promise.allSettled([
          room.keyed > 0 ? first("keyed", this.keyed(room.keyed, types)) : Promise.resolve([]),
          room.unkeyed > 0
            ? first("unkeyed", this.unkeyed(plan, room.unkeyed, types, dueLevels))
            : Promise.resolve([]),
        ]);
        let k = keyed.status === "fulfilled" ? keyed.value : [];
        let u = unkeyed.status === "fulfilled" ? unkeyed.value : [];
        // A side that filled its share gets the room the other left, in one more statement: else the poll
        // comes back short whenever the other side has little, and the poller waits its delay instead of
        // claiming again (a 20,000-job drain without keys ran at a third of its speed before this).
        const left = limit - took.keyed - took.unkeyed;
        const more = async (side: "keyed" | "unkeyed"): Promise<ClaimedJob[]> => {
          try {
            return side === "keyed"
              ? await this.keyed(left, types)
              : await this.unkeyed(plan, left, types, dueLevels);
          } catch (error) {
            this.secondFailures++;
            this.o.onStatementFailed?.(error, side);
            return [];
          }
        };
        if (left > 0 && unkeyed.status === "fulfilled" && room.unkeyed > 0 && took.unkeyed === room.unkeyed) {
          u = [...u, ...(await more("unkeyed"))];
        } else if (left > 0 && keyed.status === "fulfilled" && room.keyed > 0 && took.keyed === room.keyed) {
          k = [...k, ...(await more("keyed"))];
        }
        const claimed = plan.keyedFirst ? [...k, ...u] : [...u, ...k];
        const failed = [keyed, unkeyed].filter((r) => r.status === "rejected");
        if (failed.length > 0) {
          // A claim that committed leased its jobs to this node: rejecting would lose them to the runtime,
          // held by a live node that never runs them and that no sweep rescues. They are returned; a
          // database that is still failing fails the next poll, which reports it.
          if (claimed.length === 0 && !delivered) throw (failed[0] as PromiseRejectedResult).reason;
          this.secondFailures += failed.length;
          if (keyed.status === "rejected") this.o.onStatementFailed?.(keyed.reason, "keyed");
          if (unkeyed.status === "rejected") this.o.onStatementFailed?.(unkeyed.reason, "unkeyed");
        }
        return claimed;
      }
    }
  }

  private async unkeyed(
    plan: KeyedClaimPlan,
    room: number,
    types: readonly string[],
    dueLevels: readonly number[] | undefined,
  ): Promise<ClaimedJob[]> {
    const jobs = await this.inner.claim(room, types, dueLevels);
    this.memory = afterUnkeyedAnswer(
      this.memory,
      plan,
      { claimed: jobs.length, asked: room },
      this.o.clock.now(),
      this.recheckMs,
    );
    return jobs;
  }

  private async keyed(limit: number, types: readonly string[]): Promise<ClaimedJob[]> {
    this.keyedClaims++;
    const args = {
      nodeId: this.o.nodeId,
      limit,
      types,
      boostIntervalMs: this.o.boostIntervalMs,
      withPayload: this.o.withPayload,
      queue: this.o.queue ?? null,
      afterKey: this.afterKey,
    };
    const budgets = this.o.budgets;
    const r = budgets
      ? await budgets.run(
          "keyed",
          (budgetMs) => this.o.claimKeyed({ ...args, budgetMs }),
          (a) => a.jobs.length,
        )
      : await this.o.claimKeyed(args);
    if (r === null) {
      // Out of time: nothing claimed this poll; the window stays where it was, and a freed slot does not
      // send this claim again at once (the next poll, with a longer budget, does).
      this.keyedTimeouts++;
      this.lastHeldBack = false;
      return [];
    }
    this.memory = afterKeyedAnswer(this.memory, r.keyed, this.o.clock.now(), this.recheckMs, {
      claimed: r.jobs.length,
      asked: limit,
    });
    this.afterKey = r.nextKey;
    // Keyed rows are live but the claim took fewer than asked: some key was at its limit (or its rows
    // are running or not due yet); a freed slot is worth a claim at once.
    this.lastHeldBack = r.keyed && r.jobs.length < limit;
    this.keyedJobs += r.jobs.length;
    return r.jobs;
  }

  heldBack(): boolean {
    return this.lastHeldBack;
  }

  onWakeup(unkeyed?: boolean): void {
    this.memory = afterKeyedWakeup(this.memory, unkeyed === true);
    this.inner.onWakeup(unkeyed);
  }

  requestFullPass(): void {
    this.memory = afterFullPassRequest(this.memory);
    this.inner.requestFullPass?.();
  }

  describe(): Record<string, unknown> {
    return {
      ...this.inner.describe(),
      keyed: {
        live: this.memory.keyedLive,
        claims: this.keyedClaims,
        claimed: this.keyedJobs,
        skippedPolls: this.skipped,
        unkeyedSkippedPolls: this.unkeyedSkipped,
        secondClaimFailures: this.secondFailures,
        timeouts: this.keyedTimeouts,
        afterKey: this.afterKey,
      },
    };
  }
}
