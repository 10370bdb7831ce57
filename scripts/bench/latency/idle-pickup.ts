/**
 * `--idle-pickup [--idle-minutes 1,10] [--receivers 4] [--samples 20]` (issue 43): how long a job that a
 * web process enqueues waits to start on a worker that has been idle, with pawl's defaults on both
 * sides: the worker a node given only its connection string, the web process a bare `PawlClient`, the
 * job an ordinary one (default priority, due now). `--idle-coordinator none` runs the same with the
 * 0.2.0 default (no coordinator) for a baseline.
 *
 * A node idle for N minutes is in a different state from one that just ran a job (its polls backed off,
 * deep idle after 5 minutes, its LISTEN connection quiet), and only the first job after the idle period
 * meets that state; the jobs after it meet a node that was just woken. So each point starts `receivers`
 * worker processes, each on a schema of its own with its own web process, lets them all sit idle for N
 * minutes, then takes `samples` jobs from each worker in turn, one at a time with a gap. Reported: the
 * first job after the idle period per worker (the cold pickups, one per worker), and p50 / p99 over every
 * sample. While they sit idle, the database's transactions are counted (pg_stat_database): per idle node
 * and second, what the defaults cost an idle node (use a database server of your own, or other
 * sessions' transactions are counted too).
 */
import pg from "pg";
import { resetPawlSchema } from "../systems/pawl.js";
import { deferred, sleep, summarize, withTimeout } from "../lib/common.js";
import { NodeProcess } from "./coordinator-latency.js";

/** One idle point. */
export interface IdlePickupResult {
  idleMinutes: number;
  /** The receivers' coordinator: "" for pawl's default. */
  coordinator: string;
  receivers: number;
  samples: number;
  /** The first job after the idle period on each worker (ms, in worker order). */
  cold: number[];
  p50: number;
  p90: number;
  p99: number;
  max: number;
  /** Samples picked up without a coordinator wakeup before them (found by a poll). */
  withoutWakeup: number;
  /** Transactions per second per idle node while idle (the database's, all sessions). */
  idleTransactionsPerSecondPerNode: number;
}

async function transactions(db: pg.Pool): Promise<number> {
  const { rows } = await db.query<{ n: string }>(
    "SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = current_database()",
  );
  return Number(rows[0]!.n);
}

/** Measures one idle point. */
export async function idlePickup(options: {
  url: string;
  idleMinutes: number;
  receivers: number;
  samples: number;
  gapMs: number;
  coordinator: string;
  progress: (line: string) => void;
}): Promise<IdlePickupResult> {
  const admin = new pg.Pool({ connectionString: options.url, max: 1 });
  const schemas = Array.from({ length: options.receivers }, (_, i) => `bench_pawl_idle_${i}`);
  for (const schema of schemas) await resetPawlSchema(options.url, schema, admin);
  const pairs = schemas.map((schema) => {
    const base = { url: options.url, schema, coordinator: options.coordinator, defaults: true };
    return {
      receiver: new NodeProcess({ ...base, role: "receiver" }),
      web: new NodeProcess({ ...base, role: "enqueuer" }),
    };
  });
  try {
    await Promise.all(
      pairs.flatMap((p) => [p.receiver.next("ready", 120_000), p.web.next("ready", 120_000)]),
    );
    // The count starts once the workers have settled (their first polls, the LISTEN probe).
    await sleep(Math.min(10_000, options.idleMinutes * 60_000));
    const idleStart = await transactions(admin);
    const idleFrom = Date.now();
    const remaining = options.idleMinutes * 60_000 - Math.min(10_000, options.idleMinutes * 60_000);
    options.progress(`  ${options.receivers} workers idle for ${options.idleMinutes} min...`);
    await sleep(remaining);
    // The admin pool's own two statements are in the count: negligible over minutes.
    const idleTransactions = (await transactions(admin)) - idleStart;
    const idleSeconds = (Date.now() - idleFrom) / 1000;

    const all: number[] = [];
    const cold: number[] = [];
    let withoutWakeup = 0;
    for (const { receiver, web } of pairs) {
      const started = new Map<number, bigint>();
      const wakeups: bigint[] = [];
      const off = receiver.on((m) => {
        if (m.kind === "started") started.set(m.i, BigInt(m.t));
        if (m.kind === "wakeup" && m.source === "coordinator") wakeups.push(BigInt(m.t));
      });
      for (let k = 0; k < options.samples; k++) {
        const picked = deferred<bigint>();
        const offStarted = receiver.on((m) => {
          if (m.kind === "started" && m.i === k) picked.resolve(BigInt(m.t));
        });
        const known = started.get(k);
        if (known !== undefined) picked.resolve(known);
        const enqueued = web.next("enqueued", 130_000);
        web.send({ cmd: "enqueue", i: k });
        const e = await enqueued;
        // Without a coordinator a deep-idle node polls every 60 s: the timeout leaves room for two.
        const t = await withTimeout(picked.promise, 130_000, `idle pickup of sample ${k}`);
        offStarted();
        const t0 = BigInt(e.t0);
        const ms = Number(t - t0) / 1e6;
        all.push(ms);
        if (k === 0) cold.push(ms);
        if (!wakeups.some((w) => w >= t0 && w <= t)) withoutWakeup++;
        wakeups.length = 0;
        await sleep(options.gapMs);
      }
      off();
    }
    const s = summarize(all);
    return {
      idleMinutes: options.idleMinutes,
      coordinator: options.coordinator,
      receivers: options.receivers,
      samples: all.length,
      cold,
      p50: s.p50,
      p90: s.p90,
      p99: s.p99,
      max: s.max,
      withoutWakeup,
      idleTransactionsPerSecondPerNode: idleTransactions / idleSeconds / options.receivers,
    };
  } finally {
    await Promise.all(pairs.flatMap((p) => [p.receiver.close(), p.web.close()]));
    for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
  }
}
