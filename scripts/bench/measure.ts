/**
 * One measurement of one system, in its own process (started by main.ts through lib/child.ts).
 *
 * - drain: reset, pre-insert N jobs, VACUUM ANALYZE, CHECKPOINT, then the window: start the workers, wait
 *   until every job has succeeded in a handler and the database shows none left, close the window. With
 *   `failEvery` (the mixed workload), every job whose number is a multiple of it fails its first attempt.
 *   The CHECKPOINT writes the pre-insert's dirty pages out before the window rather than inside it, and
 *   puts every system's window at the same point of the checkpoint cycle: the window's first change of
 *   each page carries the page's image, as in wal-per-job.ts.
 * - pickup: an idle worker (started, settled), then jobs enqueued one at a time; each sample is enqueue
 *   call start -> handler start, the next enqueue waits for the previous pickup plus a short gap.
 * - enqueue: single-job API, one call at a time; then bulk API, batches of `batch`. No worker runs.
 */
import pg from "pg";
import { childInput, childMain, closeWindow, openWindow } from "./lib/child.js";
import { perJob, type CpuPerJob } from "./lib/cpu-meter.js";
import {
  databaseName,
  deferred,
  msBetween,
  nowNs,
  sleep,
  summarize,
  waitUntil,
  walBytes,
  withTimeout,
} from "./lib/common.js";
import { loadSystem, PlannedFailure, type BenchSystem, type SystemName } from "./systems/types.js";

export type MeasureInput =
  | { kind: "drain"; system: SystemName; url: string; jobs: number; concurrency: number; failEvery: number }
  | {
      kind: "pickup";
      system: SystemName;
      url: string;
      samples: number;
      warmup: number;
      gapMs: number;
      concurrency: number;
    }
  | { kind: "enqueue"; system: SystemName; url: string; single: number; bulk: number; batch: number };

export interface DrainMeasurement {
  kind: "drain";
  jobs: number;
  seconds: number;
  jobsPerSecond: number;
  /** Mixed workload: seconds until every job had its first attempt (the failure path without the retry wait). */
  firstPassSeconds?: number;
  firstPassJobsPerSecond?: number;
  attempts: number;
  /** Successful executions of a job that had already succeeded (at-least-once duplicates). */
  duplicates: number;
  cpu: CpuPerJob;
  /** Transactions committed or rolled back in the bench database per job (pg_stat_database; approximate). */
  xactsPerJob: number;
  /**
   * WAL bytes written per job over the window (`pg_current_wal_lsn()` before and after). The LSN is the
   * server's, so another database's writes in the window count too: a quiet server is assumed, as for
   * "other load".
   */
  walBytesPerJob: number;
  diagnostics?: Record<string, unknown>;
}

export interface PickupMeasurement {
  kind: "pickup";
  samples: number;
  p50: number;
  /** Median duration of the enqueue call itself (ms): the part of the latency before any wakeup. */
  enqueueCallP50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

export interface EnqueueMeasurement {
  kind: "enqueue";
  single: { jobs: number; jobsPerSecond: number; cpu: CpuPerJob };
  bulk: { jobs: number; batch: number; jobsPerSecond: number; cpu: CpuPerJob };
}

export type Measurement = DrainMeasurement | PickupMeasurement | EnqueueMeasurement;

/** Transactions so far in the client's database. */
async function transactions(client: pg.Client): Promise<number> {
  const { rows } = await client.query<{ n: string }>(
    "SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = current_database()",
  );
  return Number(rows[0]!.n);
}

async function drain(
  system: BenchSystem,
  input: Extract<MeasureInput, { kind: "drain" }>,
): Promise<DrainMeasurement> {
  const n = input.jobs;
  await system.reset();
  await system.preinsert(0, n);
  await system.vacuum();
  const seen = new Uint8Array(n);
  const succeeded = new Uint8Array(n);
  let firstPass = 0;
  let done = 0;
  let attempts = 0;
  let duplicates = 0;
  let firstPassAt = 0n;
  const allSucceeded = deferred<void>();
  const failure = new PlannedFailure();
  const failEvery = input.failEvery;
  const handler = (i: number) => {
    attempts++;
    if (seen[i] === 0) {
      seen[i] = 1;
      if (++firstPass === n) firstPassAt = nowNs();
      if (failEvery > 0 && i % failEvery === 0) throw failure;
    }
    if (succeeded[i] === 1) {
      duplicates++;
      return;
    }
    succeeded[i] = 1;
    if (++done === n) allSucceeded.resolve();
  };

  const stats = new pg.Client({ connectionString: input.url });
  await stats.connect();
  // Best effort: CHECKPOINT needs superuser or pg_checkpoint; without it the window is as before.
  await stats.query("CHECKPOINT").catch(() => {});
  const xacts0 = await transactions(stats);
  const wal0 = await walBytes(stats);
  await openWindow(databaseName(input.url));
  const cpu0 = process.cpuUsage();
  const t0 = nowNs();
  const workers = await system.startWorkers({ concurrency: input.concurrency, handler, mode: "drain" });
  await withTimeout(allSucceeded.promise, 3_600_000, `${system.name}: ${n} jobs to succeed`).catch(
    (e: unknown) => {
      throw new Error(`${(e as Error).message} (succeeded ${done}, attempted ${firstPass})`);
    },
  );
  // Done means done in the database: outcomes written, not just handlers returned.
  await waitUntil(
    async () => (await system.remaining()) === 0,
    `${system.name}: the database to show every job completed`,
    {
      everyMs: 5,
      timeoutMs: 120_000,
    },
  );
  const t1 = nowNs();
  const node = process.cpuUsage(cpu0);
  const cpu = await closeWindow();
  const wal = await walBytes(stats);
  // Backends report their transaction counts when idle, at most about once a second.
  await sleep(1500);
  const xacts = (await transactions(stats)) - xacts0;
  await stats.end();
  const diagnostics = await workers.stop();
  await system.close();
  const seconds = msBetween(t0, t1) / 1000;
  return {
    kind: "drain",
    jobs: n,
    seconds,
    jobsPerSecond: n / seconds,
    ...(failEvery > 0
      ? {
          firstPassSeconds: msBetween(t0, firstPassAt) / 1000,
          firstPassJobsPerSecond: n / (msBetween(t0, firstPassAt) / 1000),
        }
      : {}),
    attempts,
    duplicates,
    cpu: perJob(cpu, node, n),
    xactsPerJob: xacts / n,
    walBytesPerJob: Number(wal - wal0) / n,
    ...(diagnostics ? { diagnostics } : {}),
  };
}

async function pickup(
  system: BenchSystem,
  input: Extract<MeasureInput, { kind: "pickup" }>,
): Promise<PickupMeasurement> {
  await system.reset();
  await system.vacuum();
  let waiting: { i: number; resolve: (at: bigint) => void } | null = null;
  const handler = (i: number) => {
    const at = nowNs();
    if (waiting && waiting.i === i) waiting.resolve(at);
  };
  const workers = await system.startWorkers({ concurrency: input.concurrency, handler, mode: "latency" });
  await sleep(500); // let the worker settle into idle (startup polls done, listeners connected)
  const samples: number[] = [];
  const calls: number[] = [];
  for (let k = 0; k < input.warmup + input.samples; k++) {
    const started = deferred<bigint>();
    waiting = { i: k, resolve: started.resolve };
    const t0 = nowNs();
    await system.enqueueOne(k);
    const t1 = nowNs();
    const at = await withTimeout(started.promise, 120_000, `${system.name}: pickup of sample ${k}`);
    if (k >= input.warmup) {
      samples.push(msBetween(t0, at));
      calls.push(msBetween(t0, t1));
    }
    await sleep(input.gapMs + Math.random() * system.pollPeriodMs);
  }
  await workers.stop();
  await system.close();
  return {
    kind: "pickup",
    samples: samples.length,
    ...summarize(samples),
    enqueueCallP50: summarize(calls).p50,
  };
}

async function enqueue(
  system: BenchSystem,
  input: Extract<MeasureInput, { kind: "enqueue" }>,
): Promise<EnqueueMeasurement> {
  const db = databaseName(input.url);
  await system.reset();
  // Warm up connections and prepared paths outside the window.
  for (let k = 0; k < 20; k++) await system.enqueueOne(-1 - k);
  await system.enqueueBulk(-1000, Math.min(input.batch, 100));
  await system.reset();

  await openWindow(db);
  let cpu0 = process.cpuUsage();
  let t0 = nowNs();
  for (let i = 0; i < input.single; i++) await system.enqueueOne(i);
  let seconds = msBetween(t0, nowNs()) / 1000;
  const singleNode = process.cpuUsage(cpu0);
  const singleCpu = await closeWindow();
  const single = {
    jobs: input.single,
    jobsPerSecond: input.single / seconds,
    cpu: perJob(singleCpu, singleNode, input.single),
  };

  await system.reset();
  await system.vacuum();
  await openWindow(db);
  cpu0 = process.cpuUsage();
  t0 = nowNs();
  for (let from = 0; from < input.bulk; from += input.batch) {
    await system.enqueueBulk(from, Math.min(input.batch, input.bulk - from));
  }
  seconds = msBetween(t0, nowNs()) / 1000;
  const bulkNode = process.cpuUsage(cpu0);
  const bulkCpu = await closeWindow();
  await system.close();
  return {
    kind: "enqueue",
    single,
    bulk: {
      jobs: input.bulk,
      batch: input.batch,
      jobsPerSecond: input.bulk / seconds,
      cpu: perJob(bulkCpu, bulkNode, input.bulk),
    },
  };
}

childMain(async (): Promise<Measurement> => {
  const input = childInput<MeasureInput>();
  const system = await loadSystem(input.system, { url: input.url });
  switch (input.kind) {
    case "drain":
      return drain(system, input);
    case "pickup":
      return pickup(system, input);
    case "enqueue":
      return enqueue(system, input);
  }
});
