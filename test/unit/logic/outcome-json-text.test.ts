/** The text repairs and the jsonb scan of src/core/json-text.ts, table-tested. */
import { describe, expect, it } from "vitest";
import { jsonbRefusal, sanitizeText } from "../../../src/core/json-text.js";

describe("sanitizeText", () => {
  it.each([
    { s: "plain", max: Infinity, expected: "plain" },
    { s: "x\u0000y", max: Infinity, expected: "x\uFFFDy" },
    { s: "\u0000\u0000", max: Infinity, expected: "\uFFFD\uFFFD" },
    { s: "a\uD800b\uDC00", max: Infinity, expected: "a\uFFFDb\uFFFD" },
    { s: "\uD83D\uDE00", max: Infinity, expected: "\uD83D\uDE00" },
    { s: "abcdef", max: 3, expected: "abc" },
    // The cut would split a pair: it stops one unit short instead.
    { s: "ab\uD83D\uDE00", max: 3, expected: "ab" },
    { s: "ab\uD83D\uDE00", max: 4, expected: "ab\uD83D\uDE00" },
    { s: "a\u0000bc", max: 2, expected: "a\uFFFD" },
    { s: "abc", max: 0, expected: "" },
  ])("$s cut to $max", ({ s, max, expected }) => {
    expect(sanitizeText(s, max)).toBe(expected);
  });
});

describe("jsonbRefusal", () => {
  it.each([
    { text: '"plain"', refusal: null },
    { text: JSON.stringify("a\u0000b"), refusal: "a NUL (U+0000) in a string" },
    { text: JSON.stringify({ "k\u0000": 1 }), refusal: "a NUL (U+0000) in a string" },
    { text: '"a\u0000"', refusal: "a NUL (U+0000) in a string" }, // raw, not escaped
    { text: JSON.stringify("\uD800"), refusal: "a lone surrogate in a string" },
    { text: JSON.stringify("\uDC00x"), refusal: "a lone surrogate in a string" },
    { text: '"\\uD800x"', refusal: "a lone surrogate in a string" },
    { text: '"\\ud800\\u0041"', refusal: "a lone surrogate in a string" },
    { text: '"\uD800"', refusal: "a lone surrogate in a string" }, // raw
    { text: '"\\ud83d\\ude00"', refusal: null }, // an escaped pair
    { text: JSON.stringify("\uD83D\uDE00"), refusal: null },
    { text: JSON.stringify("\\u0000"), refusal: null }, // a backslash, then the text u0000
    { text: JSON.stringify("\\\u0000"), refusal: "a NUL (U+0000) in a string" },
    { text: JSON.stringify({ a: ["\uFFFF", "\u2028", '\n\t"\\'] }), refusal: null },
    { text: "[[[1]]]", depth: 3, refusal: null },
    { text: "[[[1]]]", depth: 2, refusal: "nested deeper than 2 levels" },
    { text: '[{"a":{}}]', depth: 2, refusal: "nested deeper than 2 levels" },
    { text: '["[[[[", "{{{{"]', depth: 1, refusal: null }, // brackets inside strings do not nest
    { text: "[[],[],[]]", depth: 2, refusal: null },
  ])("$text", ({ text, depth, refusal }) => {
    expect(jsonbRefusal(text, depth ?? 100)).toBe(refusal);
  });
});
