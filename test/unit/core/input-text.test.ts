/**
 * The pure input checks: text PostgreSQL can store (src/core/input-text.ts) and payloads that survive jsonb
 * unchanged (src/input/payload.ts), with table tests for each problem and a property over arbitrary JSON-like
 * values: the validator either refuses with a ValidationError or the value is exactly JSON.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ValidationError } from "../../../src/core/errors.js";
import { describeValue, storableText, textProblem } from "../../../src/core/input-text.js";
import { checkPayload, maxPayloadDepth, serializePayload } from "../../../src/input/payload.js";
import { jsonLike } from "../input/input-arbitraries.js";

describe("textProblem", () => {
  it.each([
    ["", null],
    ["plain", null],
    ["\uffff \u2028 \u2029 \ufeff", null],
    ["pair \ud83d\ude00", null],
    ["a\u0000b", "U+0000 (NUL) at index 1"],
    ["x\ud800", "U+D800 (a lone high surrogate) at index 1"],
    ["\ud800x", "U+D800 (a lone high surrogate) at index 0"],
    ["\udc00", "U+DC00 (a lone low surrogate) at index 0"],
    ["\ude00\ud83d", "U+DE00 (a lone low surrogate) at index 0"],
    ["ok \ud83d\ude00 then \udfff", "U+DFFF (a lone low surrogate) at index 11"],
  ])("%j -> %j", (text, expected) => {
    const problem = textProblem(text);
    if (expected === null) expect(problem).toBeNull();
    else expect(problem).toContain(expected);
  });

  it("agrees with a UTF-8 round trip on arbitrary UTF-16 strings", () => {
    // Buffer encodes a lone surrogate as U+FFFD, so a string survives UTF-8 exactly when it is well formed.
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 20 }), fc.string({ maxLength: 4 }), (s, t) => {
        const text = s + t;
        const wellFormed = Buffer.from(text, "utf8").toString("utf8") === text;
        expect(textProblem(text) === null).toBe(wellFormed && !text.includes("\u0000"));
      }),
      { numRuns: 2000 },
    );
  });
});

describe("storableText", () => {
  it("returns a storable string and refuses the rest with the code given", () => {
    expect(storableText("reason", "fine")).toBe("fine");
    for (const bad of ["a\u0000", "\ud800", 5, null, 10n, Symbol("s")]) {
      let error: unknown;
      try {
        storableText("cancel reason", bad, "INVALID_FLOW");
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).code).toBe("INVALID_FLOW");
      expect((error as ValidationError).message).toContain("invalid cancel reason");
    }
  });

  it("describes any value without throwing", () => {
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(describeValue(10n)).toBe("10n");
    expect(describeValue(cycle)).toBe("[object Object]");
    expect(describeValue("a\u0000")).toBe('"a\\u0000"');
    expect(describeValue(undefined)).toBe("undefined");
  });
});

/** Nests `leaf` `levels` deep, alternating arrays and objects as `shape` says. */
function nest(levels: number, shape: "array" | "object", leaf: unknown = 1): unknown {
  let v = leaf;
  for (let i = 0; i < levels; i++) v = shape === "array" ? [v] : { k: v };
  return v;
}

function refusal(payload: unknown): ValidationError {
  try {
    serializePayload(payload);
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return error as ValidationError;
  }
  throw new Error(`accepted ${describeValue(payload)}`);
}

describe("checkPayload", () => {
  class Money {
    constructor(readonly cents: number) {}
  }
  const cycle: unknown[] = [1];
  cycle.push({ back: cycle });
  const shared = { s: 1 };

  it.each([
    ["NUL in a value", { a: ["x\u0000"] }, "$.a[0]: it contains U+0000 (NUL) at index 1"],
    ["NUL in a key", { ok: { "k\u0000": 1 } }, '$.ok: the key "k\\u0000": it contains U+0000'],
    ["a lone high surrogate", ["\ud83d"], "$[0]: it contains U+D83D (a lone high surrogate)"],
    ["a lone low surrogate in a key", { "\ude00": 1 }, "a lone low surrogate"],
    ["a sparse array", [1, , 3], "$: index 1 is a hole"], // eslint-disable-line no-sparse-arrays
    ["NaN", { n: NaN }, "$.n: NaN is not a finite number"],
    ["-Infinity", [-Infinity], "-Infinity is not a finite number"],
    ["undefined member", { u: undefined }, "$.u: a undefined is not JSON"],
    ["a BigInt", { b: 1n }, "$.b: a bigint is not JSON"],
    ["a Date", { d: new Date(0) }, "$.d: a Date is not a plain JSON object"],
    ["a class instance", { m: new Money(1) }, "a Money is not a plain JSON object"],
    ["a cycle", cycle, "$[1].back: it is circular"],
    ["a key that is not an identifier", { "a b": [NaN] }, '$["a b"][0]'],
    ["arrays 2,000 deep", nest(2000, "array"), `nested deeper than ${maxPayloadDepth} levels`],
    ["objects 6,000 deep", nest(6000, "object"), `nested deeper than ${maxPayloadDepth} levels`],
    ["one level past the limit", nest(maxPayloadDepth + 1, "array"), "deeper than"],
  ])("refuses %s", (_why, payload, message) => {
    const error = refusal(payload);
    expect(error.code).toBe("INVALID_PAYLOAD");
    expect(error.message).toContain(message);
  });

  it.each([
    ["U+FFFF, U+2028 and a surrogate pair", { s: "\uffff\u2028\ud83d\ude00" }],
    ["-0 (stored as 0, as JSON writes it)", { z: -0 }],
    ["the same object twice (not a cycle)", [shared, shared]],
    ["exactly the depth limit", nest(maxPayloadDepth, "object")],
    ["an object without a prototype", Object.assign(Object.create(null) as object, { a: 1 })],
  ])("accepts %s", (_why, payload) => {
    expect(JSON.parse(serializePayload(payload))).toEqual(JSON.parse(JSON.stringify(payload)));
  });

  it("refuses exactly the values that are not exact, storable JSON, and never throws anything else", () => {
    fc.assert(
      fc.property(jsonLike, (value) => {
        let accepted = true;
        try {
          checkPayload(value);
        } catch (error) {
          if (!(error instanceof ValidationError)) throw error;
          expect(error.code).toBe("INVALID_PAYLOAD");
          accepted = false;
        }
        expect(accepted).toBe(isExactJson(value));
      }),
      { numRuns: 3000 },
    );
  });
});

/**
 * The test's own statement of "survives jsonb unchanged", written independently of payload.ts: strings
 * survive UTF-8 and have no NUL, numbers are finite, arrays are dense, objects plain, no cycle, at most
 * maxPayloadDepth containers deep.
 */
function isExactJson(value: unknown, depth = 0, path: object[] = []): boolean {
  if (value === null || typeof value === "boolean") return true;
  if (typeof value === "number") return Number.isFinite(value);
  if (typeof value === "string") return goodText(value);
  if (typeof value !== "object" || path.includes(value) || depth + 1 > maxPayloadDepth) return false;
  const inner = [...path, value];
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      if (!Object.hasOwn(value, i) || !isExactJson(value[i], depth + 1, inner)) return false;
    }
    return true;
  }
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) return false;
  return Object.entries(value).every(([k, v]) => goodText(k) && isExactJson(v, depth + 1, inner));
}

function goodText(s: string): boolean {
  return !s.includes("\u0000") && Buffer.from(s, "utf8").toString("utf8") === s;
}
