import { describe, expect, it } from "vitest";
import { thrown } from "../../helpers/thrown.js";
import {
  defaultTimeoutMs,
  defaultWatchdogConfig,
  dueSteps,
  nextStep,
  resolveWatchdogConfig,
  watchdogSchedule,
} from "../../../src/logic/watchdog-schedule.js";
import type { WatchdogConfig, WatchdogStep } from "../../../src/logic/watchdog-schedule.js";

/** Compact form of a schedule, relative to the start: "cancel@700 soft@800 hard@1000". */
function show(steps: readonly WatchdogStep[], startedAt: number): string {
  const short = { "soft-warning": "soft", "cancel-request": "cancel", "hard-timeout": "hard" } as const;
  return steps.map((s) => `${short[s.kind]}@${s.at - startedAt}`).join(" ");
}

describe("resolveWatchdogConfig", () => {
  it("defaults to a warning at 80 % and no early cancellation", () => {
    expect(resolveWatchdogConfig()).toEqual({ softTimeoutPercent: 80, cancellationGraceMs: 0 });
    expect(defaultWatchdogConfig).toEqual({ softTimeoutPercent: 80, cancellationGraceMs: 0 });
    expect(defaultTimeoutMs).toBe(1_800_000);
  });

  it.each([
    { partial: { softTimeoutPercent: 100 } },
    { partial: { softTimeoutPercent: 0.5, cancellationGraceMs: 60_000 } },
    { partial: { cancellationGraceMs: 0 } },
  ])("accepts $partial", ({ partial }) => {
    expect(resolveWatchdogConfig(partial)).toEqual({ ...defaultWatchdogConfig, ...partial });
  });

  it.each([
    { partial: { softTimeoutPercent: 0 }, fragments: ["watchdogConfig.softTimeoutPercent", "got 0"] },
    { partial: { softTimeoutPercent: -5 }, fragments: ["watchdogConfig.softTimeoutPercent", "-5"] },
    { partial: { softTimeoutPercent: 100.1 }, fragments: ["watchdogConfig.softTimeoutPercent", "100.1"] },
    { partial: { cancellationGraceMs: -1 }, fragments: ["watchdogConfig.cancellationGraceMs", "-1"] },
    {
      partial: { cancellationGraceMs: Number.NaN },
      fragments: ["watchdogConfig.cancellationGraceMs", "NaN"],
    },
    { partial: { graceMs: 10 }, fragments: ["watchdogConfig.graceMs", "not a known option"] },
  ])("rejects $partial", ({ partial, fragments }) => {
    const error = thrown(() => resolveWatchdogConfig(partial as Partial<WatchdogConfig>));
    expect(error.code).toBe("INVALID_CONFIG");
    for (const fragment of fragments) expect(error.message).toContain(fragment);
  });
});

describe("watchdogSchedule", () => {
  const start = 1_700_000_000_000;

  it.each([
    {
      why: "defaults: soft at 80 %, no cancel",
      timeout: defaultTimeoutMs,
      pct: 80,
      grace: 0,
      expected: "soft@1440000 hard@1800000",
    },
    {
      why: "grace shorter than the soft margin",
      timeout: 1000,
      pct: 80,
      grace: 100,
      expected: "soft@800 cancel@900 hard@1000",
    },
    {
      why: "grace longer than the soft margin: order flips",
      timeout: 1000,
      pct: 80,
      grace: 300,
      expected: "cancel@700 soft@800 hard@1000",
    },
    {
      why: "exact tie: cancel first",
      timeout: 1000,
      pct: 80,
      grace: 200,
      expected: "cancel@800 soft@800 hard@1000",
    },
    {
      why: "grace equal to the timeout is skipped",
      timeout: 1000,
      pct: 80,
      grace: 1000,
      expected: "soft@800 hard@1000",
    },
    {
      why: "grace longer than the timeout is skipped",
      timeout: 1000,
      pct: 80,
      grace: 5000,
      expected: "soft@800 hard@1000",
    },
    {
      why: "grace one ms shorter than the timeout",
      timeout: 1000,
      pct: 80,
      grace: 999,
      expected: "cancel@1 soft@800 hard@1000",
    },
    { why: "grace 0", timeout: 1000, pct: 50, grace: 0, expected: "soft@500 hard@1000" },
    {
      why: "100 % disables the warning",
      timeout: 1000,
      pct: 100,
      grace: 100,
      expected: "cancel@900 hard@1000",
    },
    { why: "only the hard timeout", timeout: 1000, pct: 100, grace: 0, expected: "hard@1000" },
    { why: "soft time is floored", timeout: 999, pct: 80, grace: 0, expected: "soft@799 hard@999" },
    { why: "tiny timeout", timeout: 1, pct: 50, grace: 0, expected: "soft@0 hard@1" },
    {
      why: "just under 100 % stays before the deadline",
      timeout: 1000,
      pct: 99.99,
      grace: 0,
      expected: "soft@999 hard@1000",
    },
  ])("$why", ({ timeout, pct, grace, expected }) => {
    const steps = watchdogSchedule(start, timeout, { softTimeoutPercent: pct, cancellationGraceMs: grace });
    expect(show(steps, start)).toBe(expected);
    expect(steps.at(-1)?.kind).toBe("hard-timeout");
  });

  it.each([0, -1, Number.NaN, Number.POSITIVE_INFINITY])("rejects timeoutMs %s", (timeout) => {
    const error = thrown(() => watchdogSchedule(start, timeout, defaultWatchdogConfig));
    expect(error.code).toBe("INVALID_OPTION");
    expect(error.message).toContain("timeoutMs");
  });
});

describe("nextStep and dueSteps", () => {
  const steps = watchdogSchedule(0, 1000, { softTimeoutPercent: 80, cancellationGraceMs: 300 });
  // cancel@700 soft@800 hard@1000

  it.each([
    { now: -1, expected: "cancel-request" },
    { now: 0, expected: "cancel-request" },
    { now: 699, expected: "cancel-request" },
    { now: 700, expected: "soft-warning" },
    { now: 999, expected: "hard-timeout" },
    { now: 1000, expected: null },
  ])("next after $now -> $expected", ({ now, expected }) => {
    expect(nextStep(steps, now)?.kind ?? null).toBe(expected);
  });

  it.each([
    { from: 0, to: 699, expected: "" },
    { from: 0, to: 700, expected: "cancel@700" },
    { from: 700, to: 800, expected: "soft@800" },
    { from: 699, to: 1000, expected: "cancel@700 soft@800 hard@1000" },
    { from: 1000, to: 5000, expected: "" },
  ])("due in ($from, $to] -> '$expected'", ({ from, to, expected }) => {
    expect(show(dueSteps(steps, from, to), 0)).toBe(expected);
  });

  it("consecutive windows return every step exactly once", () => {
    const seen: WatchdogStep[] = [];
    for (let t = 0; t < 1200; t += 100) seen.push(...dueSteps(steps, t, t + 100));
    expect(seen).toEqual(steps);
  });
});
