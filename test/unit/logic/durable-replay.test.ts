import { describe, expect, it } from "vitest";
import {
  childrenProgress,
  jsonProblem,
  parkDeadline,
  replayDecision,
  sleepTarget,
  stepResultJson,
  stepResultValue,
  waitEnded,
  waitTimeoutMs,
  type RecordedStep,
} from "../../../src/logic/durable-replay.js";

const rec = (kind: RecordedStep["kind"], status: RecordedStep["status"]): RecordedStep => ({
  kind,
  status,
  wakeAt: null,
});

describe("replayDecision", () => {
  it.each([
    ["nothing recorded: run", undefined, "step", "run"],
    ["a recorded success: replay", rec("step", "succeeded"), "step", "replay"],
    ["a failed run: run again", rec("step", "failed"), "step", "run"],
    ["a wait under way: resume", rec("sleep", "waiting"), "sleep", "resume"],
    ["a finished sleep: replay", rec("sleep", "succeeded"), "sleep", "replay"],
    ["a name recorded by another kind: mismatch", rec("step", "succeeded"), "sleep", "mismatch"],
    ["a spawn's name reused by a wait: mismatch", rec("spawn", "succeeded"), "wait", "mismatch"],
  ] as const)("%s", (_n, recorded, kind, expected) => {
    expect(replayDecision(recorded, kind)).toBe(expected);
  });
});

describe("sleepTarget and waitTimeoutMs", () => {
  const d = new Date("2030-01-01T00:00:00Z");
  it.each([
    ["ms", 1500, { at: null, afterMs: 1500 }],
    ["zero", 0, { at: null, afterMs: 0 }],
    ["ms rounded", 1.6, { at: null, afterMs: 2 }],
    ["a date", d, { at: d, afterMs: null }],
    ["negative", -1, null],
    ["NaN", Number.NaN, null],
    ["an invalid date", new Date("nope"), null],
    ["a string", "10", null],
    ["beyond a century", 101 * 365 * 86_400_000, null],
  ] as [string, unknown, unknown][])("%s", (_n, input, expected) => {
    expect(sleepTarget(input)).toEqual(expected);
  });

  it.each([
    [undefined, null],
    [1, 1],
    [250.4, 250],
    [0, undefined],
    [-5, undefined],
    ["5", undefined],
    [Infinity, undefined],
  ] as [unknown, unknown][])("timeout %s -> %s", (input, expected) => {
    expect(waitTimeoutMs(input)).toBe(expected);
  });
});

describe("waitEnded and parkDeadline", () => {
  it.each([
    [null, 1000, false],
    [999, 1000, true],
    [1000, 1000, true],
    [1001, 1000, false],
  ] as [number | null, number, boolean][])("due %s at now %s: %s", (wake, now, expected) => {
    expect(waitEnded(wake === null ? null : new Date(wake), new Date(now))).toBe(expected);
  });

  it("takes the earliest end, ignoring waits with none", () => {
    expect(parkDeadline([null, new Date(5), new Date(3)])).toEqual(new Date(3));
    expect(parkDeadline([null, null])).toBeNull();
    expect(parkDeadline([])).toBeNull();
  });
});

describe("childrenProgress", () => {
  it.each([
    [
      "one still running",
      [
        ["1", "SUCCEEDED"],
        ["2", "RUNNING"],
      ],
      { state: "pending", pending: ["2"] },
    ],
    [
      "waiting and paused are live",
      [
        ["1", "WAITING"],
        ["2", "PAUSED"],
      ],
      { state: "pending", pending: ["1", "2"] },
    ],
    [
      "all succeeded",
      [
        ["1", "SUCCEEDED"],
        ["2", "SUCCEEDED"],
      ],
      { state: "done", failed: [], missing: [] },
    ],
    [
      "dead and canceled fail",
      [
        ["1", "DEAD"],
        ["2", "CANCELED"],
      ],
      { state: "done", failed: ["1", "2"], missing: [] },
    ],
    ["a child with no row is missing", [["1", "SUCCEEDED"]], { state: "done", failed: [], missing: ["2"] }],
  ] as [string, [string, string][], unknown][])("%s", (_n, states, expected) => {
    expect(
      childrenProgress(
        ["1", "2"],
        states.map(([id, status]) => ({ id, status })),
      ),
    ).toEqual(expected);
  });
});

describe("step results", () => {
  class Money {
    constructor(readonly cents: number) {}
  }
  it.each([
    ["a plain object", { a: [1, "x", true, null] }, null],
    ["an absent key", { a: undefined, b: 1 }, null],
    ["a Date", { when: new Date(0) }, "result.when is a Date"],
    ["a class instance", new Money(5), "result is a Money"],
    ["a BigInt", { n: 1n }, "result.n is a BigInt"],
    ["undefined in an array", [1, undefined], "result[1] is undefined"],
    ["NaN", { x: Number.NaN }, "result.x is NaN"],
    ["a Map", new Map(), "result is a Map"],
    ["a function", { f: () => 1 }, "result.f is a function"],
  ] as [string, unknown, string | null][])("%s", (_n, value, problem) => {
    const p = jsonProblem(value);
    if (problem === null) expect(p).toBeNull();
    else expect(p).toContain(problem);
  });

  it("a circular value is a problem, a shared one is not", () => {
    const a: Record<string, unknown> = {};
    a.self = a;
    expect(jsonProblem(a)).toContain("circular");
    const shared = { x: 1 };
    expect(jsonProblem({ l: shared, r: shared })).toBeNull();
  });

  it.each([
    ["undefined round-trips as undefined", undefined],
    ["null round-trips as null", null],
    ["an object", { a: 1 }],
    ["a string", "done"],
  ] as [string, unknown][])("%s", (_n, value) => {
    const enc = stepResultJson(value, 1000);
    if (!("json" in enc)) throw new Error(enc.problem);
    expect(stepResultValue(JSON.parse(enc.json))).toEqual(value);
  });

  it("refuses a result over the limit and one that does not round-trip, with their codes", () => {
    expect(stepResultJson("x".repeat(100), 50)).toMatchObject({ code: "STEP_RESULT_TOO_LARGE" });
    expect(stepResultJson(new Date(), 50)).toMatchObject({ code: "STEP_RESULT_INVALID" });
    expect(stepResultJson("é".repeat(20), 45)).toMatchObject({ code: "STEP_RESULT_TOO_LARGE" });
  });
});
