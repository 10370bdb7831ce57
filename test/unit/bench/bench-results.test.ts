import { describe, expect, it } from "vitest";
import { newBenchResults, summarise, type BenchMeta } from "../../../scripts/bench/bench-results.js";
import type { DrainMeasurement } from "../../../scripts/bench/measure.js";

const meta: BenchMeta = {
  date: "2026-12-07T00:00:00.000Z",
  node: "v20",
  postgres: "15",
  cpus: "2 x test",
  versions: { pawl: "0", "graphile-worker": "0", "pg-boss": "0" },
  database: "bench",
  loadAverage: { start: [0], end: [0] },
  settings: { concurrency: 10, runs: 3, jobs: [20_000], mixedJobs: 20_000, systems: ["pawl", "floor"] },
};

/** A drain measurement with these figures (the rest fixed). */
function drain(jobsPerSecond: number, nodeUs: number, walBytesPerJob: number): DrainMeasurement {
  return {
    kind: "drain",
    jobs: 20_000,
    seconds: 20_000 / jobsPerSecond,
    jobsPerSecond,
    attempts: 20_000,
    duplicates: 0,
    cpu: { nodeUs, dbUs: 10, otherLoadPct: 1 },
    xactsPerJob: 0.005,
    walBytesPerJob,
  } as DrainMeasurement;
}

describe("summarise", () => {
  it.each([
    // pawl's runs, the floor's runs, pawl's median jobs/s, the floor's, pawl's ratio to the floor
    { pawl: [10, 30, 20], floor: [40, 40, 40], pawlMedian: 20, floorMedian: 40, ratio: 0.5 },
    // An even count takes the mean of the middle two; a lone slow run does not move it.
    { pawl: [30, 10, 20, 40], floor: [25, 1, 25, 25], pawlMedian: 25, floorMedian: 25, ratio: 1 },
  ])("medians $pawl and $floor, ratio $ratio", ({ pawl, floor, pawlMedian, floorMedian, ratio }) => {
    const results = newBenchResults(meta);
    results.drain["20000"] = {
      pawl: { runs: pawl.map((r) => drain(r, 20, 690)) },
      floor: { runs: floor.map((r) => drain(r, 7, 730)) },
    };
    summarise(results);
    const byJobs = results.drain["20000"]!;
    expect(byJobs.pawl!.median).toMatchObject({
      jobsPerSecond: pawlMedian,
      nodeCpuUsPerJob: 20,
      walBytesPerJob: 690,
    });
    expect(byJobs.floor!.median).toMatchObject({
      jobsPerSecond: floorMedian,
      nodeCpuUsPerJob: 7,
      walBytesPerJob: 730,
    });
    expect(byJobs.pawl!.pawlRatio).toBe(1);
    expect(byJobs.floor!.pawlRatio).toBe(ratio);
  });

  it("gives no ratio when pawl did not run (NaN, which the report prints as a dash)", () => {
    const results = newBenchResults(meta);
    results.drain["20000"] = { floor: { runs: [drain(40, 7, 730)] } };
    summarise(results);
    expect(results.drain["20000"]!.floor!.pawlRatio).toBeNaN();
  });
});
