import { describe, expect, it } from "vitest";
import { thrown } from "../../helpers/thrown.js";
import {
  breakerAllow,
  breakerRecord,
  defaultBreakerConfig,
  initialBreaker,
  resolveBreakerConfig,
} from "../../../src/logic/breaker.js";
import type { BreakerConfig, BreakerDecision, BreakerSnapshot } from "../../../src/logic/breaker.js";

/**
 * Runs a scenario script of space-separated steps: `allow@t` asks breakerAllow at t; `ok@t` / `fail@t` records
 * a result, as a trial when the oldest unrecorded admitted call was one; `ok!@t` / `fail!@t` records a
 * non-trial result (a call started before the breaker opened).
 */
function run(script: string, cfg: BreakerConfig = defaultBreakerConfig): Outcome {
  let snapshot = initialBreaker();
  const decisions: BreakerDecision[] = [];
  const trials: boolean[] = [];
  for (const step of script.trim().split(/\s+/)) {
    const match = /^(allow|ok|fail)(!?)@(\d+)$/.exec(step);
    if (!match) throw new Error(`bad step ${step}`);
    const [, op, nonTrial, t] = match;
    const now = Number(t);
    if (op === "allow") {
      const d = breakerAllow(snapshot, now, cfg);
      decisions.push(d);
      if (d.allowed) trials.push(d.trial);
      snapshot = d.next;
    } else {
      const trial = nonTrial === "!" ? false : (trials.shift() ?? false);
      snapshot = breakerRecord(snapshot, op === "ok", now, cfg, trial);
    }
  }
  return { snapshot, decisions };
}

interface Outcome {
  snapshot: BreakerSnapshot;
  decisions: BreakerDecision[];
}

const steps = (kind: "ok" | "fail", n: number, from = 0, step = 1): string =>
  Array.from({ length: n }, (_, i) => `${kind}@${from + i * step}`).join(" ");
const fails = (n: number, from = 0, step = 1) => steps("fail", n, from, step);
const oks = (n: number, from = 0) => steps("ok", n, from);

describe("resolveBreakerConfig", () => {
  it("has the documented defaults", () => {
    expect(resolveBreakerConfig()).toEqual({
      failureThreshold: 5,
      failureRate: 0.5,
      minimumCalls: 10,
      windowMs: 60_000,
      openMs: 30_000,
      halfOpenTrials: 1,
    });
  });

  it.each([
    { partial: { failureThreshold: 0 }, fragments: ["breakerConfig.failureThreshold", "got 0"] },
    { partial: { minimumCalls: 2.5 }, fragments: ["breakerConfig.minimumCalls", "2.5"] },
    { partial: { halfOpenTrials: 0 }, fragments: ["breakerConfig.halfOpenTrials"] },
    { partial: { failureRate: 0 }, fragments: ["breakerConfig.failureRate", "got 0"] },
    { partial: { failureRate: 1.5 }, fragments: ["breakerConfig.failureRate", "1.5"] },
    { partial: { windowMs: 0 }, fragments: ["breakerConfig.windowMs"] },
    { partial: { openMs: -1 }, fragments: ["breakerConfig.openMs", "-1"] },
    { partial: { openMs: Number.POSITIVE_INFINITY }, fragments: ["breakerConfig.openMs", "Infinity"] },
    { partial: { threshold: 3 }, fragments: ["breakerConfig.threshold", "not a known option"] },
  ])("rejects $partial", ({ partial, fragments }) => {
    const error = thrown(() => resolveBreakerConfig(partial as Partial<BreakerConfig>));
    expect(error.code).toBe("INVALID_CONFIG");
    for (const fragment of fragments) expect(error.message).toContain(fragment);
  });

  it("accepts a valid override", () => {
    expect(resolveBreakerConfig({ openMs: 10_000, halfOpenTrials: 3 })).toEqual({
      ...defaultBreakerConfig,
      openMs: 10_000,
      halfOpenTrials: 3,
    });
  });
});

describe("CLOSED", () => {
  const noCount = { ...defaultBreakerConfig, failureThreshold: 100 };
  // [why, script, config, resulting state]
  it.each([
    ["4 failures stay closed", fails(4), defaultBreakerConfig, "CLOSED"],
    ["5 failures open", fails(5), defaultBreakerConfig, "OPEN"],
    ["successes do not open", oks(50), defaultBreakerConfig, "CLOSED"],
    // Rate rule only (threshold out of reach): needs minimumCalls calls first.
    ["5 of 9 failing: too few calls", `${fails(5)} ${oks(4, 10)}`, noCount, "CLOSED"],
    ["5 of 10 failing: rate reached", `${fails(5)} ${oks(5, 10)}`, noCount, "OPEN"],
    ["4 of 10 failing: under the rate", `${fails(4)} ${oks(6, 10)}`, noCount, "CLOSED"],
    // Window: the first failure at t=0 is still in the window at 59 999, and out of it at 60 000.
    ["5th failure 1 ms inside the window", `${fails(4)} fail@59999`, defaultBreakerConfig, "OPEN"],
    ["5th failure at the window edge", `${fails(4)} fail@60000`, defaultBreakerConfig, "CLOSED"],
    ["failures spread over time", fails(20, 0, 20_000), defaultBreakerConfig, "CLOSED"],
  ] as [string, string, BreakerConfig, string][])("%s", (_why, script, cfg, state) => {
    expect(run(script, cfg).snapshot.state).toBe(state);
  });

  it("prunes old outcomes and keeps recent ones", () => {
    const { snapshot } = run("ok@0 fail@30000 ok@70000");
    expect(snapshot.outcomes).toEqual([
      { at: 30_000, ok: false },
      { at: 70_000, ok: true },
    ]);
  });

  it("allows every call without changing the snapshot", () => {
    const s = initialBreaker();
    expect(breakerAllow(s, 5, defaultBreakerConfig)).toEqual({ allowed: true, trial: false, next: s });
  });

  it("opening records the time and clears the window", () => {
    const { snapshot } = run(fails(5, 1000));
    expect(snapshot).toEqual({
      state: "OPEN",
      outcomes: [],
      openedAt: 1004,
      trialsInFlight: 0,
      trialSuccesses: 0,
      transitions: 1,
    });
  });
});

describe("OPEN and HALF_OPEN", () => {
  const opened = fails(5); // OPEN at t=4, probing from t=30 004

  it.each([
    { now: 4, retryInMs: 30_000 },
    { now: 10_004, retryInMs: 20_000 },
    { now: 30_003, retryInMs: 1 },
  ])("OPEN refuses at $now with retryInMs $retryInMs", ({ now, retryInMs }) => {
    const { snapshot, decisions } = run(`${opened} allow@${now}`);
    expect(decisions.at(-1)).toEqual({ allowed: false, retryInMs, next: snapshot });
    expect(snapshot.state).toBe("OPEN");
  });

  // [why, script after opening, state, transitions, last decision]
  it.each([
    ["after openMs a trial is admitted", "allow@30004", "HALF_OPEN", 2, { allowed: true, trial: true }],
    ["a second concurrent call is refused", "allow@30004 allow@30005", "HALF_OPEN", 2, { retryInMs: 30_000 }],
    ["a trial success closes", "allow@30004 ok@30100", "CLOSED", 3, null],
    ["a trial failure reopens", "allow@30004 fail@30100 allow@30200", "OPEN", 3, { retryInMs: 29_900 }],
    ["results arriving while OPEN are ignored", "ok@100 ok@200 fail@300", "OPEN", 1, null],
    ["non-trial results in HALF_OPEN are ignored", "allow@30004 fail!@30050 ok!@30060", "HALF_OPEN", 2, null],
    [
      "full cycle back to CLOSED counts every change",
      "allow@30004 fail@30010 allow@60010 ok@60020 allow@60030",
      "CLOSED",
      5,
      { allowed: true, trial: false },
    ],
  ] as [string, string, string, number, object | null][])("%s", (_why, script, state, transitions, last) => {
    const { snapshot, decisions } = run(`${opened} ${script}`);
    expect(snapshot.state).toBe(state);
    expect(snapshot.transitions).toBe(transitions);
    if (last) expect(decisions.at(-1)).toMatchObject(last);
  });

  it("reopening restarts the open period from the failed trial", () => {
    const { snapshot } = run(`${opened} allow@30004 fail@30100`);
    expect(snapshot).toMatchObject({ state: "OPEN", openedAt: 30_100, trialsInFlight: 0 });
  });

  it("closing clears the window and the open time", () => {
    const { snapshot } = run(`${opened} allow@30004 ok@30100`);
    expect(snapshot).toEqual({
      state: "CLOSED",
      outcomes: [],
      openedAt: null,
      trialsInFlight: 0,
      trialSuccesses: 0,
      transitions: 3,
    });
  });

  // halfOpenTrials 2: [script after opening, allowed decisions, expected snapshot fields]
  it.each([
    ["allow@30004 allow@30005 allow@30006", [true, true, false], { state: "HALF_OPEN", trialsInFlight: 2 }],
    [
      "allow@30004 allow@30005 ok@30010",
      [true, true],
      { state: "HALF_OPEN", trialsInFlight: 1, trialSuccesses: 1 },
    ],
    ["allow@30004 allow@30005 ok@30010 ok@30011", [true, true], { state: "CLOSED", transitions: 3 }],
    ["allow@30004 allow@30005 ok@30010 fail@30011", [true, true], { state: "OPEN", openedAt: 30_011 }],
  ] as [string, boolean[], Partial<BreakerSnapshot>][])("halfOpenTrials 2: %s", (script, allowed, fields) => {
    const { snapshot, decisions } = run(`${opened} ${script}`, {
      ...defaultBreakerConfig,
      halfOpenTrials: 2,
    });
    expect(decisions.map((d) => d.allowed)).toEqual(allowed);
    expect(snapshot).toMatchObject(fields);
  });

  it("never mutates the snapshot it is given", () => {
    const frozen = Object.freeze({ ...run(opened).snapshot, outcomes: Object.freeze([]) });
    expect(() => breakerAllow(frozen, 30_004, defaultBreakerConfig)).not.toThrow();
    expect(() => breakerRecord(frozen, true, 30_004, defaultBreakerConfig, true)).not.toThrow();
    const closed = Object.freeze({ ...initialBreaker(), outcomes: Object.freeze([{ at: 0, ok: false }]) });
    const next = breakerRecord(closed, false, 1, defaultBreakerConfig, false);
    expect(closed.outcomes).toHaveLength(1);
    expect(next.outcomes).toHaveLength(2);
  });
});
