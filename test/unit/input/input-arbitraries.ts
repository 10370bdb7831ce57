/**
 * fast-check arbitraries for the input property tests (unit and database round trip): JSON-like values
 * that are mostly valid payloads, with every kind of trouble mixed in at a low rate: NUL and lone
 * surrogates in strings and keys, U+FFFF and U+2028 (which are fine), -0, NaN, Infinity, undefined
 * members, BigInts, Dates, class instances, functions, symbols, sparse arrays, objects without a
 * prototype, cycles, and nesting around the depth limit.
 */
import fc from "fast-check";
import { maxPayloadDepth } from "../../../src/input/payload.js";

/** Single UTF-16 units and pairs worth mixing into strings: the troublesome and the merely unusual. */
const units = fc.constantFrom(
  "a",
  "Z",
  " ",
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

/** A string made of {@link units}: often unstorable. */
export const trickyString = fc.string({ unit: units, maxLength: 6 });

/** A string that is mostly storable, sometimes tricky. */
export const someString = fc.oneof(
  { weight: 6, arbitrary: fc.string({ maxLength: 8 }) },
  { weight: 2, arbitrary: fc.string({ unit: "grapheme", maxLength: 4 }) },
  { weight: 1, arbitrary: trickyString },
);

class Point {
  constructor(readonly x: number) {}
}

const goodLeaf = fc.oneof(
  someString,
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }), // includes -0
  fc.boolean(),
  fc.constant(null),
);

const badLeaf = fc.oneof(
  fc.constantFrom(NaN, Infinity, -Infinity, undefined),
  fc.bigInt(),
  fc.date(),
  fc.constant(new Point(1)),
  fc.constant(() => 1),
  fc.constant(Symbol("s")),
);

const leaf = fc.oneof({ weight: 30, arbitrary: goodLeaf }, { weight: 1, arbitrary: badLeaf });

const tree = fc.letrec<{ value: unknown; array: unknown[]; sparse: unknown[]; object: object; bare: object }>(
  (tie) => ({
    value: fc.oneof(
      { depthSize: "small", maxDepth: 5 },
      { weight: 4, arbitrary: leaf },
      { weight: 2, arbitrary: tie("array") },
      { weight: 2, arbitrary: tie("object") },
      { weight: 1, arbitrary: fc.oneof({ weight: 1, arbitrary: tie("sparse") }, tie("bare")) },
    ),
    array: fc.array(tie("value"), { maxLength: 4 }),
    sparse: fc.sparseArray(tie("value"), { maxLength: 4 }),
    object: fc.dictionary(someString, tie("value"), { maxKeys: 4 }),
    bare: fc
      .dictionary(someString, tie("value"), { maxKeys: 3 })
      .map((o) => Object.assign(Object.create(null) as object, o)),
  }),
).value;

/** A value nested within a few levels of the depth limit, on either side of it. */
const deep = fc
  .tuple(
    fc.integer({ min: maxPayloadDepth - 2, max: maxPayloadDepth + 2 }),
    fc.constantFrom("array", "object"),
    goodLeaf,
  )
  .map(([levels, shape, inner]) => {
    let v: unknown = inner;
    for (let i = 0; i < levels; i++) v = shape === "array" ? [v] : { k: v };
    return v;
  });

/** A container that contains itself. */
const cyclic = fc.tuple(fc.array(goodLeaf, { maxLength: 3 }), fc.boolean()).map(([items, inObject]) => {
  const a: unknown[] = [...items];
  if (inObject) a.push({ back: a });
  else a.push(a);
  return a;
});

/** Arbitrary JSON-like values, mostly valid payloads. */
export const jsonLike: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 20, arbitrary: tree },
  { weight: 1, arbitrary: deep },
  { weight: 1, arbitrary: cyclic },
);
