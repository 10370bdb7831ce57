/**
 * The history partition plan as a table: widths by retention, what is made ahead (first range, alignment,
 * continuing after the last, a gap after an outage, the per-pass cap) and what is dropped.
 */
import { describe, expect, it } from "vitest";
import {
  historyWidthMs,
  maxCreatesPerPass,
  planHistoryPartitions,
  type HistoryPlanInput,
  type HistoryRange,
} from "../../../src/logic/history-partitions.js";

const second = 1000;
const minute = 60 * second;
const hour = 60 * minute;
const day = 24 * hour;
/** 2026-12-06 16:00:00 UTC, a whole 2-hour boundary. */
const t0 = Date.UTC(2026, 11, 6, 16, 0, 0);

function plan(over: Partial<HistoryPlanInput>) {
  return planHistoryPartitions({
    now: t0,
    pruneNow: over.now ?? t0,
    existing: [],
    retentionMs: day,
    intervalMs: minute,
    ...over,
  });
}

const iso = (r: HistoryRange) => [new Date(r.start).toISOString(), new Date(r.end).toISOString()];

describe("historyWidthMs", () => {
  it.each([
    [0, null],
    [59 * minute, null],
    [hour, 5 * minute],
    [3 * hour, 15 * minute],
    [day, 2 * hour],
    [36 * hour, 3 * hour],
    [7 * day, 12 * hour],
    [14 * day, day],
    [365 * day, day],
  ])("a retention of %d ms gives width %s", (retention, width) => {
    expect(historyWidthMs(retention)).toBe(width);
  });
});

describe("planHistoryPartitions", () => {
  it("starts at now (rounded down to the second) and then follows the width's multiples", () => {
    const p = plan({ now: t0 + 30 * minute + 1234 });
    expect(p.widthMs).toBe(2 * hour);
    expect(p.create.map(iso)).toEqual([
      ["2026-12-06T16:30:01.000Z", "2026-12-06T18:00:00.000Z"],
      ["2026-12-06T18:00:00.000Z", "2026-12-06T20:00:00.000Z"],
    ]);
    expect(p.drop).toEqual([]);
  });

  it("on a boundary, the first range is a whole width", () => {
    expect(plan({}).create.map(iso)).toEqual([["2026-12-06T16:00:00.000Z", "2026-12-06T18:00:00.000Z"]]);
  });

  it("continues from the last range's end, and makes nothing while the lead is covered", () => {
    const existing = [
      { start: t0, end: t0 + 2 * hour },
      { start: t0 + 2 * hour, end: t0 + 4 * hour },
    ];
    expect(plan({ now: t0 + 10 * minute, existing }).create).toEqual([]);
    // Once the last range ends within a width of now, the next is made.
    expect(plan({ now: t0 + 130 * minute, existing }).create.map(iso)).toEqual([
      ["2026-12-06T20:00:00.000Z", "2026-12-06T22:00:00.000Z"],
    ]);
  });

  it("covers at least three passes ahead when passes are further apart than a width", () => {
    const p = plan({ retentionMs: hour, intervalMs: 10 * minute });
    expect(p.widthMs).toBe(5 * minute);
    expect(p.create).toHaveLength(6);
    expect(p.create.at(-1)!.end).toBe(t0 + 30 * minute);
  });

  it("after an outage it starts at now, leaving the gap to the row-by-row partition", () => {
    const existing = [{ start: t0 - 4 * hour, end: t0 - 2 * hour }];
    const p = plan({ now: t0 + 5 * second, existing });
    expect(p.create[0]).toEqual({ start: t0 + 5 * second, end: t0 + 2 * hour });
  });

  it("lines a new width up from the last range's end when the retention changed", () => {
    const existing = [{ start: t0, end: t0 + 2 * hour }];
    // 7 days: 12-hour partitions from 18:00, so the first runs to midnight.
    const p = plan({ now: t0 + 90 * minute, existing, retentionMs: 7 * day });
    expect(p.create.map(iso)[0]).toEqual(["2026-12-06T18:00:00.000Z", "2026-12-07T00:00:00.000Z"]);
  });

  it("makes at most a bounded number in one pass", () => {
    const p = plan({ retentionMs: hour, intervalMs: 10 * day });
    expect(p.create).toHaveLength(maxCreatesPerPass);
  });

  it("drops the ranges that end at or before now minus the retention, and only those", () => {
    const existing = [
      { start: t0 - day - 4 * hour, end: t0 - day - 2 * hour },
      { start: t0 - day - 2 * hour, end: t0 - day },
      { start: t0 - day, end: t0 - day + 2 * hour },
      { start: t0, end: t0 + 2 * hour },
    ];
    const p = plan({ existing });
    expect(p.drop).toEqual([existing[0], existing[1]]);
    // A later pruneNow (a test's clock) drops more; the ranges to make still follow the database's now, so
    // the range covering now is made again, empty.
    const later = plan({ existing, pruneNow: t0 + day + 2 * hour });
    expect(later.drop).toEqual(existing);
    expect(later.create.map(iso)).toEqual([["2026-12-06T16:00:00.000Z", "2026-12-06T18:00:00.000Z"]]);
  });

  it("under an hour's retention makes none, and still drops what expired", () => {
    const existing = [{ start: t0 - 4 * hour, end: t0 - 2 * hour }];
    const p = plan({ retentionMs: 30 * minute, existing });
    expect(p).toEqual({ widthMs: null, create: [], drop: existing });
  });
});
