import { describe, expect, it } from "vitest";
import {
  afterPoll,
  afterWakeup,
  defaultPollingConfig,
  initialPollingState,
} from "../../../src/logic/polling-strategy.js";
import type { PollSample } from "../../../src/logic/polling-strategy.js";

// End-to-end runs of the polling reducer over simulated time; the single rules are in polling-strategy.test.ts.

const cfg = defaultPollingConfig;
const empty = (at: number): PollSample => ({ at, claimed: 0, limit: 10 });
const half = (at: number): PollSample => ({ at, claimed: 5, limit: 10 });
const full = (at: number): PollSample => ({ at, claimed: 10, limit: 10 });

describe("simulated runs", () => {
  it("five minutes of empty polls reach deep idle; a wakeup exits it at once", () => {
    let s = initialPollingState(0, cfg);
    let now = 0;
    const trace: { at: number; mode: string; delay: number }[] = [];
    while (s.mode !== "deep-idle") {
      now += s.delayMs;
      s = afterPoll(s, empty(now), 0.25, cfg);
      trace.push({ at: now, mode: s.mode, delay: s.delayMs });
      expect(trace.length).toBeLessThan(100);
    }
    const last = trace.at(-1)!;
    const beforeLast = trace.at(-2)!;
    expect(last.at).toBeGreaterThanOrEqual(300_000);
    expect(beforeLast.at).toBeLessThan(300_000);
    expect(beforeLast.mode).toBe("normal");
    // The empty-poll backoff only grows, and is capped by max * load factor (30 s * 0.75).
    const delays = trace.slice(0, -1).map((t) => t.delay);
    expect(delays).toEqual([...delays].sort((a, b) => a - b));
    expect(Math.max(...delays)).toBe(22_500);
    expect(last.delay).toBe(60_000);

    s = afterWakeup(s, now + 10_000, cfg);
    expect(s).toMatchObject({ mode: "burst", delayMs: 500 });
    now += 10_000 + 500;
    s = afterPoll(s, full(now), 0.25, cfg);
    expect(s).toMatchObject({ mode: "burst", burstRemaining: 4, lastWorkAt: now });
    for (let i = 0; i < 4; i++) s = afterPoll(s, empty((now += 500)), 0.25, cfg);
    expect(s.mode).toBe("normal");
  });

  it("sustained full batches poll four times faster after the streak", () => {
    let s = initialPollingState(0, cfg);
    const delays: number[] = [];
    for (let at = 1; at <= 4; at++) {
      s = afterPoll(s, full(at), 0.5, cfg);
      delays.push(s.delayMs);
    }
    // 2000 * 1 * 0.5 = 1000 each time; divided by 4 from the third full batch on.
    expect(delays).toEqual([1000, 1000, 250, 250]);
    s = afterPoll(s, half(5), 0.5, cfg);
    expect(s.delayMs).toBe(Math.round(2000 * (1 - (4 + 0.5) / 5 / 2)));
  });
});
