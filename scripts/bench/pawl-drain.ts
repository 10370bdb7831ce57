/**
 * pawl's drain and local pickup latency as plain in-process functions, for profiling
 * (`node --cpu-prof --import tsx ...` on a script that calls them) and for ad-hoc scripts. `npm run bench`
 * itself measures through measure.ts, one child process per measurement, with the same pawl settings.
 */
import pg from "pg";
// The compiled build, as users run it (npm run bench builds first).
import { createPawl } from "../../dist/src/index.js";
import { insertPawlJobs, resetPawlSchema } from "./systems/pawl.js";

/** Result of a drain run. */
export interface DrainResult {
  jobs: number;
  seconds: number;
  jobsPerSecond: number;
  cpuMicrosPerJob: number;
}

/** Inserts `n` runnable no-op jobs (payload `{ i }`) with one statement per 10,000 rows. */
export async function insertJobs(pool: pg.Pool, schema: string, n: number, type = "noop"): Promise<void> {
  await insertPawlJobs(pool, schema, 0, n, type);
}

/** Creates (migrates) and empties the schema's tables. */
export async function resetSchema(url: string, schema: string): Promise<void> {
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  try {
    await resetPawlSchema(url, schema, pool);
    await pool.query(`VACUUM ANALYZE "${schema}".scheduler_job_queue`);
  } finally {
    await pool.end();
  }
}

/** Drains `jobs` pre-inserted no-op jobs at `concurrency` (pawl's defaults otherwise). */
export async function drain(
  url: string,
  schema: string,
  jobs: number,
  concurrency: number,
): Promise<DrainResult> {
  await resetSchema(url, schema);
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  await insertJobs(pool, schema, jobs);
  await pool.query(`VACUUM ANALYZE "${schema}".scheduler_job_queue`);
  await pool.end();
  const node = createPawl({ connectionString: url, schema, concurrency });
  let done = 0;
  let finish: () => void = () => {};
  const finished = new Promise<void>((resolve) => (finish = resolve));
  node.register("noop", () => undefined);
  // Succeeded = the outcome is written, not just the handler returned.
  node.on("job:succeeded", () => {
    if (++done === jobs) finish();
  });
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await node.start();
  await finished;
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  await node.close();
  return { jobs, seconds, jobsPerSecond: jobs / seconds, cpuMicrosPerJob: (cpu.user + cpu.system) / jobs };
}

/** Pickup latency: enqueue into an idle node of the same process, enqueue call start -> handler start. */
export async function localLatency(
  url: string,
  schema: string,
  samples: number,
): Promise<{ p50: number; p99: number }> {
  await resetSchema(url, schema);
  const node = createPawl({ connectionString: url, schema, concurrency: 10, pollIntervalMs: 30_000 });
  let started: ((at: number) => void) | null = null;
  node.register("ping", () => {
    started?.(performance.now());
  });
  await node.start();
  const latencies: number[] = [];
  for (let i = 0; i < samples; i++) {
    const handlerStarted = new Promise<number>((resolve) => (started = resolve));
    const t0 = performance.now();
    await node.enqueue("ping", {});
    latencies.push((await handlerStarted) - t0);
  }
  await node.close();
  latencies.sort((a, b) => a - b);
  const at = (q: number) =>
    latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN;
  return { p50: at(0.5), p99: at(0.99) };
}
