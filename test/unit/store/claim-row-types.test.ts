import pg from "pg";
import { describe, expect, it } from "vitest";
import { claimRowTypes, timestamptzMs } from "../../../src/store/claim/claim-row-types.js";

// The claim rows' timestamp parser against pg's own (Date) parser: the same instant, to the millisecond,
// for every shape PostgreSQL's ISO output takes; anything unusual goes through pg's parser.

const pgParse = pg.types.getTypeParser(1184, "text") as (s: string) => Date | number;
const asMs = (v: Date | number) => (typeof v === "number" ? v : v.getTime());

describe("timestamptzMs", () => {
  it.each([
    "2026-12-01 22:46:30+00",
    "2026-12-01 22:46:30.1+00",
    "2026-12-01 22:46:30.123+00",
    "2026-12-01 22:46:30.123456+00",
    "2026-12-01 22:46:30.999999+00",
    "2026-12-01 22:46:30.000001+00",
    "2026-12-01 22:46:30.123456+05:30",
    "2026-12-01 22:46:30.5-08",
    "2026-12-01 22:46:30-03:30",
    "1900-01-01 00:00:00+00:19:32",
    "1970-01-01 00:00:00+00",
    "1969-12-31 23:59:59.999+00",
    "2099-02-28 23:59:59.5+14",
    "0150-06-15 12:00:00+00",
    "2026-02-29 00:00:00+00", // not a date PostgreSQL would print; both roll it over the same way
  ])("%s", (text) => {
    expect(timestamptzMs(text)).toBe(asMs(pgParse(text)));
  });

  it.each([
    "infinity",
    "-infinity",
    "0044-03-15 12:00:00+00 BC",
    "12026-12-01 22:46:30+00",
    "0099-01-01 00:00:00+00",
  ])("falls back to pg's parser for %s", (text) => {
    expect(timestamptzMs(text)).toBe(asMs(pgParse(text)));
  });

  it("returns a number, never a Date", () => {
    expect(typeof timestamptzMs("2026-12-01 22:46:30.123456+00")).toBe("number");
  });
});

describe("claimRowTypes", () => {
  it("parses timestamptz (text) as epoch ms and leaves every other type to pg", () => {
    const get = claimRowTypes.getTypeParser as (oid: number, format?: string) => (s: string) => unknown;
    expect(get(1184, "text")("2026-12-01 00:00:00+00")).toBe(Date.UTC(2026, 11, 1));
    for (const oid of [20, 23, 25, 114, 3802, 1114, 1082, 1700]) {
      expect(get(oid, "text")).toBe(pg.types.getTypeParser(oid, "text"));
    }
  });
});
