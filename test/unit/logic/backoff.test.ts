import { describe, expect, it } from "vitest";
import { thrown } from "../../helpers/thrown.js";
import {
  applyJitter,
  backoffDelayMs,
  defaultRetryPolicy,
  resolveRetryPolicy,
  retryDelayMs,
} from "../../../src/logic/backoff.js";
import type { RetryPolicy } from "../../../src/logic/backoff.js";

const policy = (p: Partial<RetryPolicy>): RetryPolicy => ({ ...defaultRetryPolicy, ...p });

describe("resolveRetryPolicy", () => {
  it.each([
    { partial: undefined, expected: defaultRetryPolicy },
    { partial: {}, expected: defaultRetryPolicy },
    { partial: { baseMs: 500 }, expected: { ...defaultRetryPolicy, baseMs: 500 } },
    {
      partial: { baseMs: 0, factor: 1, maxMs: 0, jitter: 0 },
      expected: { baseMs: 0, factor: 1, maxMs: 0, jitter: 0 },
    },
    { partial: { jitter: 1, maxMs: 1000 }, expected: { ...defaultRetryPolicy, jitter: 1, maxMs: 1000 } },
    { partial: { baseMs: undefined }, expected: defaultRetryPolicy },
  ])("accepts $partial", ({ partial, expected }) => {
    expect(resolveRetryPolicy(partial)).toEqual(expected);
  });

  it("returns a copy, never the shared default object", () => {
    expect(resolveRetryPolicy()).not.toBe(defaultRetryPolicy);
  });

  it.each([
    { partial: { baseMs: -1 }, fragments: ["retryPolicy.baseMs", "-1"] },
    { partial: { factor: 0.5 }, fragments: ["retryPolicy.factor", "0.5"] },
    { partial: { maxMs: 999 }, fragments: ["retryPolicy.maxMs", "999", "baseMs (1000)"] },
    { partial: { baseMs: 20, maxMs: 10 }, fragments: ["retryPolicy.maxMs", "10"] },
    { partial: { jitter: -0.1 }, fragments: ["retryPolicy.jitter", "-0.1"] },
    { partial: { jitter: 1.5 }, fragments: ["retryPolicy.jitter", "1.5"] },
    { partial: { baseMs: Number.NaN }, fragments: ["retryPolicy.baseMs", "NaN"] },
    { partial: { maxMs: Number.POSITIVE_INFINITY }, fragments: ["retryPolicy.maxMs", "Infinity"] },
    { partial: { factor: "2" }, fragments: ["retryPolicy.factor", '"2"'] },
    { partial: { delay: 5 }, fragments: ["retryPolicy.delay", "not a known option"] },
    { partial: "fast", fragments: ["retryPolicy must be an object", '"fast"'] },
  ])("rejects $partial", ({ partial, fragments }) => {
    const error = thrown(() => resolveRetryPolicy(partial as Partial<RetryPolicy>));
    expect(error.code).toBe("INVALID_CONFIG");
    for (const fragment of fragments) expect(error.message).toContain(fragment);
  });
});

describe("backoffDelayMs", () => {
  it.each([
    { attempt: 1, p: defaultRetryPolicy, expected: 1000 },
    { attempt: 2, p: defaultRetryPolicy, expected: 2000 },
    { attempt: 3, p: defaultRetryPolicy, expected: 4000 },
    { attempt: 4, p: defaultRetryPolicy, expected: 8000 },
    { attempt: 12, p: defaultRetryPolicy, expected: 2_048_000 },
    { attempt: 13, p: defaultRetryPolicy, expected: 3_600_000 }, // 4_096_000 capped
    { attempt: 0, p: defaultRetryPolicy, expected: 1000 },
    { attempt: -5, p: defaultRetryPolicy, expected: 1000 },
    { attempt: Number.NaN, p: defaultRetryPolicy, expected: 1000 },
    { attempt: 2.9, p: defaultRetryPolicy, expected: 2000 },
    { attempt: 1e9, p: defaultRetryPolicy, expected: 3_600_000 },
    { attempt: Number.MAX_SAFE_INTEGER, p: defaultRetryPolicy, expected: 3_600_000 },
    { attempt: Number.POSITIVE_INFINITY, p: defaultRetryPolicy, expected: 3_600_000 },
    { attempt: 7, p: policy({ factor: 1 }), expected: 1000 },
    { attempt: Number.POSITIVE_INFINITY, p: policy({ factor: 1 }), expected: 1000 },
    { attempt: 3, p: policy({ factor: 1.5 }), expected: 2250 },
    { attempt: 1e9, p: policy({ baseMs: 0, maxMs: 0 }), expected: 0 },
    { attempt: 5, p: policy({ baseMs: 100, maxMs: 100 }), expected: 100 },
    { attempt: 4, p: policy({ baseMs: 1000, maxMs: 8000 }), expected: 8000 },
    { attempt: 2000, p: policy({ baseMs: 1e-300, factor: 10, maxMs: 5 }), expected: 5 },
  ])(
    "attempt $attempt with $p.baseMs*$p.factor^n (max $p.maxMs) -> $expected",
    ({ attempt, p, expected }) => {
      expect(backoffDelayMs(attempt, p)).toBe(expected);
    },
  );

  it("grows monotonically and stays finite over a long run", () => {
    const delays = Array.from({ length: 5000 }, (_, i) => backoffDelayMs(i + 1, defaultRetryPolicy));
    expect(delays.every(Number.isFinite)).toBe(true);
    expect(delays.every((d, i) => i === 0 || d >= delays[i - 1]!)).toBe(true);
    expect(delays.at(-1)).toBe(defaultRetryPolicy.maxMs);
  });
});

describe("applyJitter", () => {
  it.each([
    { delay: 1000, jitter: 0.2, random: 0, expected: 1000 },
    { delay: 1000, jitter: 0.2, random: 0.5, expected: 900 },
    { delay: 1000, jitter: 0.2, random: 0.999999, expected: 800 },
    { delay: 1000, jitter: 0, random: 0.7, expected: 1000 },
    { delay: 1000, jitter: 1, random: 0.5, expected: 500 },
    { delay: 1000, jitter: 1, random: 0.9999, expected: 0 },
    { delay: 0, jitter: 0.5, random: 0.5, expected: 0 },
    { delay: 1001, jitter: 0.5, random: 0.5, expected: 751 }, // 750.75 rounds up
    { delay: 1000.4, jitter: 0, random: 0, expected: 1000 }, // rounds to whole ms
  ])("($delay, $jitter, $random) -> $expected", ({ delay, jitter, random, expected }) => {
    expect(applyJitter(delay, jitter, random)).toBe(expected);
  });

  it.each([0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.999999])(
    "random %s stays within [delay * (1 - jitter), delay]",
    (random) => {
      for (const [delay, jitter] of [
        [3_600_000, 0.2],
        [1234, 0.5],
        [7, 1],
      ] as const) {
        const result = applyJitter(delay, jitter, random);
        expect(result).toBeGreaterThanOrEqual(Math.round(delay * (1 - jitter)));
        expect(result).toBeLessThanOrEqual(delay);
      }
    },
  );

  it.each([
    { delay: -1, jitter: 0.2, random: 0, name: "delayMs" },
    { delay: Number.POSITIVE_INFINITY, jitter: 0.2, random: 0, name: "delayMs" },
    { delay: Number.NaN, jitter: 0.2, random: 0, name: "delayMs" },
    { delay: 1000, jitter: 1.1, random: 0, name: "jitter" },
    { delay: 1000, jitter: -0.1, random: 0, name: "jitter" },
    { delay: 1000, jitter: 0.2, random: 1, name: "random" },
    { delay: 1000, jitter: 0.2, random: -0.1, name: "random" },
    { delay: 1000, jitter: 0.2, random: Number.NaN, name: "random" },
  ])("rejects $name in ($delay, $jitter, $random)", ({ delay, jitter, random, name }) => {
    const error = thrown(() => applyJitter(delay, jitter, random));
    expect(error.code).toBe("INVALID_OPTION");
    expect(error.message).toContain(name);
  });
});

describe("retryDelayMs", () => {
  it.each([
    { attempt: 1, random: 0, expected: 1000 },
    { attempt: 4, random: 0.5, expected: 7200 },
    { attempt: 4, random: 0.999999, expected: 6400 },
    { attempt: 30, random: 0, expected: 3_600_000 },
    { attempt: 30, random: 0.5, expected: 3_240_000 },
  ])("attempt $attempt, random $random -> $expected", ({ attempt, random, expected }) => {
    expect(retryDelayMs(attempt, defaultRetryPolicy, random)).toBe(expected);
  });

  it("uses the policy's own jitter", () => {
    expect(retryDelayMs(2, policy({ jitter: 0 }), 0.9)).toBe(2000);
    expect(retryDelayMs(2, policy({ jitter: 1 }), 0.75)).toBe(500);
  });
});
