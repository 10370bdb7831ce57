/**
 * How a node claims: the seam between the runtime's poller and the claim SQL. The classic claimer runs
 * the full claim statement every poll; a cursor claimer (claim cursors) can seek past dead tuples and
 * skip queries when it knows there is nothing to claim. The runtime only ever talks to this interface.
 */
import type { Clock } from "../../core/clock.js";
import type { ClaimBudgets } from "./claim-budgets.js";
import type { ClaimedJob } from "./claim-jobs.js";
import type { NodeStore } from "../job-store.js";

/** What a claimer needs to know about its node. */
export interface ClaimerOptions {
  store: NodeStore;
  nodeId: string;
  boostIntervalMs: number;
  withPayload: boolean;
  clock: Clock;
  /** The time budgets of the node's claim statements (./claim-budgets.ts); absent: no budget. */
  budgets?: ClaimBudgets;
  /**
   * A statement of a poll failed while another of the same poll answered, so the poll returns jobs and
   * does not fail. Told here so the failure is still reported: a claim that failed may have committed
   * with its reply lost, and the node's lease audit must look soon (docs/fault-tolerance.md).
   */
  onStatementFailed?: (error: unknown, kind: "keyed" | "unkeyed") => void;
}

/** Claims batches for one node. */
export interface Claimer {
  /**
   * Claims up to `limit` due jobs of `types`, in claim order. `dueLevels` are the priority levels where
   * this node knows rows have just become due (a retry, snooze or delayed enqueue it wrote,
   * src/logic/due-times.ts): a claimer that does not look everywhere every poll must look there now.
   * `early`: a claimer that sends several statements at once hands the jobs of the first to answer here,
   * so they can start while the others are out (issue 44); those jobs are not in the returned array.
   */
  claim(
    limit: number,
    types: readonly string[],
    dueLevels?: readonly number[],
    early?: (jobs: readonly ClaimedJob[]) => void,
  ): Promise<ClaimedJob[]>;
  /**
   * New work was announced (a local enqueue or a coordinator hint). `unkeyed`: the announcement says none
   * of it carries a concurrency key (a claimer that looks at keyed rows separately need not look there).
   */
  onWakeup(unkeyed?: boolean): void;
  /**
   * Existing rows went back to PENDING under their old ids: look at everything at the next poll. Only
   * claimers that look past floors need it (claim cursors); the classic claim sees everything anyway.
   */
  requestFullPass?(): void;
  /**
   * Whether the last claim left keyed work waiting on a concurrency limit (docs/fairness.md): the poller
   * then claims again as soon as a slot frees, since a job ending here may free its key. Absent: never.
   */
  heldBack?(): boolean;
  /** State worth showing in the inspector. */
  describe(): Record<string, unknown>;
}

/** Options of {@link ClassicClaimer}: the node's {@link ClaimerOptions}, optionally narrowed to one queue. */
export interface ClassicClaimerOptions extends ClaimerOptions {
  /** Claim only jobs of this queue (the claimer of a node's per-queue lane). Absent: every queue. */
  queue?: string;
}

/**
 * The classic path: one full claim statement per poll. With `queue` it is the per-queue claimer of a node
 * configured with `queues`: the same statement with a queue filter (src/store/claim/claim-jobs.ts).
 */
export class ClassicClaimer implements Claimer {
  private claims = 0;

  constructor(private readonly o: ClassicClaimerOptions) {}

  /** The classic claim looks at every level every poll, so `dueLevels` needs nothing more. */
  async claim(limit: number, types: readonly string[]): Promise<ClaimedJob[]> {
    this.claims++;
    const args = {
      nodeId: this.o.nodeId,
      limit,
      types,
      boostIntervalMs: this.o.boostIntervalMs,
      withPayload: this.o.withPayload,
      queue: this.o.queue ?? null,
    };
    const budgets = this.o.budgets;
    if (!budgets) return this.o.store.claim(args);
    // Out of time (null): nothing claimed this poll.
    const jobs = await budgets.run(
      "unkeyed",
      (budgetMs) => this.o.store.claim({ ...args, budgetMs }),
      (j) => j.length,
    );
    return jobs ?? [];
  }

  onWakeup(): void {}

  describe(): Record<string, unknown> {
    return this.o.queue === undefined
      ? { kind: "classic", claims: this.claims }
      : { kind: "classic", queue: this.o.queue, claims: this.claims };
  }
}
