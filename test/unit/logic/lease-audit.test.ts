import { describe, expect, it } from "vitest";
import { auditSettles, leaseAuditDelayMs, strandedLeases } from "../../../src/logic/lease-audit.js";

describe("leaseAuditDelayMs", () => {
  const base = { intervalMs: 60_000, graceMs: 2000 };
  it.each([
    // now, suspectAt, failed -> delay
    { now: 1000, suspectAt: null, failed: false, expected: 60_000 }, // nothing suspected: the interval
    { now: 1000, suspectAt: 1000, failed: false, expected: 2000 }, // a grace after the failure
    { now: 1000, suspectAt: 500, failed: false, expected: 1500 },
    { now: 9000, suspectAt: 500, failed: false, expected: 0 }, // overdue: at once
    { now: 9000, suspectAt: 500, failed: true, expected: 2000 }, // failed: not a busy loop
    { now: 1000, suspectAt: null, failed: true, expected: 60_000 }, // failed without a suspicion: the interval
    { now: 1000, suspectAt: 1000, failed: true, expected: 2000 },
  ])("now $now, suspected at $suspectAt, failed $failed -> $expected", (row) => {
    expect(leaseAuditDelayMs({ ...base, ...row })).toBe(row.expected);
  });

  it.each([
    // a grace longer than the interval is capped by the interval; a tiny grace still backs off 100 ms
    { intervalMs: 1000, graceMs: 5000, suspectAt: 0, failed: false, expected: 1000 },
    { intervalMs: 1000, graceMs: 5000, suspectAt: 0, failed: true, expected: 1000 },
    { intervalMs: 60_000, graceMs: 10, suspectAt: 0, failed: true, expected: 100 },
  ])("interval $intervalMs, grace $graceMs, failed $failed -> $expected", (row) => {
    expect(leaseAuditDelayMs({ now: 0, ...row })).toBe(row.expected);
  });

  it("never waits past the grace once a failure is suspected (the documented bound)", () => {
    for (let now = 0; now <= 5000; now += 125) {
      const d = leaseAuditDelayMs({ now, intervalMs: 60_000, graceMs: 2000, suspectAt: 0, failed: false });
      expect(now + d).toBeLessThanOrEqual(Math.max(now, 2000));
    }
  });
});

describe("auditSettles", () => {
  it.each([
    { startedAt: 2500, suspectAt: 500, expected: true },
    { startedAt: 2499, suspectAt: 500, expected: false }, // the failure's leases may be younger than the grace
    { startedAt: 0, suspectAt: null, expected: true },
  ])("started $startedAt, suspected $suspectAt -> $expected", (row) => {
    expect(auditSettles(row.startedAt, row.suspectAt, 2000)).toBe(row.expected);
  });
});

describe("strandedLeases", () => {
  it.each([
    { leased: ["1", "2", "3"], held: ["2"], expected: ["1", "3"] },
    { leased: ["1", "2"], held: ["1", "2", "9"], expected: [] },
    { leased: [], held: ["1"], expected: [] },
    { leased: ["10", "2"], held: [], expected: ["10", "2"] }, // in the read's order
  ])("leased $leased, held $held -> $expected", (row) => {
    expect(strandedLeases(row.leased, new Set(row.held))).toEqual(row.expected);
  });
});
