/**
 * What one `npm run bench` run collects (main.ts fills it, report.ts prints it, `--json-out` writes it), and
 * the summary step between: each system's medians over its runs and its ratio to pawl.
 */
import { median, round } from "./lib/common.js";
import type { DrainMeasurement, EnqueueMeasurement, PickupMeasurement } from "./measure.js";
import type { CoordinatorLatencyResult } from "./latency/coordinator-latency.js";
import type { SoakResult } from "./soak-drain.js";
import type { SystemName } from "./systems/types.js";

/** One system's measurements of one workload; {@link summarise} adds its medians and ratios. */
export interface SystemSeries<M> {
  runs: M[];
}

/** A series after {@link summarise}: its medians, and its ratios to pawl under the names below. */
export type Summarised<M> = SystemSeries<M> & Record<string, unknown>;

/** The run's settings and surroundings, printed at the top of the report. */
export interface BenchMeta {
  date: string;
  node: string;
  postgres: string;
  cpus: string;
  versions: { pawl: string; "graphile-worker": string; "pg-boss": string };
  database: string;
  loadAverage: { start: number[]; end: number[] };
  settings: { concurrency: number; runs: number; jobs: number[]; mixedJobs: number; systems: SystemName[] };
}

/** Everything one run measured, keyed by jobs then system (drain) or by system. */
export interface BenchResults {
  meta: BenchMeta;
  drain: Record<string, Record<string, Summarised<DrainMeasurement>>>;
  mixed: Record<string, Summarised<DrainMeasurement>>;
  pickup: Record<string, Summarised<PickupMeasurement>>;
  enqueue: Record<string, Summarised<EnqueueMeasurement>>;
  coordinatorLatency: CoordinatorLatencyResult[];
  soak: SoakResult | null;
  /** Measurements that failed twice (skipped; the medians use the runs that succeeded). */
  failures: string[];
}

/** An empty result set for a run with these settings. */
export function newBenchResults(meta: BenchMeta): BenchResults {
  return {
    meta,
    drain: {},
    mixed: {},
    pickup: {},
    enqueue: {},
    coordinatorLatency: [],
    soak: null,
    failures: [],
  };
}

const med = <M>(series: SystemSeries<M> | undefined, f: (m: M) => number | undefined): number =>
  series ? median(series.runs.map(f).filter((x): x is number => x !== undefined)) : NaN;

/**
 * Adds to every series its `median` (of each figure over its runs) and pawl's ratio to it (`pawlRatio`
 * and the like: pawl's median divided by the system's, so above 1 means pawl is faster). In place.
 */
export function summarise(results: BenchResults): void {
  for (const byJobs of Object.values(results.drain)) {
    const pawl = med(byJobs.pawl, (m) => m.jobsPerSecond);
    for (const s of Object.values(byJobs)) {
      const median = {
        jobsPerSecond: round(med(s, (m) => m.jobsPerSecond)),
        nodeCpuUsPerJob: round(
          med(s, (m) => m.cpu.nodeUs),
          1,
        ),
        dbCpuUsPerJob: round(
          med(s, (m) => m.cpu.dbUs),
          1,
        ),
        otherLoadPct: round(med(s, (m) => m.cpu.otherLoadPct)),
        xactsPerJob: round(
          med(s, (m) => m.xactsPerJob),
          3,
        ),
        walBytesPerJob: round(med(s, (m) => m.walBytesPerJob)),
      };
      Object.assign(s, { median, pawlRatio: round(pawl / median.jobsPerSecond, 2) });
    }
  }
  {
    const pawl = med(results.mixed.pawl, (m) => m.firstPassJobsPerSecond);
    const pawlAll = med(results.mixed.pawl, (m) => m.jobsPerSecond);
    for (const s of Object.values(results.mixed)) {
      const median = {
        jobsPerSecond: round(med(s, (m) => m.jobsPerSecond)),
        firstPassJobsPerSecond: round(med(s, (m) => m.firstPassJobsPerSecond)),
        nodeCpuUsPerJob: round(
          med(s, (m) => m.cpu.nodeUs),
          1,
        ),
        dbCpuUsPerJob: round(
          med(s, (m) => m.cpu.dbUs),
          1,
        ),
      };
      Object.assign(s, {
        median,
        pawlRatioFirstPass: round(pawl / median.firstPassJobsPerSecond, 2),
        pawlRatio: round(pawlAll / median.jobsPerSecond, 2),
      });
    }
  }
  {
    const pawl = med(results.pickup.pawl, (m) => m.p50);
    for (const s of Object.values(results.pickup)) {
      const median = {
        p50: round(
          med(s, (m) => m.p50),
          2,
        ),
        p99: round(
          med(s, (m) => m.p99),
          2,
        ),
        max: round(
          med(s, (m) => m.max),
          2,
        ),
        enqueueCallP50: round(
          med(s, (m) => m.enqueueCallP50),
          2,
        ),
      };
      Object.assign(s, { median, pawlP50Ratio: round(pawl / median.p50, 3) });
    }
  }
  {
    const single = med(results.enqueue.pawl, (m) => m.single.jobsPerSecond);
    const bulk = med(results.enqueue.pawl, (m) => m.bulk.jobsPerSecond);
    for (const s of Object.values(results.enqueue)) {
      const median = {
        singleJobsPerSecond: round(med(s, (m) => m.single.jobsPerSecond)),
        singleCpuUsPerJob: round(
          med(s, (m) => m.single.cpu.nodeUs + m.single.cpu.dbUs),
          1,
        ),
        bulkJobsPerSecond: round(med(s, (m) => m.bulk.jobsPerSecond)),
        bulkCpuUsPerJob: round(
          med(s, (m) => m.bulk.cpu.nodeUs + m.bulk.cpu.dbUs),
          1,
        ),
      };
      Object.assign(s, {
        median,
        pawlRatioSingle: round(single / median.singleJobsPerSecond, 2),
        pawlRatioBulk: round(bulk / median.bulkJobsPerSecond, 2),
      });
    }
  }
}
