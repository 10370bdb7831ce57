import { describe, expect, it } from "vitest";
import {
  afterStoreRefusal,
  forgettable,
  namedRateKey,
  refuseLocally,
  resolveRateLimit,
  spreadAt,
  type ClosedKey,
} from "../../../src/logic/rate-limit.js";
import { ValidationError } from "../../../src/core/errors.js";

describe("resolveRateLimit", () => {
  const key = (p: unknown) => String(p);
  it.each([
    [
      { limit: 1, perMs: 1 },
      { limit: 1, perMs: 1, key: undefined },
    ],
    [
      { limit: 100, perMs: 60_000, key },
      { limit: 100, perMs: 60_000, key },
    ],
    [
      { limit: 100_000, perMs: 2 ** 31 - 1 },
      { limit: 100_000, perMs: 2 ** 31 - 1, key: undefined },
    ],
  ])("accepts %j", (value, expected) => {
    expect(resolveRateLimit("rateLimit of t", value, true, "INVALID_OPTION")).toEqual(expected);
  });

  it.each([
    [undefined, /use \{ limit, perMs, key\? \}/],
    [null, /use \{ limit, perMs/],
    [[1], /use \{ limit, perMs/],
    [{ limit: 0, perMs: 1000 }, /limit must be an integer from 1 to 100000, got 0/],
    [{ limit: 1.5, perMs: 1000 }, /limit must be an integer.*got 1.5/],
    [{ limit: "5", perMs: 1000 }, /limit must be an integer.*got "5"/],
    [{ limit: 100_001, perMs: 1000 }, /limit must be an integer/],
    [{ limit: 5 }, /perMs must be an integer from 1 to 2147483647, got undefined/],
    [{ limit: 5, perMs: 0 }, /perMs must be an integer.*got 0/],
    [{ limit: 5, perMs: -1000 }, /perMs must be an integer.*got -1000/],
    [{ limit: 5, perMs: 1000, key: "tenant" }, /key must be a function of the payload/],
    [{ limit: 5, perMs: 1000, per: 1 }, /unknown field "per"/],
  ])("rejects %j with a clear ValidationError", (value, message) => {
    const attempt = () => resolveRateLimit("rateLimit of t", value, true, "INVALID_OPTION");
    expect(attempt).toThrow(ValidationError);
    expect(attempt).toThrow(message);
    expect(attempt).toThrow(/^rateLimit of t: /);
  });

  it("a queue's limit takes no key function, and says INVALID_CONFIG", () => {
    let error: unknown;
    try {
      resolveRateLimit(
        "queueRateLimits.mail",
        { limit: 5, perMs: 1000, key: () => "k" },
        false,
        "INVALID_CONFIG",
      );
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).code).toBe("INVALID_CONFIG");
    expect((error as Error).message).toBe('queueRateLimits.mail: unknown field "key"');
  });
});

describe("namedRateKey: a key function's value", () => {
  it.each([
    ["tenant-1", "key:tenant-1"],
    ["x".repeat(200), `key:${"x".repeat(200)}`],
  ])("%j names the key %j", (value, key) => {
    expect(namedRateKey("t", value)).toBe(key);
  });
  it.each([[""], ["x".repeat(201)], [42], [undefined], [null], [{}]])(
    "%j is an error for that job",
    (value) => {
      const r = namedRateKey("api.call", value);
      expect(r).toBeInstanceOf(TypeError);
      expect((r as Error).message).toMatch(
        /^the rateLimit key of api.call returned .*: it must return a string of 1 to 200/,
      );
    },
  );
});

describe("namedRateKey: text PostgreSQL cannot store", () => {
  it.each([
    ["nul\u0000", /returned "nul\\u0000": it contains U\+0000 \(NUL\) at index 3/],
    ["\uD83D", /returned "\\ud83d": it contains U\+D83D \(a lone high surrogate\) at index 0/],
    ["x\uDE00", /returned "x\\ude00": it contains U\+DE00 \(a lone low surrogate\) at index 1/],
  ])("%j is an error for that job", (value, message) => {
    const r = namedRateKey("api.call", value);
    expect(r).toBeInstanceOf(TypeError);
    expect((r as Error).message).toMatch(message);
  });
  it("a whole surrogate pair is a key", () => {
    expect(namedRateKey("t", "tenant-😀")).toBe("key:tenant-😀");
  });
});

describe("spreadAt: limit jobs per window, evenly, in refusal order", () => {
  it.each([
    // base, k, limit, perMs -> at
    [1000, 0, 50, 1000, 1000],
    [1000, 1, 50, 1000, 1020],
    [1000, 49, 50, 1000, 1980],
    [1000, 50, 50, 1000, 2000],
    [1000, 999, 50, 1000, 1000 + 19 * 1000 + 980],
    [0, 2, 3, 1000, 666],
    [0, 5, 1, 60_000, 300_000],
  ])("base %d, k %d, %d per %d ms -> %d", (base, k, limit, perMs, at) => {
    expect(spreadAt(base, k, limit, perMs)).toBe(at);
  });

  it("a backlog of 1,000 jobs under 50/s comes back at no more than 50 in any second", () => {
    const at = Array.from({ length: 1000 }, (_, k) => spreadAt(0, k, 50, 1000));
    for (let t = 0; t < 21_000; t += 10) {
      expect(at.filter((x) => x >= t && x < t + 1000).length).toBeLessThanOrEqual(50);
    }
    expect(Math.max(...at)).toBe(19_980);
  });
});

describe("the memory of a closed key", () => {
  const limit = 2;
  const perMs = 1000;

  it.each<[string, ClosedKey | undefined, number, number | null]>([
    ["nothing remembered: ask the store", undefined, 0, null],
    ["the opening has passed: ask the store", { openAt: 500, base: 500, refused: 1 }, 500, null],
    [
      "closed: refused locally, at the episode's next slot",
      { openAt: 500, base: 500, refused: 1 },
      100,
      1000,
    ],
    ["closed: the slot is never before the opening", { openAt: 900, base: 0, refused: 1 }, 100, 900],
    ["closed: the third refusal goes to the next window", { openAt: 500, base: 500, refused: 2 }, 100, 1500],
  ])("%s", (_, m, now, retryAt) => {
    const r = refuseLocally(m, now, limit, perMs);
    expect(r?.retryAt ?? null).toBe(retryAt);
    if (r && m) expect(r.memory).toEqual({ ...m, refused: m.refused + 1 });
  });

  it.each<[string, ClosedKey | undefined, number, number, number, ClosedKey]>([
    // name, memory, now, openInMs -> retryAt, memory
    [
      "a first refusal starts an episode at the opening",
      undefined,
      100,
      400,
      500,
      { openAt: 500, base: 500, refused: 1 },
    ],
    [
      "an episode whose slots are still ahead goes on counting",
      { openAt: 500, base: 500, refused: 3 },
      600,
      300,
      2000,
      { openAt: 900, base: 500, refused: 4 },
    ],
    [
      "an episode whose slots are all past ends: a new one at the new opening",
      { openAt: 500, base: 500, refused: 1 },
      1200,
      100,
      1300,
      { openAt: 1300, base: 1300, refused: 1 },
    ],
    [
      "a slot before the store's opening waits for the opening",
      { openAt: 500, base: 500, refused: 1 },
      600,
      800,
      1400,
      { openAt: 1400, base: 500, refused: 2 },
    ],
    [
      "a negative opening (clock noise) is now",
      undefined,
      100,
      -5,
      100,
      { openAt: 100, base: 100, refused: 1 },
    ],
  ])("%s", (_, m, now, openInMs, retryAt, memory) => {
    expect(afterStoreRefusal(m, now, openInMs, limit, perMs)).toEqual({ retryAt, memory });
  });

  it.each([
    [{ openAt: 500, base: 500, refused: 1 }, 999, false],
    [{ openAt: 500, base: 500, refused: 1 }, 1000, true],
    [{ openAt: 1500, base: 500, refused: 1 }, 1200, false],
  ])("forgettable(%j at %d) = %s", (m, now, expected) => {
    expect(forgettable(m, now, limit, perMs)).toBe(expected);
  });
});
