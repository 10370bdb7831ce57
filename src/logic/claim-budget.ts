/**
 * The time budget of a claim statement (issue 44, docs/fairness.md#one-slow-claim-never-stalls-the-node).
 * Every claim statement runs with `SET LOCAL statement_timeout` at its kind's current budget; past it the
 * claim gives up for this poll. A budget that only ever refused would stall the node for good (a first
 * full pass over a large backlog may simply need longer), so a kind that timed out gets twice the time at
 * its next statement, up to `maxMs`, and a statement that answered brings it back to `baseMs`. Pure: the
 * claimers keep the current budget and report each outcome. The plain unkeyed claim is guarded only
 * while it is slow ({@link unkeyedGuarded}).
 */

/** How a claim statement ended: answered, gave up at its budget, or failed otherwise. */
export type ClaimStatementOutcome = "ok" | "timeout" | "error";

/** A node's claim budget settings (createPawl's `claimStatementTimeoutMs`; the cap is 60 times it, at most 60 s). */
export interface ClaimBudgetConfig {
  /** The budget of a statement whose kind last answered (ms); 0: no budget at all. */
  baseMs: number;
  /** The most a kind's budget grows to after timeouts (ms). */
  maxMs: number;
}

/** The cap on a kind's budget for a base budget of `baseMs`: 60 times it, within [baseMs, 60 s]. */
export function claimBudgetCap(baseMs: number): number {
  return Math.max(baseMs, Math.min(60_000, baseMs * 60));
}

/**
 * The budget of a kind's next statement, after one that ran with `currentMs` ended with `outcome`:
 * doubled (capped) after a timeout, the base after an answer, unchanged after another failure (the
 * database's trouble says nothing about how long the statement needs).
 */
export function nextClaimBudget(
  currentMs: number,
  outcome: ClaimStatementOutcome,
  c: ClaimBudgetConfig,
): number {
  if (c.baseMs <= 0) return 0;
  switch (outcome) {
    case "ok":
      return c.baseMs;
    case "timeout":
      return Math.min(c.maxMs, Math.max(c.baseMs, currentMs * 2));
    case "error":
      return Math.max(c.baseMs, Math.min(c.maxMs, currentMs));
  }
}

/**
 * Whether the node's plain unkeyed claim (the classic claim, a cursor seek: its hot path, one statement
 * per poll) runs under its budget next. The budget costs a transaction of its own, two more round trips
 * per statement (a 20,000-job drain without keys ran 10-30% slower with it on every statement), so that claim
 * runs bare while it answers fast, and under its budget from the statement after one that took half its
 * budget or more, or timed out, until one answers in under half again. Every other kind (keyed, floored,
 * full) always runs under its budget: they are rarer, and the keyed one is what can stall.
 */
export function unkeyedGuarded(
  last: { ms: number; outcome: ClaimStatementOutcome } | null,
  baseMs: number,
): boolean {
  if (baseMs <= 0 || last === null) return false;
  return last.outcome === "timeout" || last.ms >= baseMs / 2;
}
