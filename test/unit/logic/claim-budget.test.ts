import { describe, expect, it } from "vitest";
import {
  claimBudgetCap,
  nextClaimBudget,
  unkeyedGuarded,
  type ClaimStatementOutcome,
} from "../../../src/logic/claim-budget.js";

const c = { baseMs: 500, maxMs: 30_000 };

describe("nextClaimBudget", () => {
  it.each<[number, ClaimStatementOutcome, number]>([
    [500, "ok", 500],
    [8000, "ok", 500],
    [500, "timeout", 1000],
    [1000, "timeout", 2000],
    [20_000, "timeout", 30_000],
    [30_000, "timeout", 30_000],
    [2000, "error", 2000],
    [500, "error", 500],
  ])("after a statement with %i ms that ended %s: %i ms", (current, outcome, next) => {
    expect(nextClaimBudget(current, outcome, c)).toBe(next);
  });

  it("keeps no budget when the base is 0 (budgets off)", () => {
    for (const o of ["ok", "timeout", "error"] as const)
      expect(nextClaimBudget(0, o, { baseMs: 0, maxMs: 0 })).toBe(0);
  });

  it("never goes below the base, even from a smaller current value", () => {
    expect(nextClaimBudget(100, "timeout", c)).toBe(500);
    expect(nextClaimBudget(100, "error", c)).toBe(500);
  });
});

describe("claimBudgetCap", () => {
  it.each([
    [500, 30_000],
    [100, 6000],
    [2000, 60_000],
    [120_000, 120_000],
  ])("base %i ms: cap %i ms", (base, cap) => {
    expect(claimBudgetCap(base)).toBe(cap);
  });
});

describe("unkeyedGuarded", () => {
  it.each<[string, { ms: number; outcome: ClaimStatementOutcome } | null, number, boolean]>([
    ["no statement yet: bare", null, 500, false],
    ["fast answer: bare", { ms: 3, outcome: "ok" }, 500, false],
    ["just under half the budget: bare", { ms: 249, outcome: "ok" }, 500, false],
    ["half the budget or more: guarded", { ms: 250, outcome: "ok" }, 500, true],
    ["timed out: guarded", { ms: 500, outcome: "timeout" }, 500, true],
    ["a fast failure: bare", { ms: 1, outcome: "error" }, 500, false],
    ["budgets off: never", { ms: 9000, outcome: "ok" }, 0, false],
  ])("%s", (_, last, base, guarded) => {
    expect(unkeyedGuarded(last, base)).toBe(guarded);
  });
});
