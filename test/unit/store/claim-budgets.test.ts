/**
 * ClaimBudgets (issue 44): each statement gets its kind's budget, a statement canceled at its budget
 * (SQLSTATE 57014) answers null and doubles the next budget, and the plain unkeyed claim runs bare until
 * one of its statements is slow.
 */
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../../src/core/clock.js";
import { ClaimBudgets, type ClaimStatementReport } from "../../../src/store/claim/claim-budgets.js";

const canceled = Object.assign(new Error("canceling statement due to statement timeout"), { code: "57014" });

function budgets() {
  const clock = new ManualClock(0);
  const reports: ClaimStatementReport[] = [];
  return { clock, reports, b: new ClaimBudgets(500, clock, (r) => reports.push(r)) };
}

describe("ClaimBudgets", () => {
  it("gives up at the budget: null, reported as a timeout, twice the budget next, the base after an answer", async () => {
    const { clock, reports, b } = budgets();
    const seen: number[] = [];
    const slow = async (ms: number) => {
      seen.push(ms);
      clock.advance(ms);
      throw canceled;
    };
    expect(await b.run("keyed", slow, () => 0)).toBeNull();
    expect(await b.run("keyed", slow, () => 0)).toBeNull();
    expect(
      await b.run(
        "keyed",
        async (ms) => (seen.push(ms), [1, 2]),
        (r) => r.length,
      ),
    ).toEqual([1, 2]);
    expect(b.budgetOf("keyed")).toBe(500);
    expect(seen).toEqual([500, 1000, 2000]);
    expect(reports.map((r) => [r.kind, r.outcome, r.durationMs, r.claimed])).toEqual([
      ["keyed", "timeout", 500, 0],
      ["keyed", "timeout", 1000, 0],
      ["keyed", "ok", 0, 2],
    ]);
  });

  it("rethrows other failures, reported as errors", async () => {
    const { reports, b } = budgets();
    const lost = new Error("connection lost");
    await expect(
      b.run(
        "full",
        async () => {
          throw lost;
        },
        () => 0,
      ),
    ).rejects.toBe(lost);
    expect(reports[0]).toMatchObject({ kind: "full", outcome: "error" });
  });

  it("runs the plain unkeyed claim bare while it is fast, under its budget after a slow one", async () => {
    const { clock, b } = budgets();
    const seen: number[] = [];
    const took = (elapsed: number) => async (ms: number) => {
      seen.push(ms);
      clock.advance(elapsed);
      return [];
    };
    await b.run("unkeyed", took(5), () => 0);
    await b.run("unkeyed", took(300), () => 0);
    await b.run("unkeyed", took(5), () => 0);
    await b.run("unkeyed", took(5), () => 0);
    expect(seen).toEqual([0, 0, 500, 0]);
    expect(b.budgetOf("floored")).toBe(500);
  });
});
