import { describe, expect, it } from "vitest";
import { redacted, sanitizedContext } from "../../../src/logic/context-view.js";

const limits = { maxDepth: 2, maxString: 5, maxItems: 4 };

describe("sanitizedContext", () => {
  it.each<[string, unknown, unknown]>([
    ["plain JSON stays", { a: 1, b: "x", c: [true, null] }, { a: 1, b: "x", c: [true, null] }],
    [
      "secret-looking keys are redacted",
      { apiKey: "k", password: "p", Authorization: "b", id: 1 },
      {
        apiKey: redacted,
        password: redacted,
        Authorization: redacted,
        id: 1,
      },
    ],
    ["a long string is cut", { s: "abcdefgh" }, { s: "abcde…" }],
    ["long arrays are cut, counted", { a: [1, 2, 3, 4, 5, 6] }, { a: [1, 2, 3, 4, "… 2 more"] }],
    [
      "many keys are cut, counted",
      { a: 1, b: 2, c: 3, d: 4, e: 5 },
      { a: 1, b: 2, c: 3, d: 4, "…": "1 more keys" },
    ],
    ["deep values are elided", { a: { b: { c: 1 } } }, { a: { b: "[…]" } }],
    [
      "non-JSON values are described",
      { f: () => 1, u: undefined, n: Number.NaN, big: 10n },
      {
        f: "[function]",
        u: "[undefined]",
        n: "NaN",
        big: "10n",
      },
    ],
    ["dates become ISO text", { d: new Date(0) }, { d: "1970-01-01T00:00:00.000Z" }],
    [
      "an actor reference shows its id",
      { child: { id: "c1", sessionId: "x:1", send() {} } },
      { child: "[actor c1]" },
    ],
  ])("%s", (_label, input, expected) => {
    expect(sanitizedContext(input, limits)).toEqual(expected);
  });

  it("a cycle is marked, a shared value is not", () => {
    const shared = { v: 1 };
    const cyclic: Record<string, unknown> = { shared, again: shared };
    cyclic.self = cyclic;
    expect(sanitizedContext(cyclic, { maxDepth: 4, maxString: 50, maxItems: 10 })).toEqual({
      shared: { v: 1 },
      again: { v: 1 },
      self: "[circular]",
    });
  });

  it("a throwing getter does not throw out", () => {
    const hostile = {
      get boom(): never {
        throw new Error("no");
      },
    };
    expect(sanitizedContext({ h: hostile }, limits)).toEqual({ h: "[unreadable]" });
  });
});
