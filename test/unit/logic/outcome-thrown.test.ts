/**
 * How a thrown value is described for the job's error record (src/core/thrown-value.ts): one row per
 * kind of value a handler may throw, including the hostile ones, and a property that nothing throws.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { describeThrown, detailsLimits, thrownAsError } from "../../../src/core/thrown-value.js";
import { errorRecordJson } from "../../../src/logic/outcome-json.js";
import { outcomeValue } from "./outcome-arbitraries.js";

const circular: Record<string, unknown> = { message: "quota exceeded", code: 429 };
circular.self = circular;

const circularCause = new Error("outer");
(circularCause as { cause?: unknown }).cause = circularCause;

const withCode = Object.assign(new Error("refused"), { code: "ECONNREFUSED", errno: -111 });
const withCause = new Error("outer", { cause: new Error("inner") });

const throwingGetter = {
  message: "getter",
  get broken(): never {
    throw new Error("no");
  },
};
const throwingToString = {
  toString(): never {
    throw new Error("no");
  },
  toJSON(): never {
    throw new Error("no");
  },
};
const throwingMessage = {
  get message(): never {
    throw new Error("no");
  },
};
const hostile = new Proxy(
  {},
  {
    get: () => {
      throw new Error("trap");
    },
    ownKeys: () => {
      throw new Error("trap");
    },
    getPrototypeOf: () => {
      throw new Error("trap");
    },
  },
);
const revoked = Proxy.revocable({}, {});
revoked.revoke();
const named = { name: "QuotaError", message: "slow down", retryAfter: 30 };
const errorWithoutStack = new Error("no stack");
errorWithoutStack.stack = undefined;
const deep = { a: { b: { c: { d: { e: { f: 1 } } } } } };
const wide = Object.fromEntries(Array.from({ length: 80 }, (_, i) => [`k${i}`, i]));

interface Row {
  what: string;
  value: unknown;
  name: string;
  message: string;
  details?: unknown;
}

describe("describeThrown", () => {
  it.each<Row>([
    { what: "a string", value: "plain text", name: "NonErrorThrown", message: "plain text" },
    { what: "a number", value: 42, name: "NonErrorThrown", message: "non-error thrown: 42" },
    { what: "a BigInt", value: 10n, name: "NonErrorThrown", message: "non-error thrown: 10n" },
    { what: "null", value: null, name: "NonErrorThrown", message: "non-error thrown: null" },
    { what: "undefined", value: undefined, name: "NonErrorThrown", message: "non-error thrown: undefined" },
    { what: "a symbol", value: Symbol("s"), name: "NonErrorThrown", message: "non-error thrown: Symbol(s)" },
    {
      what: "a function",
      value: function handlerFailed() {},
      name: "NonErrorThrown",
      message: "non-error thrown: [Function handlerFailed]",
    },
    {
      what: "a circular object with a message",
      value: circular,
      name: "NonErrorThrown",
      message: "quota exceeded",
      details: { code: 429, self: "[Circular]" },
    },
    {
      what: "an object with its own name",
      value: named,
      name: "QuotaError",
      message: "slow down",
      details: { retryAfter: 30 },
    },
    {
      what: "an object without a message",
      value: { a: 1, b: [1, 2] },
      name: "NonErrorThrown",
      message: 'non-error thrown: {"a":1,"b":[1,2]}',
      details: { a: 1, b: [1, 2] },
    },
    {
      what: "an object with a throwing getter",
      value: throwingGetter,
      name: "NonErrorThrown",
      message: "getter",
      details: { broken: "[Unreadable]" },
    },
    {
      what: "an object whose toString and toJSON throw",
      value: throwingToString,
      name: "NonErrorThrown",
      message: 'non-error thrown: {"toString":"[Function toString]","toJSON":"[Function toJSON]"}',
      details: { toString: "[Function toString]", toJSON: "[Function toJSON]" },
    },
    {
      what: "an object whose message getter throws",
      value: throwingMessage,
      name: "NonErrorThrown",
      message: 'non-error thrown: {"message":"[Unreadable]"}',
    },
    {
      what: "a Proxy whose every trap throws",
      value: hostile,
      name: "NonErrorThrown",
      message: "non-error thrown: {}",
    },
    {
      what: "a revoked Proxy",
      value: revoked.proxy,
      name: "NonErrorThrown",
      message: "non-error thrown: [unreadable value]",
    },
    {
      what: "an Error with own fields",
      value: withCode,
      name: "Error",
      message: "refused",
      details: { code: "ECONNREFUSED", errno: -111 },
    },
    {
      what: "an Error with a cause",
      value: withCause,
      name: "Error",
      message: "outer",
      details: { cause: expect.objectContaining({ name: "Error", message: "inner" }) },
    },
    {
      what: "an Error that is its own cause",
      value: circularCause,
      name: "Error",
      message: "outer",
      details: { cause: "[Circular]" },
    },
    { what: "an Error without a stack", value: errorWithoutStack, name: "Error", message: "no stack" },
    {
      what: "nesting past the details depth",
      value: deep,
      name: "NonErrorThrown",
      message: 'non-error thrown: {"a":{"b":{"c":{"d":"[Object]"}}}}',
      details: { a: { b: { c: { d: "[Object]" } } } },
    },
  ])("$what", ({ value, name, message, details }) => {
    const d = describeThrown(value);
    expect(d.name).toBe(name);
    expect(d.message).toBe(message);
    expect(d.details).toEqual(details);
  });

  it("keeps an Error's stack", () => {
    const e = new Error("with stack");
    expect(describeThrown(e).stack).toBe(e.stack);
  });

  it("bounds the fields it copies", () => {
    const d = describeThrown(wide);
    expect(Object.keys(d.details!)).toHaveLength(detailsLimits.fields);
  });

  it("never throws, and its record is always storable, for any value", () => {
    fc.assert(
      fc.property(outcomeValue, (value) => {
        const d = describeThrown(value);
        const record = JSON.parse(errorRecordJson({ attempt: 1, ...d })) as Record<string, unknown>;
        expect(typeof record.message).toBe("string");
        expect(unstorableStrings(record)).toEqual([]);
      }),
      { numRuns: 1000 },
    );
  });
});

/** Every string and key in a parsed JSON tree that PostgreSQL could not store. */
function unstorableStrings(v: unknown): string[] {
  const bad = (s: string) =>
    s.includes("\u0000") || !(s as unknown as { isWellFormed(): boolean }).isWellFormed();
  if (typeof v === "string") return bad(v) ? [v] : [];
  if (v === null || typeof v !== "object") return [];
  return Object.entries(v).flatMap(([k, x]) => [...(bad(k) ? [k] : []), ...unstorableStrings(x)]);
}

describe("thrownAsError", () => {
  it("passes an Error through", () => {
    const e = new TypeError("t");
    expect(thrownAsError(e, describeThrown(e))).toBe(e);
  });

  it("wraps anything else with the description's name and message, and the value as its cause", () => {
    const e = thrownAsError(circular, describeThrown(circular));
    expect(e).toBeInstanceOf(Error);
    expect(e).toMatchObject({ name: "NonErrorThrown", message: "quota exceeded" });
    expect(e.cause).toBe(circular);
  });
});
