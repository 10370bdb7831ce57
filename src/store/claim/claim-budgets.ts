/**
 * A node's claim statements under a time budget (issue 44, docs/fairness.md#one-slow-claim-never-stalls-the-node).
 * A claimer runs each statement through {@link ClaimBudgets.run} with the statement's kind: the statement
 * gets the kind's current budget (src/logic/claim-budget.ts decides it), and when PostgreSQL cancels it at
 * that budget (SQLSTATE 57014) the claim gives up for this poll: `run` answers null and the claimer claims
 * nothing this time. Every statement is reported (kind, time, outcome), which the runtime turns into the
 * `claim-statement` event and observability/ into a histogram. The plain unkeyed claim runs bare while it
 * answers fast (src/logic/claim-budget.ts's unkeyedGuarded says why).
 */
import type { Clock } from "../../core/clock.js";
import { isStatementCanceled } from "../../db/held-client.js";
import {
  claimBudgetCap,
  nextClaimBudget,
  unkeyedGuarded,
  type ClaimBudgetConfig,
  type ClaimStatementOutcome,
} from "../../logic/claim-budget.js";

/**
 * Which claim statement ran: `keyed` (concurrency keys), `unkeyed` (the classic claim, or a cursor seek),
 * `floored` (claim cursors' discovery above the floors) or `full` (claim cursors' full discovery).
 */
export type ClaimStatementKind = "keyed" | "unkeyed" | "floored" | "full";

/** One claim statement, as reported. */
export interface ClaimStatementReport {
  kind: ClaimStatementKind;
  /** From sending it to its answer or its failure (the node's clock, ms). */
  durationMs: number;
  outcome: ClaimStatementOutcome;
  /** Rows it claimed (0 unless `ok`). */
  claimed: number;
  /** The budget it ran with (ms; 0: none). */
  budgetMs: number;
}

/** The budgets of one node's claim statements, per kind. */
export class ClaimBudgets {
  private readonly current = new Map<ClaimStatementKind, number>();
  private readonly config: ClaimBudgetConfig;

  /**
   * @param baseMs the budget of a statement whose kind last answered (ms); 0: no budget.
   * @param clock times the statements.
   * @param report hears every statement; a throw from it is ignored (it must not fail a claim).
   */
  constructor(
    baseMs: number,
    private readonly clock: Clock,
    private readonly report: (r: ClaimStatementReport) => void = () => {},
  ) {
    this.config = { baseMs, maxMs: claimBudgetCap(baseMs) };
  }

  /** The last plain unkeyed statement: its time and outcome (for {@link unkeyedGuarded}). */
  private lastUnkeyed: { ms: number; outcome: ClaimStatementOutcome } | null = null;

  /** The budget the next statement of `kind` gets (ms; 0: none, and for `unkeyed` while it answers fast). */
  budgetOf(kind: ClaimStatementKind): number {
    if (kind === "unkeyed" && !unkeyedGuarded(this.lastUnkeyed, this.config.baseMs)) return 0;
    return this.current.get(kind) ?? this.config.baseMs;
  }

  /**
   * Runs one statement of `kind` with its budget: its result, or null when it ran out of time (the claim
   * gives up for this poll). Any other failure is rethrown.
   */
  async run<T>(
    kind: ClaimStatementKind,
    statement: (budgetMs: number) => Promise<T>,
    claimed: (result: T) => number,
  ): Promise<T | null> {
    const budgetMs = this.budgetOf(kind);
    const started = this.clock.now();
    const end = (outcome: ClaimStatementOutcome, n: number) => {
      const durationMs = this.clock.now() - started;
      if (budgetMs > 0) this.current.set(kind, nextClaimBudget(budgetMs, outcome, this.config));
      if (kind === "unkeyed") this.lastUnkeyed = { ms: durationMs, outcome };
      try {
        this.report({ kind, durationMs, outcome, claimed: n, budgetMs });
      } catch {
        // A listener's throw is not the claim's failure.
      }
    };
    let result: T;
    try {
      result = await statement(budgetMs);
    } catch (error) {
      if (budgetMs > 0 && isStatementCanceled(error)) {
        end("timeout", 0);
        return null;
      }
      end("error", 0);
      throw error;
    }
    end("ok", claimed(result));
    return result;
  }
}
