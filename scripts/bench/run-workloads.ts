/**
 * The per-system workloads of `npm run bench` (drain, mixed, pickup, enqueue): each measurement in a child
 * process (measure.ts), the systems interleaved within each run, every result added to the run's
 * {@link BenchResults}.
 */
import pg from "pg";
import type { BenchResults } from "./bench-results.js";
import { runChild } from "./lib/child.js";
import { loadAverage } from "./lib/common.js";
import { dec, int } from "./lib/table.js";
import type {
  DrainMeasurement,
  EnqueueMeasurement,
  MeasureInput,
  Measurement,
  PickupMeasurement,
} from "./measure.js";
import type { SystemName } from "./systems/types.js";

/** What to measure, from main.ts's flags. */
export interface WorkloadPlan {
  url: string;
  database: string;
  systems: SystemName[];
  jobsList: number[];
  runs: number;
  concurrency: number;
  workloads: { drain: boolean; pickup: boolean; mixed: boolean; enqueue: boolean };
  mixedJobs: number;
  pickup: { samples: number; warmup: number; gapMs: number };
  enqueue: { single: number; bulk: number; batch: number };
}

/** Waits until the database accepts connections again (another session may restart it). */
async function databaseUp(url: string, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const client = new pg.Client({ connectionString: url });
    try {
      await client.connect();
      await client.query("SELECT 1");
      return;
    } catch {
      if (Date.now() > deadline) return;
      await new Promise((r) => setTimeout(r, 1000));
    } finally {
      await client.end().catch(() => {});
    }
  }
}

/** Runs `plan`'s workloads, `plan.runs` times, into `results`; `progress` gets a line per step. */
export async function runWorkloads(
  plan: WorkloadPlan,
  results: BenchResults,
  progress: (line: string) => void,
): Promise<void> {
  const { url, database, systems, jobsList, runs, concurrency, workloads, mixedJobs } = plan;
  /**
   * Runs one measurement in a child process. On a shared machine a measurement can fail for reasons that
   * are not the system's (another session restarting PostgreSQL or terminating backends): it is retried
   * once, and a second failure is recorded and skipped, so one incident does not end an hour-long run.
   */
  const measure = async <T extends Measurement>(input: MeasureInput): Promise<T | null> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await runChild<T>("measure.ts", input, { database });
      } catch (error) {
        const what = `${input.kind} ${input.system}${input.kind === "drain" ? ` ${input.jobs}${input.failEvery ? " mixed" : ""}` : ""}`;
        const message = (error as Error).message.split("\n")[0];
        progress(`  ${what} failed (attempt ${attempt}): ${message}`);
        if (attempt >= 2) {
          results.failures.push(`${what}: ${message}`);
          return null;
        }
        await databaseUp(url);
      }
    }
  };

  for (
    let run = 1;
    run <= runs && (workloads.drain || workloads.mixed || workloads.pickup || workloads.enqueue);
    run++
  ) {
    // Systems are interleaved within each run, so a burst of load on the shared machine spreads over all
    // of them instead of landing on one system's runs.
    if (workloads.drain) {
      for (const jobs of jobsList) {
        for (const system of systems) {
          progress(`[run ${run}/${runs}] drain ${jobs} ${system} (load ${loadAverage()[0]})...`);
          const m = await measure<DrainMeasurement>({
            kind: "drain",
            system,
            url,
            jobs,
            concurrency,
            failEvery: 0,
          });
          if (!m) continue;
          ((results.drain[jobs] ??= {})[system] ??= { runs: [] }).runs.push(m);
          progress(
            `  ${int(m.jobsPerSecond)} jobs/s, ${dec(m.cpu.nodeUs, 0)} us node + ${dec(m.cpu.dbUs, 0)} us db per job`,
          );
        }
      }
    }
    if (workloads.mixed) {
      for (const system of systems) {
        progress(`[run ${run}/${runs}] mixed ${mixedJobs} ${system} (load ${loadAverage()[0]})...`);
        const m = await measure<DrainMeasurement>({
          kind: "drain",
          system,
          url,
          jobs: mixedJobs,
          concurrency,
          failEvery: 10,
        });
        if (!m) continue;
        (results.mixed[system] ??= { runs: [] }).runs.push(m);
        progress(`  ${int(m.jobsPerSecond)} jobs/s (first pass ${int(m.firstPassJobsPerSecond)})`);
      }
    }
    if (workloads.pickup) {
      for (const system of systems) {
        if (system === "floor") continue;
        progress(
          `[run ${run}/${runs}] pickup ${system}, ${plan.pickup.samples} samples (load ${loadAverage()[0]})...`,
        );
        const m = await measure<PickupMeasurement>({
          kind: "pickup",
          system,
          url,
          ...plan.pickup,
          concurrency,
        });
        if (!m) continue;
        (results.pickup[system] ??= { runs: [] }).runs.push(m);
        progress(`  p50 ${dec(m.p50)} ms, p99 ${dec(m.p99)} ms`);
      }
    }
    if (workloads.enqueue) {
      for (const system of systems) {
        progress(`[run ${run}/${runs}] enqueue ${system} (load ${loadAverage()[0]})...`);
        const m = await measure<EnqueueMeasurement>({
          kind: "enqueue",
          system,
          url,
          ...plan.enqueue,
        });
        if (!m) continue;
        (results.enqueue[system] ??= { runs: [] }).runs.push(m);
        progress(`  single ${int(m.single.jobsPerSecond)} jobs/s, bulk ${int(m.bulk.jobsPerSecond)} jobs/s`);
      }
    }
  }
}
