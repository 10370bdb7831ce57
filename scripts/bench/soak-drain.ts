/**
 * `--soak-drain`: one pawl node drains `jobs` no-op jobs (1,000,000 by default) fed in chunks while it runs:
 * two chunks are inserted up front, and a feeder inserts the next chunk whenever the backlog falls below
 * two chunks, so inserts and claims compete as in production. Memory (heap used, RSS) is sampled every
 * second; the heap after a forced GC is also taken at every tenth of the run, which shows whether
 * retained memory grows (a leak) rather than garbage waiting for collection. Runs with --expose-gc.
 */
import pg from "pg";
import { createPawl } from "../../dist/src/index.js";
import { childInput, childMain } from "./lib/child.js";
import { nowNs, msBetween, sleep, waitUntil } from "./lib/common.js";
import { insertPawlJobs, resetPawlSchema } from "./systems/pawl.js";

export const SOAK_SCHEMA = "bench_pawl_soak";

export interface SoakInput {
  url: string;
  jobs: number;
  chunk: number;
  concurrency: number;
}

interface Mem {
  heapUsedMB: number;
  rssMB: number;
}

export interface SoakResult {
  jobs: number;
  seconds: number;
  jobsPerSecond: number;
  memory: {
    /** Right after start() (after a GC before it). */
    start: Mem;
    /** The highest 1 s sample of each. */
    peak: Mem;
    /** When the last job completed, before any GC. */
    end: Mem;
    /** After a forced GC at the end (retained memory). */
    endAfterGc: Mem;
    /** Heap used after a forced GC at each tenth of the run (MB). */
    heapAfterGcByTenth: number[];
    samples: number;
  };
  /** Throughput of each tenth of the run (jobs/s): a falling series means claims get slower as the table grows. */
  jobsPerSecondByTenth: number[];
  table: { rows: number; totalMB: number };
  diagnostics: Record<string, unknown>;
}

const mb = (bytes: number) => Math.round((bytes / 1048576) * 10) / 10;
const mem = (): Mem => {
  const m = process.memoryUsage();
  return { heapUsedMB: mb(m.heapUsed), rssMB: mb(m.rss) };
};
const gc = (): void => (globalThis as { gc?: () => void }).gc?.();

childMain(async (): Promise<SoakResult> => {
  const input = childInput<SoakInput>();
  const admin = new pg.Pool({ connectionString: input.url, max: 2 });
  await resetPawlSchema(input.url, SOAK_SCHEMA, admin);
  let inserted = Math.min(input.jobs, 2 * input.chunk);
  await insertPawlJobs(admin, SOAK_SCHEMA, 0, inserted);
  await admin.query(`VACUUM ANALYZE "${SOAK_SCHEMA}".scheduler_job_queue`);

  const node = createPawl({
    connectionString: input.url,
    schema: SOAK_SCHEMA,
    concurrency: input.concurrency,
  });
  let done = 0;
  node.register("noop", () => {
    done++;
  });
  const diag = { claims: 0, claimMsMax: 0, claimMsTotal: 0, errors: [] as string[] };
  node.on("claim", (e) => {
    diag.claims++;
    diag.claimMsTotal += e.durationMs;
    diag.claimMsMax = Math.max(diag.claimMsMax, e.durationMs);
  });
  node.on("error", (e) => {
    if (diag.errors.length < 10) diag.errors.push(`${e.where}: ${e.error.message}`);
  });

  gc();
  const t0 = nowNs();
  await node.start();
  const start = mem();
  const peak = { ...start };
  let samples = 0;
  const sampler = setInterval(() => {
    const m = mem();
    samples++;
    peak.heapUsedMB = Math.max(peak.heapUsedMB, m.heapUsedMB);
    peak.rssMB = Math.max(peak.rssMB, m.rssMB);
  }, 1000);

  // The feeder: keep the backlog between one and two chunks.
  let feeding = true;
  const feeder = (async () => {
    while (feeding && inserted < input.jobs) {
      if (inserted - done < input.chunk) {
        const n = Math.min(input.chunk, input.jobs - inserted);
        await insertPawlJobs(admin, SOAK_SCHEMA, inserted, n);
        inserted += n;
      } else {
        await sleep(100);
      }
    }
  })();

  // Milestones: every tenth, a GC'd heap reading and the tenth's throughput.
  const heapAfterGcByTenth: number[] = [];
  const jobsPerSecondByTenth: number[] = [];
  let lastAt = t0;
  for (let tenth = 1; tenth <= 10; tenth++) {
    const target = Math.floor((input.jobs * tenth) / 10);
    await waitUntil(() => done >= target, `${target} jobs done`, { everyMs: 20, timeoutMs: 3_600_000 });
    const at = nowNs();
    jobsPerSecondByTenth.push(
      Math.round((target - Math.floor((input.jobs * (tenth - 1)) / 10)) / (msBetween(lastAt, at) / 1000)),
    );
    lastAt = at;
    if (tenth < 10) {
      gc();
      heapAfterGcByTenth.push(mem().heapUsedMB);
    }
  }
  await waitUntil(
    async () => {
      const { rows } = await admin.query<{ n: string }>(
        `SELECT count(*) AS n FROM "${SOAK_SCHEMA}".scheduler_job_queue WHERE status <> 'SUCCEEDED'`,
      );
      return Number(rows[0]!.n) === 0;
    },
    "the database to show every job completed",
    { everyMs: 20, timeoutMs: 120_000 },
  );
  const seconds = msBetween(t0, nowNs()) / 1000;
  clearInterval(sampler);
  feeding = false;
  await feeder;
  const end = mem();
  peak.heapUsedMB = Math.max(peak.heapUsedMB, end.heapUsedMB);
  peak.rssMB = Math.max(peak.rssMB, end.rssMB);
  gc();
  const endAfterGc = mem();
  heapAfterGcByTenth.push(endAfterGc.heapUsedMB);
  await node.close();
  const { rows } = await admin.query<{ rows: string; bytes: string }>(
    `SELECT count(*) AS rows, pg_total_relation_size('"${SOAK_SCHEMA}".scheduler_job_queue') AS bytes
     FROM "${SOAK_SCHEMA}".scheduler_job_queue`,
  );
  await admin.end();
  return {
    jobs: input.jobs,
    seconds,
    jobsPerSecond: input.jobs / seconds,
    memory: { start, peak, end, endAfterGc, heapAfterGcByTenth, samples },
    jobsPerSecondByTenth,
    table: { rows: Number(rows[0]!.rows), totalMB: mb(Number(rows[0]!.bytes)) },
    diagnostics: {
      claims: diag.claims,
      claimMsMean: diag.claims ? +(diag.claimMsTotal / diag.claims).toFixed(2) : 0,
      claimMsMax: +diag.claimMsMax.toFixed(2),
      ...(diag.errors.length ? { errors: diag.errors } : {}),
    },
  };
});
