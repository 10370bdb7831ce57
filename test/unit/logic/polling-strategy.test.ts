import { describe, expect, it } from "vitest";
import { thrown } from "../../helpers/thrown.js";
import {
  afterPoll,
  afterWakeup,
  defaultPollingConfig,
  idleFor,
  initialPollingState,
  loadFactor,
  resolvePollingConfig,
  trendFactor,
} from "../../../src/logic/polling-strategy.js";
import type { PollingConfig, PollingState, PollSample } from "../../../src/logic/polling-strategy.js";

const cfg = defaultPollingConfig;
const empty = (at: number): PollSample => ({ at, claimed: 0, limit: 10 });
const half = (at: number): PollSample => ({ at, claimed: 5, limit: 10 });
const full = (at: number): PollSample => ({ at, claimed: 10, limit: 10 });
const state = (over: Partial<PollingState> = {}): PollingState => ({
  ...initialPollingState(0, cfg),
  ...over,
});

describe("resolvePollingConfig", () => {
  it("has the reference defaults", () => {
    expect(resolvePollingConfig()).toEqual({
      burstDelayMs: 500,
      burstPolls: 4,
      minDelayMs: 2000,
      maxDelayMs: 30_000,
      deepIdleDelayMs: 60_000,
      deepIdleAfterMs: 300_000,
      windowSize: 10,
      fullBatchStreak: 3,
      fullBatchDivisor: 4,
      emptyBackoffFactor: 2,
    });
  });

  it.each([
    { partial: { maxDelayMs: 10_000 } },
    { partial: { burstDelayMs: 2000, minDelayMs: 2000, maxDelayMs: 2000, deepIdleDelayMs: 2000 } },
    {
      partial: {
        fullBatchDivisor: 1,
        emptyBackoffFactor: 1,
        windowSize: 1,
        burstPolls: 1,
        fullBatchStreak: 1,
      },
    },
  ])("accepts $partial", ({ partial }) => {
    expect(resolvePollingConfig(partial)).toEqual({ ...cfg, ...partial });
  });

  it.each([
    { partial: { burstDelayMs: 0 }, fragments: ["pollingConfig.burstDelayMs", "got 0"] },
    { partial: { burstPolls: 0 }, fragments: ["pollingConfig.burstPolls", "integer"] },
    { partial: { burstPolls: 1.5 }, fragments: ["pollingConfig.burstPolls", "1.5"] },
    { partial: { windowSize: 0 }, fragments: ["pollingConfig.windowSize"] },
    { partial: { fullBatchStreak: -1 }, fragments: ["pollingConfig.fullBatchStreak", "-1"] },
    { partial: { fullBatchDivisor: 0.5 }, fragments: ["pollingConfig.fullBatchDivisor", "0.5"] },
    { partial: { emptyBackoffFactor: 0.9 }, fragments: ["pollingConfig.emptyBackoffFactor", "0.9"] },
    { partial: { deepIdleAfterMs: 0 }, fragments: ["pollingConfig.deepIdleAfterMs"] },
    { partial: { minDelayMs: 400 }, fragments: ["pollingConfig.minDelayMs", "burstDelayMs (500)", "400"] },
    { partial: { maxDelayMs: 1000 }, fragments: ["pollingConfig.maxDelayMs", "minDelayMs (2000)"] },
    {
      partial: { deepIdleDelayMs: 20_000 },
      fragments: ["pollingConfig.deepIdleDelayMs", "maxDelayMs (30000)"],
    },
    { partial: { minDelayMs: Number.NaN }, fragments: ["pollingConfig.minDelayMs", "NaN"] },
    { partial: { maxDelayMs: "30s" }, fragments: ["pollingConfig.maxDelayMs", '"30s"'] },
    { partial: { pollIntervalMs: 1000 }, fragments: ["pollingConfig.pollIntervalMs", "not a known option"] },
  ])("rejects $partial", ({ partial, fragments }) => {
    const error = thrown(() => resolvePollingConfig(partial as Partial<PollingConfig>));
    expect(error.code).toBe("INVALID_CONFIG");
    for (const fragment of fragments) expect(error.message).toContain(fragment);
  });
});

describe("initialPollingState and idleFor", () => {
  it("starts in normal mode at the minimum delay, with work 'seen' now", () => {
    expect(initialPollingState(1234, cfg)).toEqual({
      mode: "normal",
      delayMs: 2000,
      window: [],
      consecutiveEmpty: 0,
      consecutiveFull: 0,
      lastWorkAt: 1234,
      burstRemaining: 0,
    });
  });

  it.each([
    { lastWorkAt: 1000, now: 1000, expected: 0 },
    { lastWorkAt: 1000, now: 61_000, expected: 60_000 },
    { lastWorkAt: 1000, now: 500, expected: 0 },
  ])("idle since $lastWorkAt, now $now -> $expected", ({ lastWorkAt, now, expected }) => {
    expect(idleFor(state({ lastWorkAt }), now)).toBe(expected);
  });
});

describe("trendFactor and loadFactor", () => {
  it.each([
    { why: "no samples", window: [], expected: 1 },
    { why: "one empty poll", window: [empty(0)], expected: 1 },
    { why: "one full poll", window: [full(0)], expected: 0.5 },
    { why: "half and full", window: [half(0), full(1)], expected: 0.625 },
    { why: "limit 0 is ignored", window: [{ at: 0, claimed: 0, limit: 0 }], expected: 1 },
    { why: "limit 0 beside a full poll", window: [{ at: 0, claimed: 0, limit: 0 }, full(1)], expected: 0.5 },
    { why: "over-full counts as full", window: [{ at: 0, claimed: 20, limit: 10 }], expected: 0.5 },
  ])("trend: $why -> $expected", ({ window, expected }) => {
    expect(trendFactor(window)).toBe(expected);
  });

  it.each([
    { utilization: 0, expected: 0.5 },
    { utilization: 0.5, expected: 1 },
    { utilization: 1, expected: 1.5 },
    { utilization: 3, expected: 1.5 },
    { utilization: -1, expected: 0.5 },
    { utilization: Number.NaN, expected: 0.5 },
  ])("load: utilization $utilization -> $expected", ({ utilization, expected }) => {
    expect(loadFactor(utilization)).toBe(expected);
  });
});

describe("afterPoll bookkeeping", () => {
  it("keeps the last windowSize samples", () => {
    const config = { ...cfg, windowSize: 3 };
    let s = initialPollingState(0, config);
    for (const at of [1, 2, 3, 4]) s = afterPoll(s, empty(at), 0.5, config);
    expect(s.window.map((w) => w.at)).toEqual([2, 3, 4]);
  });

  // [why, sample, consecutiveEmpty, lastWorkAt], from consecutiveEmpty 3 and lastWorkAt 0
  it.each([
    ["work found", half(5000), 0, 5000],
    ["empty poll", empty(5000), 4, 0],
  ] as [string, PollSample, number, number][])(
    "%s: consecutiveEmpty and lastWorkAt",
    (_why, sample, n, last) => {
      const next = afterPoll(state({ consecutiveEmpty: 3, lastWorkAt: 0 }), sample, 0.5, cfg);
      expect(next.consecutiveEmpty).toBe(n);
      expect(next.lastWorkAt).toBe(last);
    },
  );

  it.each([
    { sample: full(1), prior: 2, expected: 3 },
    { sample: { at: 1, claimed: 12, limit: 10 }, prior: 0, expected: 1 },
    { sample: half(1), prior: 2, expected: 0 },
    { sample: empty(1), prior: 2, expected: 0 },
    { sample: { at: 1, claimed: 0, limit: 0 }, prior: 2, expected: 0 }, // no free slot is not a full batch
  ])("consecutiveFull $prior + $sample.claimed/$sample.limit -> $expected", ({ sample, prior, expected }) => {
    expect(afterPoll(state({ consecutiveFull: prior }), sample, 0.5, cfg).consecutiveFull).toBe(expected);
  });

  it("does not modify the state it is given", () => {
    const before = state({ window: [empty(0)] });
    const copy = structuredClone(before);
    afterPoll(before, full(1), 0.5, cfg);
    expect(before).toEqual(copy);
  });
});

describe("afterPoll normal delay", () => {
  const fulls = (n: number) => Array.from({ length: n }, (_, i) => full(i));
  // base = clamp(2000 * 2^empty, 2000, 30000); * (0.5 + u); * trend; clamp [500, 30000]; / 4 on a full streak.
  // [why, prior state, sample, utilization, delay]
  it.each([
    ["1st empty poll, u=0.5", {}, empty(1), 0.5, 4000],
    ["1st empty poll, idle workers", {}, empty(1), 0, 2000],
    ["1st empty poll, busy workers", {}, empty(1), 1, 6000],
    ["2nd empty poll", { consecutiveEmpty: 1 }, empty(1), 0.5, 8000],
    ["5th empty poll hits max", { consecutiveEmpty: 4 }, empty(1), 0.5, 30_000],
    ["busy never exceeds max", { consecutiveEmpty: 4 }, empty(1), 1, 30_000],
    ["endless empties stay finite", { consecutiveEmpty: 5000 }, empty(1), 0.5, 30_000],
    ["half batch", {}, half(1), 0.5, 1500],
    ["half batch, idle workers", {}, half(1), 0, 750],
    ["one full batch, idle: clamped to burst", {}, full(1), 0, 500],
    ["full streak, idle", { consecutiveFull: 2, window: fulls(2) }, full(9), 0, 125],
    ["full streak, busy", { consecutiveFull: 2, window: fulls(2) }, full(9), 1, 375],
    ["streak not reached", { consecutiveFull: 1, window: fulls(1) }, full(9), 1, 1500],
    // 9 full samples + a half one: mean fill 0.95, trend 0.525 -> 2000 * 1 * 0.525.
    ["trend of a busy window", { window: fulls(9) }, half(9), 0.5, 1050],
    ["utilization above 1 counts as 1", {}, empty(1), 7, 6000],
    ["NaN utilization counts as 0", {}, empty(1), Number.NaN, 2000],
  ] as [string, Partial<PollingState>, PollSample, number, number][])(
    "%s",
    (_why, prior, sample, u, delay) => {
      const next = afterPoll(state(prior), sample, u, cfg);
      expect(next.mode).toBe("normal");
      expect(next.delayMs).toBe(delay);
    },
  );

  it("never goes below 1 ms, and rounds to whole ms", () => {
    const config = resolvePollingConfig({ burstDelayMs: 1, minDelayMs: 3, fullBatchDivisor: 1000 });
    const s = state({ consecutiveFull: 5, window: [full(0)] });
    expect(afterPoll(s, full(1), 0, config).delayMs).toBe(1);
    const odd = resolvePollingConfig({ minDelayMs: 2001 });
    expect(afterPoll(state(), empty(1), 0.25, odd).delayMs).toBe(3002); // 4002 * 0.75 = 3001.5
  });
});

describe("afterPoll modes", () => {
  it.each([
    { why: "just under the threshold", at: 299_999, mode: "normal" },
    { why: "exactly at the threshold", at: 300_000, mode: "deep-idle", delay: 60_000 },
    { why: "long after", at: 3_600_000, mode: "deep-idle", delay: 60_000 },
  ])("empty poll $why after the last work -> $mode", ({ at, mode, delay }) => {
    const next = afterPoll(state({ lastWorkAt: 0, consecutiveEmpty: 10 }), empty(at), 0.5, cfg);
    expect(next.mode).toBe(mode);
    if (delay !== undefined) expect(next.delayMs).toBe(delay);
  });

  it("deep idle ends with the first poll that finds work", () => {
    const next = afterPoll(
      state({ mode: "deep-idle", delayMs: 60_000, lastWorkAt: 0 }),
      half(900_000),
      0.5,
      cfg,
    );
    expect(next).toMatchObject({ mode: "normal", delayMs: 1500, lastWorkAt: 900_000 });
  });

  it.each([
    {
      why: "work found refills the burst",
      remaining: 1,
      sample: half(1),
      mode: "burst",
      left: 4,
      delay: 500,
    },
    { why: "empty poll uses one up", remaining: 4, sample: empty(1), mode: "burst", left: 3, delay: 500 },
    { why: "last empty poll ends it", remaining: 1, sample: empty(1), mode: "normal", left: 0, delay: 4000 },
  ])("burst: $why", ({ remaining, sample, mode, left, delay }) => {
    const next = afterPoll(
      state({ mode: "burst", burstRemaining: remaining, delayMs: 500 }),
      sample,
      0.5,
      cfg,
    );
    expect(next).toMatchObject({ mode, burstRemaining: left, delayMs: delay });
  });

  it("a full-batch streak in burst mode divides the burst delay", () => {
    const s = state({ mode: "burst", burstRemaining: 4, consecutiveFull: 2, window: [full(0), full(1)] });
    expect(afterPoll(s, full(2), 0.5, cfg)).toMatchObject({ mode: "burst", delayMs: 125 });
  });

  it("a burst is not cut short by deep idle, but falls back to it when it finds nothing", () => {
    let s = afterWakeup(state({ mode: "deep-idle", delayMs: 60_000, lastWorkAt: 0 }), 1_000_000, cfg);
    const modes: string[] = [];
    for (let i = 1; i <= 4; i++) {
      s = afterPoll(s, empty(1_000_000 + i * 500), 0.5, cfg);
      modes.push(s.mode);
    }
    expect(modes).toEqual(["burst", "burst", "burst", "deep-idle"]);
  });
});

describe("afterWakeup", () => {
  it.each(["normal", "deep-idle", "burst"] as const)("from %s enters a fresh burst", (mode) => {
    const before = state({ mode, delayMs: 60_000, consecutiveEmpty: 9, burstRemaining: 1, lastWorkAt: 42 });
    expect(afterWakeup(before, 1_000_000, cfg)).toEqual({
      ...before,
      mode: "burst",
      delayMs: 500,
      burstRemaining: 4,
      consecutiveEmpty: 0,
      lastWorkAt: 42,
    });
  });
});
