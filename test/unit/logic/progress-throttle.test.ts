import { describe, expect, it } from "vitest";
import { defaultProgressIntervalMs, progressWriteDelay } from "../../../src/logic/progress-throttle.js";
import { defaultWaitPollConfig, waitPollDelayMs } from "../../../src/logic/wait-poll.js";
import { progressJson } from "../../../src/input/progress-input.js";
import { ValidationError } from "../../../src/core/errors.js";

describe("progressWriteDelay", () => {
  it.each([
    { what: "first value of the attempt", lastWriteAtMs: null, now: 1_000, expected: 0 },
    { what: "right after a write", lastWriteAtMs: 1_000, now: 1_000, expected: 250 },
    { what: "inside the interval", lastWriteAtMs: 1_000, now: 1_100, expected: 150 },
    { what: "one ms before the end", lastWriteAtMs: 1_000, now: 1_249, expected: 1 },
    { what: "at the end of the interval", lastWriteAtMs: 1_000, now: 1_250, expected: 0 },
    { what: "long after", lastWriteAtMs: 1_000, now: 60_000, expected: 0 },
    { what: "a clock that went backwards", lastWriteAtMs: 5_000, now: 4_000, expected: 0 },
    { what: "the outcome is queued", lastWriteAtMs: 1_000, now: 1_001, ending: true, expected: 0 },
    { what: "a custom interval", lastWriteAtMs: 0, now: 400, minIntervalMs: 1_000, expected: 600 },
    { what: "no interval", lastWriteAtMs: 0, now: 0, minIntervalMs: 0, expected: 0 },
  ])("$what: $expected ms", ({ what: _what, expected, ...input }) => {
    expect(progressWriteDelay(input)).toBe(expected);
  });

  it("bounds a tight loop to one write per interval", () => {
    // Simulates a handler reporting every ms for 2 s: the writes the throttle lets through.
    let last: number | null = null;
    let heldUntil: number | null = null;
    let writes = 0;
    for (let now = 0; now <= 2_000; now++) {
      if (heldUntil !== null && now >= heldUntil) {
        writes++;
        last = heldUntil;
        heldUntil = null;
      }
      if (heldUntil !== null) continue; // a newer value replaces the held one
      const delay = progressWriteDelay({ lastWriteAtMs: last, now });
      if (delay === 0) {
        writes++;
        last = now;
      } else heldUntil = now + delay;
    }
    expect(defaultProgressIntervalMs).toBe(250);
    expect(writes).toBe(2_000 / 250 + 1);
  });
});

describe("waitPollDelayMs", () => {
  it.each([
    { idle: 0, connected: false, expected: 100 },
    { idle: 1, connected: false, expected: 200 },
    { idle: 3, connected: false, expected: 800 },
    { idle: 4, connected: false, expected: 1_600 },
    { idle: 5, connected: false, expected: 2_000 },
    { idle: 1_000, connected: false, expected: 2_000 },
    { idle: -1, connected: false, expected: 100 },
    { idle: 0, connected: true, expected: 5_000 },
    { idle: 1, connected: true, expected: 10_000 },
    { idle: 3, connected: true, expected: 30_000 },
    { idle: 50, connected: true, expected: 30_000 },
  ])("after $idle idle reads, connected $connected: $expected ms", ({ idle, connected, expected }) => {
    expect(waitPollDelayMs(idle, connected)).toBe(expected);
  });

  it("takes its bounds from the config, and a factor below 1 as 1", () => {
    const config = { ...defaultWaitPollConfig, minMs: 10, maxMs: 50, factor: 0.5 };
    expect(waitPollDelayMs(7, false, config)).toBe(10);
    expect(waitPollDelayMs(2, false, { ...config, factor: 3 })).toBe(50);
  });
});

describe("progressJson", () => {
  it.each([
    [0, "0"],
    [42.5, "42.5"],
    [100, "100"],
    [{ done: 4, total: 10 }, '{"done":4,"total":10}'],
    ["uploading", '"uploading"'],
    [null, "null"],
    [[1, 2], "[1,2]"],
  ])("accepts %j", (value, text) => {
    expect(progressJson(value)).toBe(text);
  });

  it.each([
    ["a negative number", -1],
    ["a number over 100", 100.5],
    ["NaN", Number.NaN],
    ["Infinity", Number.POSITIVE_INFINITY],
    ["undefined", undefined],
    ["a function", () => 1],
    ["a Date", new Date(0)],
    ["a NUL in a string", "a\u0000b"],
    ["over 4 KiB", { text: "x".repeat(4_100) }],
  ])("refuses %s with INVALID_PROGRESS", (_what, value) => {
    let error: unknown;
    try {
      progressJson(value);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).code).toBe("INVALID_PROGRESS");
  });
});
