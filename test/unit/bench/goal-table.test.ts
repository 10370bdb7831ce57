import { describe, expect, it } from "vitest";
import {
  goalRows,
  renderGoals,
  type DrainResults,
  type DrainSeries,
  type GoalInputs,
} from "../../../scripts/bench/lib/goal-table.js";

const series = (jobsPerSecond: number, extra: Partial<DrainSeries> = {}, duplicates = 0): DrainSeries => ({
  median: { jobsPerSecond, nodeCpuUsPerJob: 20, walBytesPerJob: 690 },
  runs: [{ duplicates }, { duplicates: 0 }],
  ...extra,
});

/** A drain at 20k and 100k jobs: pawl at `pawl` per size, the peers' ratios as given. */
function drain(
  pawl: { nodeUs: number; wal: number }[],
  graphile: number[],
  floor: number[],
  duplicates = 0,
): DrainResults {
  const out: DrainResults = {};
  ["100000", "20000"].forEach((n, i) => {
    const k = 1 - i; // keys given out of order: the table must still list 20,000 first
    out[n] = {
      pawl: {
        median: { jobsPerSecond: 1, nodeCpuUsPerJob: pawl[k]!.nodeUs, walBytesPerJob: pawl[k]!.wal },
        runs: [{ duplicates }],
        pawlRatio: 1,
      },
      "graphile-tuned": series(1, { pawlRatio: graphile[k]! }),
      floor: series(1, { pawlRatio: floor[k]! }),
    };
  });
  return out;
}

const row = (inputs: GoalInputs, goal: string) => {
  const r = goalRows(inputs).find((x) => x.goal === goal);
  if (!r) throw new Error(`no row ${goal}`);
  return r;
};

describe("goalRows", () => {
  const pawl = [
    { nodeUs: 36, wal: 693 },
    { nodeUs: 14, wal: 480 },
  ];

  it.each([
    // [goal, graphile ratios, floor ratios, measured, holds]
    ["rows kept: >= 1.25x graphile-worker tuned", [1.3, 1.25], [0.6, 0.6], "1.30x / 1.25x", true],
    ["rows kept: >= 1.25x graphile-worker tuned", [1.3, 1.24], [0.6, 0.6], "1.30x / 1.24x", false],
    ["rows kept: >= 0.6x the SQL floor", [1, 1], [0.46, 0.61], "0.46x / 0.61x", false],
    ["rows kept: >= 0.6x the SQL floor", [1, 1], [0.6, 0.61], "0.60x / 0.61x", true],
  ] as const)("%s with %j / %j", (goal, graphile, floor, measured, holds) => {
    expect(row({ kept: drain(pawl, [...graphile], [...floor]) }, goal)).toEqual({ goal, measured, holds });
  });

  it("judges node CPU and WAL at every size, the smallest first", () => {
    const kept = drain(pawl, [1, 1], [1, 1]);
    expect(row({ kept }, "rows kept: node CPU <= 15 us per job")).toMatchObject({
      measured: "36 / 14",
      holds: false,
    });
    expect(row({ kept }, "rows kept: WAL <= 500 B per job")).toMatchObject({
      measured: "693 / 480",
      holds: false,
    });
    const low = drain(
      [
        { nodeUs: 15, wal: 500 },
        { nodeUs: 12, wal: 410 },
      ],
      [1, 1],
      [1, 1],
    );
    expect(row({ kept: low }, "rows kept: node CPU <= 15 us per job").holds).toBe(true);
    expect(row({ kept: low }, "rows kept: WAL <= 500 B per job").holds).toBe(true);
  });

  it("holds rows without history to 1.5x and judges WAL on the kept drain only", () => {
    const notKept = drain(
      [
        { nodeUs: 10, wal: 400 },
        { nodeUs: 10, wal: 400 },
      ],
      [1.49, 1.6],
      [0.7, 0.7],
    );
    expect(row({ notKept }, "rows not kept: >= 1.5x graphile-worker tuned")).toMatchObject({ holds: false });
    expect(row({ notKept }, "rows kept: WAL <= 500 B per job")).toEqual({
      goal: "rows kept: WAL <= 500 B per job",
      measured: "not measured",
      holds: null,
    });
  });

  it("holds nothing for a peer that was not measured", () => {
    const kept = drain(pawl, [2, 2], [1, 1]);
    delete kept["20000"]!["graphile-tuned"];
    expect(row({ kept }, "rows kept: >= 1.25x graphile-worker tuned")).toMatchObject({
      measured: "- / 2.00x",
      holds: null,
    });
  });

  it.each([
    ["postgres", 2.99, true],
    ["postgres", 3.01, false],
    ["amqp", 3, true],
    ["hazelcast", 5, true],
    ["hazelcast", 5.07, false],
  ] as const)("pickup p50 of %s at %s ms holds: %s", (coordinator, p50, holds) => {
    const latency = [{ coordinator, p50, p99: 9 }];
    const target = coordinator === "hazelcast" ? 5 : 3;
    expect(row({ latency }, `pickup p50, ${coordinator}: <= ${target} ms`).holds).toBe(holds);
  });

  it("reads a part that was not measured as not measured, and holds nothing of it", () => {
    expect(row({ latency: [] }, "pickup p50, amqp: <= 3 ms")).toEqual({
      goal: "pickup p50, amqp: <= 3 ms",
      measured: "not measured",
      holds: null,
    });
    const flat = "flat: >= 0.9x the empty-table rate with 10,000,000 finished rows kept";
    expect(row({}, flat)).toEqual({ goal: flat, measured: "not measured", holds: null });
    expect(row({}, "pickup p99 at 50% of the maximum load, reported").measured).toBe("not measured");
  });

  it("judges the flat curves against pawl's empty-table point, not a peer's", () => {
    const point = (axis: string, system: string, x: number, jobsPerSecond: number) => ({
      axis,
      system,
      x,
      result: { jobsPerSecond, duplicates: 0 },
    });
    const curves = {
      points: [
        point("backlog", "pawl", 0, 20_000),
        point("backlog", "graphile-tuned", 0, 40_000),
        point("backlog", "pawl", 1_000_000, 18_000),
        point("finished", "pawl", 0, 20_000),
        point("finished", "pawl", 10_000_000, 17_700),
      ],
      load: [{ system: "pawl", result: { points: [{ load: 0.5, p99: 12.345, duplicates: 0 }] } }],
      idle: [
        {
          nodes: 1,
          coordinator: "none",
          result: { transactionsPerSecondPerNode: 3.3, dbCpuPctPerNode: 0.3 },
        },
        { nodes: 100, coordinator: "postgres", result: { skipped: "needs 122 connections" } },
      ],
    };
    expect(
      row({ curves }, "flat: >= 0.9x the empty-table rate with 1,000,000 due jobs behind the claim"),
    ).toMatchObject({
      measured: "0.90x",
      holds: true,
    });
    expect(
      row({ curves }, "flat: >= 0.9x the empty-table rate with 10,000,000 finished rows kept"),
    ).toMatchObject({
      measured: "0.89x", // 0.885
      holds: false,
    });
    expect(row({ curves }, "pickup p99 at 50% of the maximum load, reported").measured).toBe("pawl 12.35 ms");
    expect(row({ curves }, "idle cost per node at 1, 10, 100 nodes, reported").measured).toBe(
      "1 none 3.30 tx/s",
    );
  });

  it("counts a duplicate anywhere in the run against exactly once", () => {
    const clean = drain(pawl, [1, 1], [1, 1]);
    expect(row({ kept: clean, notKept: clean }, "every job succeeds exactly once")).toMatchObject({
      measured: "0 duplicates",
      holds: true,
    });
    const once = drain(pawl, [1, 1], [1, 1], 1);
    expect(row({ kept: clean, notKept: once }, "every job succeeds exactly once")).toMatchObject({
      measured: "2 duplicates", // one in each size's pawl run
      holds: false,
    });
  });

  it("renders a Markdown table with yes, no and - for reported figures", () => {
    const text = renderGoals([
      { goal: "a", measured: "1", holds: true },
      { goal: "b", measured: "2", holds: false },
      { goal: "c", measured: "3", holds: null },
    ]);
    expect(text.split("\n")).toEqual([
      "| goal | measured | holds |",
      "|------|---------:|------:|",
      "| a    |        1 |   yes |",
      "| b    |        2 |    no |",
      "| c    |        3 |     - |",
    ]);
  });
});
