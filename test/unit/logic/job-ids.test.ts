import { describe, expect, it } from "vitest";
import { compareIdText } from "../../../src/logic/job-ids.js";

// The text order against the numbers' own order, across digit-count boundaries and up to bigint's range.
const sign = (x: number) => Math.sign(x);
const numeric = (a: string, b: string) => (BigInt(a) < BigInt(b) ? -1 : BigInt(a) > BigInt(b) ? 1 : 0);

describe("compareIdText", () => {
  it.each([
    ["1", "2"],
    ["9", "10"],
    ["10", "9"],
    ["99", "100"],
    ["100", "100"],
    ["123456789", "123456790"],
    ["999999999999999999", "1000000000000000000"],
    ["9223372036854775807", "9223372036854775806"],
    ["42", "42"],
  ])("%s vs %s orders as the numbers do", (a, b) => {
    expect(sign(compareIdText(a, b))).toBe(numeric(a, b));
    expect(sign(compareIdText(b, a))).toBe(numeric(b, a));
  });

  it("sorts a shuffled run across a digit boundary into numeric order", () => {
    const ids = Array.from({ length: 300 }, (_, k) => String(900 + k));
    const shuffled = [...ids].sort((x, y) =>
      x.split("").reverse().join("") < y.split("").reverse().join("") ? -1 : 1,
    );
    expect(shuffled).not.toEqual(ids);
    expect(shuffled.sort(compareIdText)).toEqual(ids);
  });
});
