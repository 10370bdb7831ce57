import { describe, expect, it } from "vitest";
import {
  estimateClockSkew,
  heartbeatDelayMs,
  leaseDeadline,
  signalSweepDelayMs,
  skewExceeded,
  sweepReady,
  sweepRestMs,
} from "../../../src/logic/cluster-logic.js";

describe("heartbeatDelayMs", () => {
  it.each([
    // interval, lag, duration, failed -> delay
    { intervalMs: 5000, lagMs: 0, beatDurationMs: 0, failed: false, expected: 5000 },
    { intervalMs: 5000, lagMs: 0, beatDurationMs: 2, failed: false, expected: 4998 },
    { intervalMs: 5000, lagMs: 1500, beatDurationMs: 500, failed: false, expected: 3000 },
    { intervalMs: 5000, lagMs: 4000, beatDurationMs: 0, failed: false, expected: 1000 },
    { intervalMs: 5000, lagMs: 4800, beatDurationMs: 0, failed: false, expected: 500 }, // floor: a tenth
    { intervalMs: 5000, lagMs: 9000, beatDurationMs: 0, failed: false, expected: 500 },
    { intervalMs: 5000, lagMs: 0, beatDurationMs: 20_000, failed: false, expected: 500 },
    { intervalMs: 5000, lagMs: 0, beatDurationMs: 0, failed: true, expected: 2500 }, // half after a failure
    { intervalMs: 300, lagMs: 290, beatDurationMs: 0, failed: false, expected: 50 }, // floor of 50 ms
    { intervalMs: 40, lagMs: 100, beatDurationMs: 0, failed: false, expected: 40 }, // the floor never exceeds the interval
    { intervalMs: 5000, lagMs: Number.NaN, beatDurationMs: -5, failed: false, expected: 5000 }, // bad readings count as 0
  ])("interval $intervalMs, lag $lagMs, beat $beatDurationMs ms, failed $failed -> $expected", (row) => {
    expect(heartbeatDelayMs(row)).toBe(row.expected);
  });

  it("never waits longer when the loop lags more (monotone in lag)", () => {
    let previous = Infinity;
    for (let lag = 0; lag <= 10_000; lag += 250) {
      const d = heartbeatDelayMs({ intervalMs: 5000, lagMs: lag, beatDurationMs: 10, failed: false });
      expect(d).toBeLessThanOrEqual(previous);
      previous = d;
    }
  });

  it("keeps the time between two rows near the interval while lag stays below it", () => {
    for (const lag of [0, 100, 1000, 3000]) {
      const duration = 20;
      const gap =
        heartbeatDelayMs({ intervalMs: 5000, lagMs: lag, beatDurationMs: duration, failed: false }) +
        lag +
        duration;
      expect(gap).toBe(5000);
    }
  });
});

describe("estimateClockSkew", () => {
  it.each([
    { sent: 1000, received: 1010, db: 1005, skewMs: 0, roundTripMs: 10 },
    { sent: 1000, received: 1010, db: 3005, skewMs: 2000, roundTripMs: 10 },
    { sent: 1000, received: 1000, db: -500, skewMs: -1500, roundTripMs: 0 },
    { sent: 1000, received: 1400, db: 1200, skewMs: 0, roundTripMs: 400 }, // slow query, no skew
    { sent: 1000, received: 990, db: 1000, skewMs: 0, roundTripMs: 0 }, // a clock step backwards: rtt 0
  ])(
    "sent $sent, received $received, database $db -> skew $skewMs",
    ({ sent, received, db, skewMs, roundTripMs }) => {
      const s = estimateClockSkew(sent, received, db);
      expect(s).toEqual({ skewMs, roundTripMs, uncertaintyMs: roundTripMs / 2 });
    },
  );
});

describe("skewExceeded", () => {
  it.each([
    { skewMs: 999, uncertaintyMs: 0, exceeded: false },
    { skewMs: 1000, uncertaintyMs: 0, exceeded: false },
    { skewMs: 1001, uncertaintyMs: 0, exceeded: true },
    { skewMs: -1500, uncertaintyMs: 0, exceeded: true },
    { skewMs: 1400, uncertaintyMs: 500, exceeded: false }, // could be a slow query
    { skewMs: -1600, uncertaintyMs: 500, exceeded: true },
  ])("skew $skewMs +- $uncertaintyMs -> $exceeded", ({ skewMs, uncertaintyMs, exceeded }) => {
    expect(skewExceeded({ skewMs, uncertaintyMs, roundTripMs: uncertaintyMs * 2 }, 1000)).toBe(exceeded);
  });
});

describe("leaseDeadline", () => {
  it.each([
    { sent: 0, ttl: 30_000, deadline: 29_000 }, // margin capped at 1 s
    { sent: 100, ttl: 5000, deadline: 4600 }, // a tenth of the TTL
    { sent: 0, ttl: 100, deadline: 90 },
  ])("request at $sent with TTL $ttl -> stop by $deadline", ({ sent, ttl, deadline }) => {
    expect(leaseDeadline(sent, ttl)).toBe(deadline);
  });
});

describe("sweepReady", () => {
  it.each([
    { healthySince: null, now: 100_000, ready: false },
    { healthySince: 90_000, now: 100_000, ready: false }, // 10 s of beats, threshold 15 s
    { healthySince: 85_000, now: 100_000, ready: true },
    { healthySince: 0, now: 100_000, ready: true },
  ])("healthy since $healthySince at $now -> $ready", ({ healthySince, now, ready }) => {
    expect(sweepReady(healthySince, now, 15_000)).toBe(ready);
  });
});

describe("sweepRestMs", () => {
  it.each([
    [2000, 1000],
    [10, 5],
    [11, 5],
  ])("a sweep interval of %i ms rests the lease %i ms", (interval, rest) => {
    // Less than the interval, so a lone node's next try is never refused by its own rest.
    expect(sweepRestMs(interval)).toBe(rest);
    expect(sweepRestMs(interval)).toBeLessThan(interval);
  });
});

describe("signalSweepDelayMs", () => {
  it.each([
    ["no parked job has a deadline: the idle interval", null, 10_000],
    ["the next deadline, rounded up", 250.2, 251],
    ["an overdue deadline: 10 ms, not a spin", -5, 10],
    ["a deadline beyond the interval: that deadline", 5_000, 5_000],
    ["a deadline beyond the idle interval: the idle interval", 86_400_000, 10_000],
    ["the sweep failed: the interval", undefined, 1000],
  ] as [string, number | null | undefined, number][])("%s", (_name, next, expected) => {
    expect(signalSweepDelayMs(next, 1000, 10_000)).toBe(expected);
  });

  it("never idles shorter than the interval", () => {
    expect(signalSweepDelayMs(null, 1000, 200)).toBe(1000);
  });
});
