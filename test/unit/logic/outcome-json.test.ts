/**
 * How results and error records become stored JSON (src/logic/outcome-json.ts): table tests for each
 * rule, and a property over arbitrary JSON-like values checked against an independent oracle (the value
 * is stored as JSON.stringify writes it exactly when every string and key of that JSON is storable and it
 * is not too deep; otherwise null).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  errorRecordJson,
  maxOutcomeDelayMs,
  maxResultDepth,
  resultJson,
  storableDelayMs,
} from "../../../src/logic/outcome-json.js";
import { expectedResult, outcomeValue } from "./outcome-arbitraries.js";

const nested = (depth: number): unknown => {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = [v];
  return v;
};
const cycle: Record<string, unknown> = { a: 1 };
cycle.self = cycle;

describe("resultJson", () => {
  it.each([
    { what: "an object", value: { pages: 2 }, json: '{"pages":2}' },
    { what: "a string", value: "done", json: '"done"' },
    { what: "null", value: null, json: "null" },
    { what: "undefined", value: undefined, json: null },
    { what: "a function", value: () => 1, json: null },
    { what: "a Date (toJSON)", value: new Date(0), json: '"1970-01-01T00:00:00.000Z"' },
    { what: "NaN inside (as JSON writes it)", value: { x: NaN, y: undefined }, json: '{"x":null}' },
    { what: "-0", value: -0, json: "0" },
    { what: "U+FFFF and U+2028", value: "\uFFFF\u2028", json: '"\uFFFF\u2028"' },
    { what: "a surrogate pair", value: "\uD83D\uDE00", json: '"\uD83D\uDE00"' },
    // eslint-disable-next-line no-sparse-arrays -- a hole is the point
    { what: "a sparse array", value: [1, , 3], json: "[1,null,3]" },
    { what: "a NUL in a string", value: "a\u0000b", json: null },
    { what: "a NUL in a key", value: { "k\u0000": 1 }, json: null },
    { what: "a NUL deep inside", value: { a: [{ b: "x\u0000" }] }, json: null },
    { what: "a lone high surrogate", value: "\uD800", json: null },
    { what: "a lone low surrogate in a key", value: { "\uDC00": 1 }, json: null },
    { what: "a BigInt", value: 10n, json: null },
    { what: "a BigInt inside", value: { n: 1n }, json: null },
    { what: "a cycle", value: cycle, json: null },
    {
      what: "a throwing toJSON",
      value: {
        toJSON: () => {
          throw new Error("no");
        },
      },
      json: null,
    },
    {
      what: "nesting at the limit",
      value: nested(maxResultDepth),
      json: JSON.stringify(nested(maxResultDepth)),
    },
    { what: "nesting past the limit", value: nested(maxResultDepth + 1), json: null },
    { what: "nesting past the JS stack", value: nested(200_000), json: null },
  ])("$what", ({ value, json }) => {
    expect(resultJson(value)).toBe(json);
  });

  it("stores a value exactly as JSON writes it when that is storable, and null otherwise", () => {
    fc.assert(
      fc.property(outcomeValue, (value) => {
        const stored = resultJson(value);
        const expected = expectedResult(value);
        expect(stored === null ? null : JSON.parse(stored)).toEqual(expected);
      }),
      { numRuns: 1000 },
    );
  });
});

describe("errorRecordJson", () => {
  it.each([
    {
      what: "an ordinary error",
      info: { attempt: 2, name: "Error", message: "boom", stack: "Error: boom\n    at x" },
      record: { attempt: 2, name: "Error", message: "boom", stack: "Error: boom\n    at x" },
    },
    {
      what: "NUL and lone surrogates in every text",
      info: { attempt: 1, name: "E\u0000", message: "x\u0000\uD800", stack: "s\uDC00" },
      record: { attempt: 1, name: "E\uFFFD", message: "x\uFFFD\uFFFD", stack: "s\uFFFD" },
    },
    {
      what: "a message cut in the middle of a pair",
      info: { attempt: 1, name: "Error", message: "a".repeat(1999) + "\uD83D\uDE00" },
      record: { attempt: 1, name: "Error", message: "a".repeat(1999) },
    },
    {
      what: "long texts cut to their bounds",
      info: { attempt: 1, name: "N".repeat(300), message: "m".repeat(3000), stack: "s".repeat(5000) },
      record: { attempt: 1, name: "N".repeat(200), message: "m".repeat(2000), stack: "s".repeat(4000) },
    },
    {
      what: "an empty name and stack",
      info: { attempt: 1, name: "", message: "", stack: "" },
      record: { attempt: 1, name: "Error", message: "" },
    },
    {
      what: "a non-integer attempt",
      info: { attempt: NaN, name: "Error", message: "m" },
      record: { attempt: 0, name: "Error", message: "m" },
    },
    {
      what: "details",
      info: { attempt: 1, name: "Error", message: "m", details: { code: "E1", n: 1 } },
      record: { attempt: 1, name: "Error", message: "m", details: { code: "E1", n: 1 } },
    },
    {
      what: "details that cannot be stored (dropped)",
      info: { attempt: 1, name: "Error", message: "m", details: { "k\u0000": 1 } },
      record: { attempt: 1, name: "Error", message: "m" },
    },
    {
      what: "details with a BigInt (dropped)",
      info: { attempt: 1, name: "Error", message: "m", details: { n: 1n } },
      record: { attempt: 1, name: "Error", message: "m" },
    },
    {
      what: "details too long (kept as cut text)",
      info: { attempt: 1, name: "Error", message: "m", details: { s: "x".repeat(9000) } },
      record: { attempt: 1, name: "Error", message: "m", details: `{"s":"${"x".repeat(7994)}` },
    },
  ])("$what", ({ info, record }) => {
    const text = errorRecordJson(info);
    expect(JSON.parse(text)).toEqual(record);
  });

  it("is always storable, whatever the texts", () => {
    const text = fc.string({ unit: fc.constantFrom("a", "\u0000", "\uD800", "\uDC00", "\uD83D\uDE00") });
    fc.assert(
      fc.property(text, text, text, fc.integer(), (name, message, stack, attempt) => {
        const json = errorRecordJson({ attempt, name, message, stack });
        const parsed = JSON.parse(json) as Record<string, string>;
        for (const s of [parsed.name!, parsed.message!, parsed.stack ?? ""]) {
          expect(s.includes("\u0000")).toBe(false);
          expect((s as unknown as { isWellFormed(): boolean }).isWellFormed()).toBe(true);
        }
      }),
      { numRuns: 500 },
    );
  });
});

describe("storableDelayMs", () => {
  it.each([
    { ms: 0, expected: 0 },
    { ms: 1.6, expected: 2 },
    { ms: -5, expected: 0 },
    { ms: NaN, expected: 0 },
    { ms: 30_000, expected: 30_000 },
    { ms: 1e300, expected: maxOutcomeDelayMs },
    { ms: Infinity, expected: maxOutcomeDelayMs },
  ])("$ms -> $expected", ({ ms, expected }) => {
    expect(storableDelayMs(ms)).toBe(expected);
  });
});
