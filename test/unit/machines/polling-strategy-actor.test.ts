import { createActor, SimulatedClock } from "xstate";
import { describe, expect, it } from "vitest";
import { pollingStrategyLogic } from "../../../src/machines/polling-strategy-actor.js";
import {
  afterPoll,
  afterWakeup,
  defaultPollingConfig,
  initialPollingState,
} from "../../../src/logic/polling-strategy.js";
import type { PollingConfig, PollingState } from "../../../src/logic/polling-strategy.js";

// The strategy actor is a transition actor over the pure reducers. Time is the SimulatedClock's: each
// poll happens `delayMs` after the previous one, as the poller would run it.

const cfg = defaultPollingConfig;
const T0 = 1_700_000_000_000;

function strategy(config: PollingConfig = cfg) {
  const clock = new SimulatedClock();
  clock.set(T0);
  const actor = createActor(pollingStrategyLogic, { clock, input: { config, now: clock.now() } }).start();
  const ctx = () => actor.getSnapshot().context;
  return {
    clock,
    actor,
    ctx,
    /** Waits the current delay, then reports a poll that claimed `claimed` of `limit`. */
    pollAfterDelay: (claimed: number, limit = 10, utilization = 0.25) => {
      clock.increment(ctx().delayMs);
      actor.send({ type: "POLLED", sample: { at: clock.now(), claimed, limit }, utilization });
      return ctx();
    },
    wakeup: () => actor.send({ type: "WAKEUP", now: clock.now() }),
  };
}

/** The pure part of the context (the actor adds `config`). */
function pure(s: PollingState & { config?: unknown }): PollingState {
  const { config: _config, ...rest } = s;
  return rest;
}

describe("polling strategy actor", () => {
  it("starts in normal mode at minDelayMs, with lastWorkAt = the clock at start", () => {
    const s = strategy();
    expect(s.ctx()).toEqual({ ...initialPollingState(T0, cfg), config: cfg });
    expect(s.ctx()).toMatchObject({ mode: "normal", delayMs: 2000, lastWorkAt: T0, window: [] });
  });

  it("POLLED applies afterPoll exactly and keeps the config", () => {
    const s = strategy();
    let expected: PollingState = initialPollingState(T0, cfg);
    const plan = [
      { claimed: 0, limit: 10, utilization: 0 },
      { claimed: 5, limit: 10, utilization: 0.5 },
      { claimed: 10, limit: 10, utilization: 1 },
      { claimed: 0, limit: 0, utilization: 1 },
    ];
    for (const p of plan) {
      s.clock.increment(1000);
      const sample = { at: s.clock.now(), claimed: p.claimed, limit: p.limit };
      s.actor.send({ type: "POLLED", sample, utilization: p.utilization });
      expected = afterPoll(expected, sample, p.utilization, cfg);
      expect(pure(s.ctx())).toEqual(expected);
      expect(s.ctx().config).toBe(cfg);
    }
  });

  it("an empty poll at no load doubles the base delay, halved by the load factor: 2000 ms", () => {
    const s = strategy();
    const c = s.pollAfterDelay(0, 10, 0);
    // clamp(2000 * 2^1) = 4000, * (0.5 + 0) = 2000, * trend 1 (nothing claimed)
    expect(c).toMatchObject({ mode: "normal", delayMs: 2000, consecutiveEmpty: 1 });
  });

  it("three full batches in a row divide the delay by 4", () => {
    const s = strategy();
    s.pollAfterDelay(10, 10, 1);
    s.pollAfterDelay(10, 10, 1);
    expect(s.ctx().delayMs).toBe(1500); // 2000 * 1.5 load * 0.5 trend
    const c = s.pollAfterDelay(10, 10, 1);
    expect(c).toMatchObject({ consecutiveFull: 3, delayMs: 375 });
  });

  it("five minutes of empty polls on the simulated timeline reach deep idle (60 s)", () => {
    const s = strategy();
    const trace: { at: number; mode: string; delayMs: number }[] = [];
    while (s.ctx().mode !== "deep-idle") {
      const c = s.pollAfterDelay(0);
      trace.push({ at: s.clock.now() - T0, mode: c.mode, delayMs: c.delayMs });
      expect(trace.length).toBeLessThan(100);
    }
    const last = trace.at(-1);
    const beforeLast = trace.at(-2);
    expect(last?.at).toBeGreaterThanOrEqual(300_000);
    expect(beforeLast?.at).toBeLessThan(300_000);
    expect(beforeLast?.mode).toBe("normal");
    expect(last?.delayMs).toBe(60_000);
    // The normal delay grows with each empty poll, up to max (30 s) * load factor (0.75).
    expect(trace.slice(0, 4).map((t) => t.delayMs)).toEqual([3000, 6000, 12_000, 22_500]);
    // Deep idle persists while polls stay empty.
    expect(s.pollAfterDelay(0)).toMatchObject({ mode: "deep-idle", delayMs: 60_000 });
  });

  it("a wakeup exits deep idle to burst at once; an empty burst falls back to deep idle", () => {
    const s = strategy();
    while (s.ctx().mode !== "deep-idle") s.pollAfterDelay(0);
    s.clock.increment(10_000);
    s.wakeup();
    expect(pure(s.ctx())).toEqual(afterWakeup(pure(s.ctx()), s.clock.now(), cfg));
    expect(s.ctx()).toMatchObject({ mode: "burst", delayMs: 500, burstRemaining: 4, consecutiveEmpty: 0 });
    const modes = [1, 2, 3, 4].map(() => s.pollAfterDelay(0)).map((c) => [c.mode, c.delayMs]);
    expect(modes).toEqual([
      ["burst", 500],
      ["burst", 500],
      ["burst", 500],
      ["deep-idle", 60_000],
    ]);
  });

  it("a burst poll that finds work refills the burst and records the work", () => {
    const s = strategy();
    s.wakeup();
    s.pollAfterDelay(0);
    expect(s.ctx().burstRemaining).toBe(3);
    const c = s.pollAfterDelay(2);
    expect(c).toMatchObject({ mode: "burst", burstRemaining: 4, delayMs: 500, lastWorkAt: s.clock.now() });
  });

  it("a burst that ends within five minutes of the last work falls back to normal, not deep idle", () => {
    const s = strategy();
    s.wakeup();
    const modes = [1, 2, 3, 4].map(() => s.pollAfterDelay(0).mode);
    expect(modes).toEqual(["burst", "burst", "burst", "normal"]);
    expect(s.ctx().burstRemaining).toBe(0);
  });

  it("uses the config from its input (a custom burst delay)", () => {
    const custom = { ...cfg, burstDelayMs: 100, burstPolls: 2 };
    const s = strategy(custom);
    s.wakeup();
    expect(s.ctx()).toMatchObject({ mode: "burst", delayMs: 100, burstRemaining: 2 });
    expect(s.ctx().config).toBe(custom);
  });
});
