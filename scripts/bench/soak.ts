/**
 * `--soak` (issue 44): one pawl node under a steady mix, as a long-lived service runs it, reported per
 * window (30 s by default). The mix: `rate` jobs/s enqueued in 10 batches a second; 5% fail their first
 * attempt and succeed on the retry; 3% are enqueued one by one and awaited with `waitFor`; 10% carry one
 * of `keys` concurrency keys with `concurrencyLimit: 2`; a recurring job fires every second.
 *
 * Per window: pickup p50/p99 (handler start minus enqueue, first attempts; p99 of the keyed ones too),
 * jobs run, heap used after a forced GC, the live table's size and dead tuples, and the slowest statements: PostgreSQL's own log
 * (`log_min_duration_statement`, on a cluster the bench started: soak-run.ts) when there is one, and
 * always the claim statements as the node times them (its `claim-statement` event; a release without
 * that event reports its polls' claim time instead).
 *
 * At the end the producer stops and the node drains; then every job must have succeeded exactly once
 * (handler successes counted per job, and the finished table counted) and every `waitFor` returned.
 *
 * `SOAK_NODE_OPTIONS` (JSON, optional) is merged into the node's options, to try a setting under the same
 * load (`'{"coordinator":"none"}'`, `'{"leaseAuditIntervalMs":3600000}'`).
 *
 * The node is loaded from `dist` (a path to a built pawl's dist/src/index.js), so the same soak runs
 * against an older build: the "before" of docs/benchmarks.md.
 */
import { readFileSync, statSync } from "node:fs";
import { pathToFileURL } from "node:url";
import pg from "pg";
import type { createPawl as CreatePawl } from "../../dist/src/index.js";
import { childInput, childMain } from "./lib/child.js";
import { quantile, sleep } from "./lib/common.js";
import { parseSlowLog, type SlowStatement } from "./soak-log.js";

export const SOAK_SCHEMA = "bench_pawl_soak";

/** What the soak child is given. */
export interface SoakInput {
  url: string;
  minutes: number;
  rate: number;
  keys: number;
  concurrency: number;
  windowSeconds: number;
  /** The server's log file, when the bench started the server (slow statements are parsed from it). */
  logFile: string | null;
  /** A built pawl's dist/src/index.js; null: this checkout's. */
  dist: string | null;
}

/** One window of the run. */
export interface SoakWindow {
  /** Seconds since the start, at the window's end. */
  at: number;
  pickupP50: number;
  pickupP99: number;
  /** Pickup p99 of the keyed jobs alone (absent in runs saved before it was measured). */
  keyedP99?: number;
  pickups: number;
  jobsRun: number;
  heapAfterGcMB: number;
  tableMB: number;
  liveTuples: number;
  deadTuples: number;
  /** Statements PostgreSQL logged over its threshold in this window (null: no log read). */
  loggedSlow: { over100: number; over500: number; top: SlowStatement[] } | null;
  /** Claim statements as the node timed them: the slowest, and how many took over 100 and 500 ms. */
  claims: { count: number; maxMs: number; over100: number; over500: number; timedOut: number };
}

/** What the soak reports. */
export interface SoakResult {
  input: Omit<SoakInput, "url">;
  windows: SoakWindow[];
  enqueued: number;
  succeeded: number;
  duplicates: number;
  missing: number;
  finishedRows: number;
  waitFor: { called: number; returned: number; failed: number };
  ticks: number;
  heapGrowthMB: number;
  errors: string[];
}

type Payload = { i: number; t: number; f?: 1; k?: 1 };

const mb = (bytes: number) => Math.round((bytes / 1048576) * 10) / 10;
const gc = (): void => (globalThis as { gc?: () => void }).gc?.();
const heap = (): number => mb(process.memoryUsage().heapUsed);

childMain(async (): Promise<SoakResult> => {
  const input = childInput<SoakInput>();
  const distUrl = input.dist ? pathToFileURL(input.dist).href : "../../dist/src/index.js";
  const { createPawl } = (await import(distUrl)) as { createPawl: typeof CreatePawl };
  const admin = new pg.Pool({ connectionString: input.url, max: 2 });
  await admin.query(`DROP SCHEMA IF EXISTS "${SOAK_SCHEMA}" CASCADE`);
  const setup = createPawl({ connectionString: input.url, schema: SOAK_SCHEMA });
  await setup.migrate();
  await setup.close();

  const capacity = Math.ceil(input.rate * input.minutes * 60 * 1.2) + 1000;
  const runs = new Uint8Array(capacity);
  const errors: string[] = [];
  const node = createPawl({
    connectionString: input.url,
    schema: SOAK_SCHEMA,
    concurrency: input.concurrency,
    ...(JSON.parse(process.env.SOAK_NODE_OPTIONS ?? "{}") as object),
  });
  let pickups: number[] = [];
  let keyedPickups: number[] = [];
  let jobsRun = 0;
  let ticks = 0;
  node.register(
    "soak",
    (p: Payload, ctx: { attempt: number }) => {
      if (ctx.attempt === 1) pickups.push(Date.now() - p.t);
      if (ctx.attempt === 1 && p.k === 1) keyedPickups.push(Date.now() - p.t);
      if (p.f === 1 && ctx.attempt === 1) throw new Error("fails once on purpose");
      jobsRun++;
      if (p.i < capacity) runs[p.i] = (runs[p.i] as number) + 1;
    },
    { retry: { baseMs: 1000, factor: 1, jitter: 0 } },
  );
  node.register("soak-tick", () => {
    ticks++;
  });
  let claims = { count: 0, maxMs: 0, over100: 0, over500: 0, timedOut: 0 };
  const onClaim = (ms: number, timedOut: boolean) => {
    claims.count++;
    claims.maxMs = Math.max(claims.maxMs, ms);
    if (ms > 100) claims.over100++;
    if (ms > 500) claims.over500++;
    if (timedOut) claims.timedOut++;
  };
  const on = node.on as unknown as (name: string, fn: (e: Record<string, unknown>) => void) => void;
  let statementEvents = false;
  try {
    on("claim-statement", (e) => {
      statementEvents = true;
      onClaim(e.durationMs as number, e.outcome === "timeout");
    });
  } catch {
    // A release without the event: the polls' claim time stands in below.
  }
  node.on("claim", (e) => {
    if (!statementEvents) onClaim(e.durationMs, false);
  });
  node.on("error", (e) => {
    if (errors.length < 20) errors.push(`${e.where}: ${e.error.message}`);
  });

  await node.start();
  await node.schedule("soak-tick", "* * * * * *", {}, { type: "soak-tick" });
  gc();
  const heapStart = heap();
  const t0 = Date.now();
  const endAt = t0 + input.minutes * 60_000;
  let enqueued = 0;
  const waits = { called: 0, returned: 0, failed: 0 };
  const pendingWaits: Promise<void>[] = [];
  const item = (): { type: "soak"; payload: Payload; concurrencyKey?: string; concurrencyLimit?: number } => {
    const i = enqueued++;
    const r = Math.random();
    const payload: Payload = { i, t: Date.now(), ...(r < 0.05 ? { f: 1 as const } : {}) };
    if (Math.random() < 0.1) {
      return {
        type: "soak",
        payload: { ...payload, k: 1 },
        concurrencyKey: `key-${Math.floor(Math.random() * input.keys)}`,
        concurrencyLimit: 2,
      };
    }
    return { type: "soak", payload };
  };
  // The producer: 10 batches a second, each catching up to `rate` x elapsed, so a slow enqueue does not
  // lower the offered rate.
  const producer = (async () => {
    while (Date.now() < endAt) {
      const due = Math.floor(((Date.now() - t0) / 1000) * input.rate) - enqueued;
      if (due > 0) {
        const batch = [];
        for (let k = 0; k < due; k++) {
          if (Math.random() < 0.03) {
            const one = item();
            waits.called++;
            pendingWaits.push(
              node
                .enqueue(one.type, one.payload, {
                  ...(one.concurrencyKey ? { concurrencyKey: one.concurrencyKey, concurrencyLimit: 2 } : {}),
                })
                .then((job) => node.waitFor(job, { timeoutMs: 600_000 }))
                .then(
                  () => void waits.returned++,
                  (error: unknown) => {
                    waits.failed++;
                    if (errors.length < 20) errors.push(`waitFor: ${String(error)}`);
                  },
                ),
            );
          } else {
            batch.push(item());
          }
        }
        try {
          await node.enqueueMany(batch as never);
        } catch (error) {
          if (errors.length < 20) errors.push(`enqueueMany: ${String(error)}`);
        }
      }
      await sleep(100);
    }
  })();

  const windows: SoakWindow[] = [];
  let logOffset = input.logFile ? statSync(input.logFile).size : 0;
  for (let w = 1; t0 + w * input.windowSeconds * 1000 <= endAt + 10; w++) {
    await sleep(Math.max(0, t0 + w * input.windowSeconds * 1000 - Date.now()));
    const p = pickups;
    pickups = [];
    const kp = keyedPickups;
    keyedPickups = [];
    const c = claims;
    claims = { count: 0, maxMs: 0, over100: 0, over500: 0, timedOut: 0 };
    const ran = jobsRun;
    jobsRun = 0;
    gc();
    const { rows } = await admin.query<{ bytes: string; live: string; dead: string }>(
      `SELECT pg_total_relation_size(relid) AS bytes, n_live_tup AS live, n_dead_tup AS dead
       FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = 'scheduler_job_queue'`,
      [SOAK_SCHEMA],
    );
    let loggedSlow: SoakWindow["loggedSlow"] = null;
    if (input.logFile) {
      const text = readFileSync(input.logFile).subarray(logOffset).toString("utf8");
      logOffset += Buffer.byteLength(text);
      loggedSlow = parseSlowLog(text);
    }
    const win: SoakWindow = {
      at: Math.round((Date.now() - t0) / 1000),
      pickupP50: Math.round(quantile(p, 0.5)),
      pickupP99: Math.round(quantile(p, 0.99)),
      keyedP99: Math.round(quantile(kp, 0.99)),
      pickups: p.length,
      jobsRun: ran,
      heapAfterGcMB: heap(),
      tableMB: mb(Number(rows[0]?.bytes ?? 0)),
      liveTuples: Number(rows[0]?.live ?? 0),
      deadTuples: Number(rows[0]?.dead ?? 0),
      loggedSlow,
      claims: { ...c, maxMs: Math.round(c.maxMs) },
    };
    windows.push(win);
    console.log(JSON.stringify({ window: win }));
  }
  await producer;
  // Drain: every enqueued job has run (retries included) and every waitFor has returned.
  const drainBy = Date.now() + 180_000;
  const succeeded = () => runs.reduce((n, x, i) => (i < enqueued && x > 0 ? n + 1 : n), 0);
  while (Date.now() < drainBy && succeeded() < enqueued) await sleep(500);
  await Promise.race([Promise.all(pendingWaits), sleep(Math.max(0, drainBy - Date.now()))]);
  gc();
  const heapEnd = heap();
  await node.close();
  const { rows } = await admin.query<{ n: string }>(
    `SELECT count(*) AS n FROM "${SOAK_SCHEMA}".scheduler_job_finished WHERE type = 'soak' AND status = 'SUCCEEDED'`,
  );
  await admin.end();
  let duplicates = 0;
  let missing = 0;
  for (let i = 0; i < enqueued; i++) {
    if ((runs[i] as number) > 1) duplicates++;
    if (runs[i] === 0) missing++;
  }
  const { url: _url, ...rest } = input;
  return {
    input: rest,
    windows,
    enqueued,
    succeeded: enqueued - missing,
    duplicates,
    missing,
    finishedRows: Number(rows[0]?.n ?? 0),
    waitFor: waits,
    ticks,
    heapGrowthMB: Math.round((heapEnd - heapStart) * 10) / 10,
    errors,
  };
});
