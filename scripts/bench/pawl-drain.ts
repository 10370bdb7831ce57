/**
 * pawl's own throughput and latency measurements: drain N pre-inserted no-op jobs at a given
 * concurrency, and pickup latency of jobs enqueued one by one into an idle node (local submission).
 */
import pg from "pg";
// The compiled build, as users run it (npm run bench builds first).
import { createPawl } from "../../dist/src/index.js";

/** Result of a drain run. */
export interface DrainResult {
  jobs: number;
  seconds: number;
  jobsPerSecond: number;
  cpuMicrosPerJob: number;
}

/** Inserts `n` no-op jobs with one statement per 10,000 rows. */
export async function insertJobs(pool: pg.Pool, schema: string, n: number, type = "noop"): Promise<void> {
  for (let done = 0; done < n; done += 10_000) {
    const count = Math.min(10_000, n - done);
    await pool.query(
      `INSERT INTO "${schema}".scheduler_job_queue (type, payload, scheduled_time)
       SELECT $1, '{}'::jsonb, now() - interval '1 second' FROM generate_series(1, $2)`,
      [type, count],
    );
  }
}

/** Resets the schema's tables. */
export async function resetSchema(url: string, schema: string): Promise<void> {
  const setup = createPawl({ connectionString: url, schema });
  await setup.migrate();
  await setup.close();
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  await pool.query(`TRUNCATE "${schema}".scheduler_job_queue, "${schema}".scheduler_resource_permit`);
  await pool.query(`VACUUM ANALYZE "${schema}".scheduler_job_queue`);
  await pool.end();
}

/** Drains `jobs` pre-inserted no-op jobs at `concurrency`. */
export async function drain(
  url: string,
  schema: string,
  jobs: number,
  concurrency: number,
): Promise<DrainResult> {
  await resetSchema(url, schema);
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  await insertJobs(pool, schema, jobs);
  await pool.end();
  const node = createPawl({ connectionString: url, schema, concurrency, pollIntervalMs: 200 });
  node.register("noop", () => undefined);
  let done = 0;
  const finished = new Promise<void>((resolve) =>
    node.on("job:succeeded", () => {
      if (++done === jobs) resolve();
    }),
  );
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await node.start();
  await finished;
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  await node.close();
  return {
    jobs,
    seconds,
    jobsPerSecond: jobs / seconds,
    cpuMicrosPerJob: (cpu.user + cpu.system) / jobs,
  };
}

/** Pickup latency: enqueue into an idle node on the same process, measure enqueue -> handler start. */
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
