/**
 * Pickup under load (issue 28), one system in its own process (started by curves.ts, axis `load`):
 *
 * 1. The maximum: `maxJobs` pre-inserted no-op jobs drained at `concurrency` slots, timed.
 * 2. For each share of that maximum (for example 0.25, 0.5, 0.75): a fresh node, then a producer in the
 *    same process that enqueues through the system's bulk API every `tickMs`, as many jobs as keep the
 *    offered rate at that share, for `seconds`. A job's pickup is its enqueue call's start to its
 *    handler's start; the first `warmupSeconds` of jobs are not sampled (a node that starts into a
 *    stream of 16,000 jobs/s took about 2 s to catch up with it here; that start is not the steady state
 *    this measures). The point ends when every offered job has run.
 *
 * The producer shares the process and the database with the workers, as an embedded producer does, so
 * the enqueues are part of the load: the achieved rate is reported beside the offered one. Every job
 * that ran twice is counted, never hidden.
 */
import { childInput, childMain, closeWindow, openWindow } from "./lib/child.js";
import { perJob } from "./lib/cpu-meter.js";
import { databaseName, deferred, msBetween, nowNs, sleep, summarize, withTimeout } from "./lib/common.js";
import { loadSystem, type BenchSystem, type SystemName } from "./systems/types.js";

/** What the child is asked. */
export interface LoadedPickupInput {
  system: SystemName;
  url: string;
  concurrency: number;
  /** Jobs of the drain that finds the maximum. */
  maxJobs: number;
  /** Shares of the maximum to offer, each in (0, 1]. */
  loads: number[];
  /** How long each share is offered, warm-up included. */
  seconds: number;
  /** The first seconds of each share, not sampled. */
  warmupSeconds: number;
  tickMs: number;
}

/** One offered share. */
export interface LoadedPickupPoint {
  load: number;
  offeredPerSecond: number;
  /** Jobs run per second over the offered period and the tail that drained after it. */
  achievedPerSecond: number;
  samples: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  duplicates: number;
  /** CPU of this process (producer and workers) and of the database, µs per job. */
  nodeUs: number;
  dbUs: number;
  otherLoadPct: number;
}

/** The child's result. */
export interface LoadedPickupResult {
  maxPerSecond: number;
  points: LoadedPickupPoint[];
}

async function maximum(system: BenchSystem, input: LoadedPickupInput): Promise<number> {
  await system.reset();
  await system.preinsert(0, input.maxJobs);
  await system.vacuum();
  let done = 0;
  const all = deferred<void>();
  const t0 = nowNs();
  const workers = await system.startWorkers({
    concurrency: input.concurrency,
    mode: "drain",
    handler: () => {
      if (++done === input.maxJobs) all.resolve();
    },
  });
  await withTimeout(all.promise, 600_000, `${system.name}: the maximum's drain`);
  const seconds = msBetween(t0, nowNs()) / 1000;
  await workers.stop();
  return input.maxJobs / seconds;
}

async function offer(system: BenchSystem, input: LoadedPickupInput, load: number, max: number) {
  await system.reset();
  await system.vacuum();
  const rate = load * max;
  const total = Math.ceil(rate * input.seconds);
  const warmup = Math.ceil(rate * input.warmupSeconds);
  const enqueuedAt = new Array<bigint>(total);
  const pickup = new Float64Array(total);
  const ran = new Uint8Array(total);
  let done = 0;
  let duplicates = 0;
  const all = deferred<void>();
  const workers = await system.startWorkers({
    concurrency: input.concurrency,
    mode: "drain",
    handler: (i) => {
      if (ran[i] === 1) {
        duplicates++;
        return;
      }
      ran[i] = 1;
      pickup[i] = msBetween(enqueuedAt[i] as bigint, nowNs());
      if (++done === total) all.resolve();
    },
  });
  await sleep(500); // startup polls done, the node idle
  await openWindow(databaseName(input.url));
  const cpu0 = process.cpuUsage();
  const t0 = nowNs();
  let sent = 0;
  while (sent < total) {
    const due = Math.min(total, Math.floor((rate * msBetween(t0, nowNs())) / 1000));
    if (due > sent) {
      const at = nowNs();
      for (let i = sent; i < due; i++) enqueuedAt[i] = at;
      const from = sent;
      sent = due;
      await system.enqueueBulk(from, due - from);
    }
    await sleep(input.tickMs);
  }
  await withTimeout(all.promise, 600_000, `${system.name}: the offered jobs to run`);
  const seconds = msBetween(t0, nowNs()) / 1000;
  const node = process.cpuUsage(cpu0);
  const cpu = await closeWindow();
  await workers.stop();
  const samples = Array.from(pickup.subarray(warmup));
  const { p50, p90, p99, max: worst } = summarize(samples);
  return {
    load,
    offeredPerSecond: rate,
    achievedPerSecond: total / seconds,
    samples: samples.length,
    p50,
    p90,
    p99,
    max: worst,
    duplicates,
    ...perJob(cpu, node, total),
  } satisfies LoadedPickupPoint;
}

childMain(async (): Promise<LoadedPickupResult> => {
  const input = childInput<LoadedPickupInput>();
  const system = await loadSystem(input.system, { url: input.url });
  try {
    const max = await maximum(system, input);
    process.stderr.write(`  ${input.system}: maximum ${Math.round(max)} jobs/s\n`);
    const points: LoadedPickupPoint[] = [];
    for (const load of input.loads) {
      const t = Date.now();
      points.push(await offer(system, input, load, max));
      process.stderr.write(`  ${input.system}: ${load} of it in ${Date.now() - t} ms\n`);
    }
    return { maxPerSecond: max, points };
  } finally {
    await system.close();
  }
});
