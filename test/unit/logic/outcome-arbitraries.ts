/**
 * fast-check arbitraries for the outcome property tests (unit and database round trip): values a handler
 * might return or throw. Mostly ordinary JSON, with every kind of trouble mixed in: NUL and lone
 * surrogates in strings and keys, U+FFFF and U+2028 (which are fine), -0, NaN, ±Infinity, undefined,
 * BigInts, Dates (stored through toJSON), sparse arrays, cycles, and nesting around the depth limit.
 */
import fc from "fast-check";
import { maxResultDepth } from "../../../src/logic/outcome-json.js";

/** Single UTF-16 units and pairs worth mixing into strings: the troublesome and the merely unusual. */
const units = fc.constantFrom(
  "a",
  "é",
  '"',
  "\\",
  "\n",
  "\u0000",
  "\ud800",
  "\udbff",
  "\udc00",
  "\udfff",
  "\uffff",
  "\u2028",
  "\ud83d\ude00",
);

/** A string that is mostly storable, sometimes tricky. */
const someString = fc.oneof(
  { weight: 4, arbitrary: fc.string({ maxLength: 8 }) },
  { weight: 2, arbitrary: fc.string({ unit: units, maxLength: 5 }) },
);

const leaf = fc.oneof(
  { weight: 10, arbitrary: someString },
  { weight: 4, arbitrary: fc.integer() },
  { weight: 4, arbitrary: fc.double() }, // -0, NaN and ±Infinity included
  { weight: 2, arbitrary: fc.boolean() },
  { weight: 2, arbitrary: fc.constant(null) },
  { weight: 1, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: fc.bigInt() },
  { weight: 1, arbitrary: fc.date({ noInvalidDate: true }) },
);

const tree = fc.letrec<{ value: unknown; array: unknown[]; sparse: unknown[]; object: object }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small", maxDepth: 4 },
    { weight: 4, arbitrary: leaf },
    { weight: 2, arbitrary: tie("array") },
    { weight: 2, arbitrary: tie("object") },
    { weight: 1, arbitrary: tie("sparse") },
  ),
  array: fc.array(tie("value"), { maxLength: 4 }),
  sparse: fc.sparseArray(tie("value"), { maxLength: 4 }),
  object: fc.dictionary(someString, tie("value"), { maxKeys: 4 }),
})).value;

/** An object that contains itself. */
const cyclic = fc.dictionary(someString, tree, { maxKeys: 3 }).map((o) => {
  const c: Record<string, unknown> = { ...o };
  c.self = c;
  return c;
});

/** A leaf wrapped in arrays, just inside or just past the depth limit. */
const deep = fc
  .tuple(leaf, fc.integer({ min: maxResultDepth - 1, max: maxResultDepth + 1 }))
  .map(([v, n]) => {
    let out: unknown = v;
    for (let i = 0; i < n; i++) out = [out];
    return out;
  });

/** A value a handler might return or throw. */
export const outcomeValue = fc.oneof(
  { weight: 20, arbitrary: tree },
  { weight: 1, arbitrary: cyclic },
  { weight: 1, arbitrary: deep },
);

/** Whether PostgreSQL can store `s`: no U+0000 and well-formed UTF-16 (no lone surrogate). */
export const storable = (s: string): boolean =>
  !s.includes("\u0000") && (s as unknown as { isWellFormed(): boolean }).isWellFormed();

/**
 * The result a job should end with, computed without the code under test: the value as JSON.stringify
 * writes it (parsed back), or null when that throws, writes nothing, holds a string or key PostgreSQL
 * cannot store, or nests deeper than the limit.
 */
export function expectedResult(value: unknown): unknown {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch {
    return null;
  }
  if (text === undefined) return null;
  const parsed: unknown = JSON.parse(text);
  const ok = (v: unknown, depth: number): boolean => {
    if (typeof v === "string") return storable(v);
    if (v === null || typeof v !== "object") return true;
    if (depth + 1 > maxResultDepth) return false;
    return Object.entries(v).every(([k, x]) => storable(k) && ok(x, depth + 1));
  };
  return ok(parsed, 0) ? parsed : null;
}
