import { describe, expect, it } from "vitest";
import {
  addDue,
  capDelay,
  dueEndsWaitSooner,
  nextDueAt,
  takeDue,
  type DueEntry,
} from "../../../src/logic/due-times.js";

const e = (at: number, priority = 10): DueEntry => ({ at, priority });

describe("due times", () => {
  it.each([
    ["into an empty list", [], [e(5)], [e(5)]],
    ["before, between and after", [e(10), e(30)], [e(40), e(5), e(20)], [e(5), e(10), e(20), e(30), e(40)]],
    ["equal times in arrival order", [e(10, 1)], [e(10, 2)], [e(10, 1), e(10, 2)]],
  ])("addDue %s", (_label, list, entries, expected) => {
    expect(addDue(list, entries)).toEqual(expected);
  });

  it("addDue keeps the earliest `max` entries and leaves its input alone", () => {
    const list = [e(10), e(20)];
    expect(addDue(list, [e(15), e(5)], 3)).toEqual([e(5), e(10), e(15)]);
    expect(list).toEqual([e(10), e(20)]);
  });

  it.each([
    ["nothing due yet", [e(10), e(20)], 9, [], 0],
    ["due at exactly its time", [e(10), e(20)], 10, [10], 1],
    ["every level due, highest first, once each", [e(1, 5), e(2, 30), e(3, 5), e(50, 99)], 3, [30, 5], 3],
  ])("takeDue: %s", (_label, list, now, levels, taken) => {
    const r = takeDue(list, now);
    expect(r.levels).toEqual(levels);
    expect(r.taken).toHaveLength(taken);
    expect(r.rest).toEqual(list.slice(taken));
  });

  it("nextDueAt is the earliest entry, or null", () => {
    expect(nextDueAt([])).toBeNull();
    expect(nextDueAt([e(7), e(9)])).toBe(7);
  });

  it.each([
    [2000, null, 0, 2000],
    [2000, undefined, 0, 2000],
    [2000, 1000, 0, 1000],
    [2000, 5000, 0, 2000],
    [2000, 2000, 0, 2000],
    [2000, 90, 100, 0], // already passed: poll now
    [500, 1100, 1000, 100],
  ])("capDelay(%d, %s, now %d) = %d", (delayMs, dueAt, now, expected) => {
    expect(capDelay(delayMs, dueAt, now)).toBe(expected);
  });

  it.each([
    [0, 2000, 1999, true],
    [0, 2000, 2000, false],
    [0, 2000, 5000, false],
    [null, 2000, 5000, true], // unknown start: never sleep through a due time
  ])("dueEndsWaitSooner(waitFrom %s, delay %d, dueAt %d) = %s", (waitFrom, delayMs, dueAt, expected) => {
    expect(dueEndsWaitSooner(waitFrom, delayMs, dueAt)).toBe(expected);
  });
});
