import { describe, expect, it } from "vitest";
import {
  ageBoost,
  compareClaimOrder,
  defaultBoostIntervalMs,
  effectivePriority,
} from "../../../src/logic/age-boost.js";
import type { ClaimOrderKey } from "../../../src/logic/age-boost.js";

const I = defaultBoostIntervalMs; // 15 minutes
const T0 = Date.UTC(2024, 0, 1);

describe("ageBoost", () => {
  it("defaults to 15 minutes", () => {
    expect(defaultBoostIntervalMs).toBe(900_000);
  });

  it.each([
    { waited: 0, interval: I, expected: 0 },
    { waited: 1, interval: I, expected: 0 },
    { waited: I - 1, interval: I, expected: 0 },
    { waited: I, interval: I, expected: 1 },
    { waited: I + 1, interval: I, expected: 1 },
    { waited: 2 * I - 1, interval: I, expected: 1 },
    { waited: 2 * I, interval: I, expected: 2 },
    { waited: 24 * 60 * 60_000, interval: I, expected: 96 },
    { waited: -1, interval: I, expected: 0 }, // not due yet: greatest(0, ...)
    { waited: -10 * I, interval: I, expected: 0 },
    { waited: 10 * I, interval: 0, expected: 0 }, // boosting disabled
    { waited: 10 * I, interval: -I, expected: 0 },
    { waited: 999, interval: 1000, expected: 0 },
    { waited: 1000, interval: 1000, expected: 1 },
  ])("waited $waited ms, interval $interval -> $expected", ({ waited, interval, expected }) => {
    expect(ageBoost(T0, T0 + waited, interval)).toBe(expected);
  });
});

describe("effectivePriority", () => {
  it.each([
    { priority: 0, waited: 0, expected: 0 },
    { priority: 5, waited: I - 1, expected: 5 },
    { priority: 5, waited: I, expected: 6 },
    { priority: -2, waited: 3 * I, expected: 1 },
    { priority: -2, waited: -3 * I, expected: -2 },
  ])("priority $priority after $waited ms -> $expected", ({ priority, waited, expected }) => {
    expect(effectivePriority(priority, T0, T0 + waited, I)).toBe(expected);
  });
});

describe("compareClaimOrder", () => {
  const job = (priority: number, scheduledTimeMs: number, id: ClaimOrderKey["id"]): ClaimOrderKey => ({
    priority,
    scheduledTimeMs,
    id,
  });
  const now = T0 + 10 * I;

  it.each([
    { why: "higher priority first", a: job(5, now, 1), b: job(1, now, 2), sign: -1 },
    { why: "lower priority after", a: job(1, now, 1), b: job(5, now, 2), sign: 1 },
    { why: "equal priority: older first", a: job(1, now - 1, 9), b: job(1, now, 1), sign: -1 },
    { why: "same time: smaller id first", a: job(1, now, 2), b: job(1, now, 10), sign: -1 },
    { why: "ids compare numerically as strings", a: job(1, now, "10"), b: job(1, now, "9"), sign: 1 },
    { why: "bigint ids", a: job(1, now, 9007199254740993n), b: job(1, now, 9007199254740992n), sign: 1 },
    { why: "mixed id types", a: job(1, now, "9007199254740993"), b: job(1, now, 9007199254740991), sign: 1 },
    { why: "identical keys", a: job(1, now, "7"), b: job(1, now, 7n), sign: 0 },
    { why: "non-numeric ids fall back to strings", a: job(1, now, "b"), b: job(1, now, "a"), sign: 1 },
    // Aged low priority overtakes new high priority: 0 + 4 boosts (1 hour) vs 3 + 0.
    { why: "aged job overtakes", a: job(0, now - 4 * I, 2), b: job(3, now, 1), sign: -1 },
    // Exactly at the boundary the aged job ties on effective priority and wins by age; 1 ms less and it loses.
    { why: "boundary: tie, older wins", a: job(0, now - 3 * I, 2), b: job(3, now, 1), sign: -1 },
    { why: "boundary - 1 ms: loses", a: job(0, now - 3 * I + 1, 2), b: job(3, now, 1), sign: 1 },
    { why: "future jobs get no boost", a: job(0, now + 100 * I, 1), b: job(1, now + 200 * I, 2), sign: 1 },
  ])("$why", ({ a, b, sign }) => {
    expect(Math.sign(compareClaimOrder(a, b, now, I))).toBe(sign);
    expect(Math.sign(compareClaimOrder(b, a, now, I))).toBe(-sign || 0);
  });

  it("without boosting, priority alone decides", () => {
    const old = job(0, now - 100 * I, 1);
    const fresh = job(1, now, 2);
    expect(Math.sign(compareClaimOrder(old, fresh, now, 0))).toBe(1);
    expect(Math.sign(compareClaimOrder(old, fresh, now, I))).toBe(-1);
  });

  it("sorts a queue in claim order", () => {
    const queue = [
      job(0, now, "100"),
      job(2, now - 1, "3"),
      job(0, now, "20"),
      job(-1, now - 5 * I, "5"), // effective 4
      job(2, now - 1, "1"),
      job(3, now, "50"),
    ];
    const ids = [...queue].sort((a, b) => compareClaimOrder(a, b, now, I)).map((j) => String(j.id));
    expect(ids).toEqual(["5", "50", "1", "3", "20", "100"]);
  });
});
