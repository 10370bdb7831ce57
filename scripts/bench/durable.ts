/**
 * The durable handlers' benchmark (`npm run bench -- --durable`, or `npx tsx scripts/bench/durable.ts`),
 * issue 41, in one process against one database (give it a database of its own: the CPU of its backends and
 * its transaction counts are what is measured):
 *
 * 1. **A no-op step's cost.** The same number of jobs drained twice by one node: a plain no-op handler,
 *    then one that runs `steps` no-op `ctx.step`s. The difference per step: node CPU, database CPU (its
 *    backends, from /proc) and WAL.
 * 2. **Sleep due -> resume.** `sleepers` jobs sleep between 0.5 and 5 s; the time from each sleep's due time
 *    (`wake_at`, database time) to the handler running past it (p50, p99).
 * 3. **100,000 parked jobs against none.** `parked` jobs sleeping for days are inserted (WAITING rows and
 *    their waiting steps, as parks leave them). With and without them: the claim statements' cost (EXPLAIN
 *    (ANALYZE, BUFFERS) of each statement a claim of 100 sends, over a backlog of runnable jobs), the drain
 *    rate of `jobs` no-op jobs, and the idle cost of a started node (transactions per second).
 *
 * With `--machines` (issue 42) only part 3 runs, with parked durable machines instead of sleepers: WAITING
 * rows of a machine type with their `scheduler_machine` rows (a snapshot and one `after` timer due in days,
 * as a park leaves them), and every node of the part (drain and idle) registers that machine, so both
 * sides pay a machine node's one-second deadline sweep.
 *
 * Flags (direct run): --database-url URL (default BENCH_DATABASE_URL, else pawl_bench_durable on the local
 * server), --parked 100000, --jobs 5000, --steps 10, --sleepers 200, --idle-ms 30000, --machines. It prints
 * the result as JSON on stdout and its progress on stderr.
 */
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import pg from "pg";
import { createMachine } from "xstate";
import { createPawl, type Pawl } from "../../src/index.js";
import { systemClock } from "../../src/core/clock.js";
import { JobStore } from "../../src/store/postgres-job-store.js";
import { ClassicClaimer } from "../../src/store/claim/claimer.js";
import { CpuWindowMeter } from "./lib/cpu-meter.js";
import { databaseName, ensureDatabase, quantile, sleep, walBytes } from "./lib/common.js";

/** Options of {@link runDurable}. */
export interface DurableBenchOptions {
  databaseUrl: string;
  parked?: number;
  jobs?: number;
  steps?: number;
  sleepers?: number;
  idleMs?: number;
  /** Park durable machines instead of sleepers, and measure only the parked comparison (part 3). */
  machines?: boolean;
  log?: (line: string) => void;
}

/** Cost of one drain. */
interface Drain {
  jobs: number;
  /** From before `start()` to the database showing none left: start-up and the 50 ms poll included. */
  seconds: number;
  /**
   * Jobs per second from the first job's start to the last one's success (the node's own events): the
   * claim-and-run rate, without start-up (a node's first statements read the whole live table once,
   * which is most of a 5,000-job drain beside 100,000 parked rows) or the poll that sees the end.
   */
  jobsPerSecond: number;
  nodeCpuMs: number;
  dbCpuMs: number;
  walBytes: number;
}

/** What {@link runDurable} measured. */
export interface DurableBenchResult {
  /** What was parked: durable handlers' sleepers, or durable machines (`--machines`). */
  kind: "sleepers" | "machines";
  /** Absent with `--machines`. */
  step?: {
    steps: number;
    plain: Drain;
    stepped: Drain;
    perStep: { nodeUs: number; dbUs: number; walBytes: number };
  };
  /** Absent with `--machines`. */
  sleep?: { sleepers: number; p50Ms: number; p99Ms: number; maxMs: number };
  parked: {
    parked: number;
    claim: { without: { buffers: number; ms: number }; with: { buffers: number; ms: number } };
    drain: { without: Drain; with: Drain; ratio: number };
    idle: { without: number; with: number; ratio: number };
  };
}

const baseSchema = "pawl_durable_bench";
/** The schema without parked jobs, and the one with them (both migrated; drains alternate between them). */
const schemas = { without: "pawl_durable_bench_none", with: "pawl_durable_bench_parked" } as const;

/** Drains `n` pre-inserted jobs of `type` with one node; CPU and WAL over the drain. */
/** The parked machines' type: waits for an event, with a timer days away. */
const parkedMachine = createMachine({
  id: "parked",
  initial: "waiting",
  states: { waiting: { on: { GO: "done" }, after: { 259_200_000: "done" } }, done: { type: "final" } },
});

/** With `--machines`, every node of the parked comparison also runs the parked machine's type. */
let alsoRegister: (p: Pawl) => void = () => {};

async function drain(
  url: string,
  pool: pg.Pool,
  register: (p: Pawl) => void,
  type: string,
  n: number,
  schema: string = baseSchema,
): Promise<Drain> {
  await pool.query(
    `INSERT INTO "${schema}".scheduler_job_queue (type, payload) SELECT $1, '{}'::jsonb FROM generate_series(1, $2)`,
    [type, n],
  );
  const node = createPawl({ connectionString: url, schema, concurrency: 10, nodeId: `bench-${type}` });
  register(node);
  alsoRegister(node);
  const meter = new CpuWindowMeter(databaseName(url), undefined);
  const wal0 = await walBytes(pool);
  const cpu0 = process.cpuUsage();
  meter.open();
  let first = 0;
  let last = 0;
  let done = 0;
  node.on("job:started", () => {
    if (first === 0) first = performance.now();
  });
  node.on("job:succeeded", () => {
    if (++done === n) last = performance.now();
  });
  const t0 = performance.now();
  await node.start();
  for (;;) {
    const { rows } = await pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM "${schema}".scheduler_job_queue WHERE type = $1`,
      [type],
    );
    if (rows[0]!.n === 0) break;
    await sleep(50);
  }
  const seconds = (performance.now() - t0) / 1000;
  const cpu = meter.close();
  const node1 = process.cpuUsage(cpu0);
  const wal1 = await walBytes(pool);
  await node.stop({ graceMs: 1000 });
  await node.close();
  return {
    jobs: n,
    seconds,
    jobsPerSecond: last > first ? n / ((last - first) / 1000) : n / seconds,
    nodeCpuMs: (node1.user + node1.system) / 1000,
    dbCpuMs: cpu.dbCpuMs,
    walBytes: Number(wal1 - wal0),
  };
}

/** EXPLAIN (ANALYZE, BUFFERS) of every statement a claim of 100 sends, over a fresh backlog; summed. */
async function claimCost(
  pool: pg.Pool,
  url: string,
  schema: string,
): Promise<{ buffers: number; ms: number }> {
  await pool.query(
    `INSERT INTO "${schema}".scheduler_job_queue (type) SELECT 'claimed' FROM generate_series(1, 1000)`,
  );
  await pool.query(`ANALYZE "${schema}".scheduler_job_queue`);
  const explain = new pg.Client({ connectionString: url });
  await explain.connect();
  const costs: { buffers: number; ms: number }[] = [];
  const measuring = new Proxy(pool, {
    get: (target, prop, receiver) =>
      prop === "query"
        ? async (config: pg.QueryConfig) => {
            await explain.query("BEGIN");
            try {
              const plan = await explain.query<{
                "QUERY PLAN": [{ Plan: Record<string, number>; "Execution Time": number }];
              }>(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${config.text}`, config.values);
              const top = plan.rows[0]!["QUERY PLAN"][0];
              costs.push({
                buffers: (top.Plan["Shared Hit Blocks"] ?? 0) + (top.Plan["Shared Read Blocks"] ?? 0),
                ms: top["Execution Time"],
              });
            } finally {
              await explain.query("ROLLBACK");
            }
            return target.query(config);
          }
        : Reflect.get(target, prop, receiver),
  });
  const claimer = new ClassicClaimer({
    nodeId: "bench-claim",
    boostIntervalMs: 15 * 60_000,
    withPayload: true,
    store: new JobStore(measuring, schema),
    clock: systemClock,
  });
  const samples: { buffers: number; ms: number }[] = [];
  for (let i = 0; i < 9; i++) {
    costs.length = 0;
    await claimer.claim(100, ["claimed"]);
    samples.push({
      buffers: costs.reduce((a, c) => a + c.buffers, 0),
      ms: costs.reduce((a, c) => a + c.ms, 0),
    });
  }
  await explain.end();
  await pool.query(`DELETE FROM "${schema}".scheduler_job_queue WHERE type = 'claimed'`);
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  return { buffers: med(samples.map((s) => s.buffers)), ms: med(samples.map((s) => s.ms)) };
}

/** Transactions per second an idle started node costs the database, over `windowMs`. */
async function idleCost(url: string, pool: pg.Pool, windowMs: number, schema: string): Promise<number> {
  const node = createPawl({ connectionString: url, schema, nodeId: "bench-idle" });
  node.register("noop", () => {});
  alsoRegister(node);
  await node.start();
  await sleep(5000);
  const count = async () =>
    Number(
      (
        await pool.query<{ n: string }>(
          "SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = current_database()",
        )
      ).rows[0]!.n,
    );
  const x0 = await count();
  await sleep(windowMs);
  await sleep(1500); // pg_stat_database is flushed when backends go idle, about once a second
  const x1 = await count();
  await node.stop({ graceMs: 1000 });
  await node.close();
  // The two reads of the counter are themselves transactions of this database.
  return (x1 - x0 - 1) / (windowMs / 1000);
}

/** Runs the benchmark; see the file header. */
export async function runDurable(options: DurableBenchOptions): Promise<DurableBenchResult> {
  const {
    databaseUrl: url,
    parked = 100_000,
    jobs = 5000,
    steps = 10,
    sleepers = 200,
    idleMs = 30_000,
    machines = false,
  } = options;
  const log = options.log ?? ((line: string) => console.error(line));
  await ensureDatabase(url);
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  try {
    const schema = baseSchema;
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await new JobStore(pool, schema).migrate();

    let stepResult: DurableBenchResult["step"];
    let sleepResult: DurableBenchResult["sleep"];
    if (machines) {
      alsoRegister = (p) => void p.registerMachine("parked", parkedMachine);
    } else {
      log(`step cost: ${jobs} jobs plain, then with ${steps} no-op steps each...`);
      const plain = await drain(url, pool, (p) => p.register("plain", () => null), "plain", jobs);
      const stepped = await drain(
        url,
        pool,
        (p) =>
          p.register("stepped", async (_payload, ctx) => {
            for (let i = 0; i < steps; i++) await ctx.step(`s${i}`, () => null);
          }),
        "stepped",
        jobs,
      );
      const n = jobs * steps;
      const perStep = {
        nodeUs: ((stepped.nodeCpuMs - plain.nodeCpuMs) * 1000) / n,
        dbUs: ((stepped.dbCpuMs - plain.dbCpuMs) * 1000) / n,
        walBytes: (stepped.walBytes - plain.walBytes) / n,
      };
      log(
        `  per step: node ${perStep.nodeUs.toFixed(0)} µs, db ${perStep.dbUs.toFixed(0)} µs, WAL ${perStep.walBytes.toFixed(0)} B`,
      );

      log(`sleep latency: ${sleepers} jobs sleeping 0.5-5 s...`);
      const resumed = new Map<string, number>();
      const node = createPawl({ connectionString: url, schema, concurrency: 20, nodeId: "bench-sleep" });
      node.register("sleeper", async (p: { ms: number }, ctx) => {
        await ctx.sleep("nap", p.ms);
        if (!resumed.has(ctx.jobId)) resumed.set(ctx.jobId, Date.now());
      });
      await node.start();
      const enqueued = await node.enqueueMany(
        Array.from({ length: sleepers }, () => ({
          type: "sleeper",
          payload: { ms: 500 + Math.floor(Math.random() * 4500) },
        })),
      );
      await Promise.all(enqueued.map((j) => node.waitFor(j, { timeoutMs: 60_000 })));
      await node.stop({ graceMs: 1000 });
      await node.close();
      const { rows: wakes } = await pool.query<{ job_id: string; wake: Date }>(
        `SELECT job_id::text, wake_at AS wake FROM "${schema}".scheduler_job_step WHERE name = 'nap'`,
      );
      const lags = wakes
        .map((w) => resumed.get(w.job_id)! - w.wake.getTime())
        .filter((x) => Number.isFinite(x));
      sleepResult = {
        sleepers,
        p50Ms: quantile(lags, 0.5),
        p99Ms: quantile(lags, 0.99),
        maxMs: Math.max(...lags),
      };
      log(`  due -> resume p50 ${sleepResult.p50Ms} ms, p99 ${sleepResult.p99Ms} ms`);
      stepResult = { steps, plain, stepped, perStep };
    }
    // Two schemas, one with the parked jobs, measured in alternation (rounds), so the load of a shared
    // machine falls on both alike; each figure is the median of its rounds.
    const rounds = 3;
    for (const s of Object.values(schemas)) {
      await pool.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
      await new JobStore(pool, s).migrate();
    }
    const parkedType = machines ? "parked" : "sleeper";
    log(`parking ${parked} ${machines ? "machines" : "jobs"} for days in ${schemas.with}...`);
    await pool.query(
      `INSERT INTO "${schemas.with}".scheduler_job_queue (type, status, signal_state, signal_deadline, attempts)
       SELECT $2, 'WAITING', 'waiting', now() + interval '3 days' + i * interval '1 second', 0
       FROM generate_series(1, $1::int) i`,
      [parked, parkedType],
    );
    if (machines) {
      // What a park leaves: the persisted snapshot (as xstate writes it for this machine) and its timer.
      await pool.query(
        `INSERT INTO "${schemas.with}".scheduler_machine (job_id, type, version, snapshot, timers)
         SELECT id, 'parked', '1',
                '{"status":"active","value":"waiting","context":{},"children":{},"historyValue":{}}'::jsonb,
                jsonb_build_array(jsonb_build_object('id', 'xstate.after.259200000.parked.waiting',
                  'event', 'xstate.after.259200000.parked.waiting',
                  'dueAt', (extract(epoch FROM signal_deadline) * 1000)::bigint))
         FROM "${schemas.with}".scheduler_job_queue WHERE status = 'WAITING'`,
      );
    } else {
      await pool.query(
        `INSERT INTO "${schemas.with}".scheduler_job_step (job_id, name, kind, status, attempt, wake_at)
         SELECT id, 'nap', 'sleep', 'waiting', 1, signal_deadline FROM "${schemas.with}".scheduler_job_queue
         WHERE status = 'WAITING'`,
      );
    }
    for (const s of Object.values(schemas)) {
      await pool.query(`VACUUM ANALYZE "${s}".scheduler_job_queue`);
      await pool.query(`VACUUM ANALYZE "${s}".scheduler_job_step`);
      await pool.query(`VACUUM ANALYZE "${s}".scheduler_machine`);
    }
    const runsOf = { without: [] as Drain[], with: [] as Drain[] };
    const idleOf = { without: [] as number[], with: [] as number[] };
    const claimOf = {
      without: [] as { buffers: number; ms: number }[],
      with: [] as { buffers: number; ms: number }[],
    };
    for (let r = 1; r <= rounds; r++) {
      for (const k of ["without", "with"] as const) {
        claimOf[k].push(await claimCost(pool, url, schemas[k]));
        runsOf[k].push(
          await drain(url, pool, (p) => p.register("noop", () => null), "noop", jobs, schemas[k]),
        );
        idleOf[k].push(await idleCost(url, pool, idleMs, schemas[k]));
        log(
          `  round ${r} ${k}: claim ${claimOf[k].at(-1)!.buffers} buffers ${claimOf[k].at(-1)!.ms.toFixed(2)} ms, ` +
            `drain ${runsOf[k].at(-1)!.jobsPerSecond.toFixed(0)} jobs/s, idle ${idleOf[k].at(-1)!.toFixed(2)} tx/s`,
        );
      }
    }
    const mid = <T>(xs: T[], by: (x: T) => number): T =>
      [...xs].sort((a, b) => by(a) - by(b))[Math.floor(xs.length / 2)]!;
    const claimWithout = mid(claimOf.without, (c) => c.ms);
    const claimWith = mid(claimOf.with, (c) => c.ms);
    const drainWithout = mid(runsOf.without, (d) => d.jobsPerSecond);
    const drainWith = mid(runsOf.with, (d) => d.jobsPerSecond);
    const idleWithout = mid(idleOf.without, (x) => x);
    const idleWith = mid(idleOf.with, (x) => x);
    const result: DurableBenchResult = {
      kind: machines ? "machines" : "sleepers",
      ...(stepResult ? { step: stepResult } : {}),
      ...(sleepResult ? { sleep: sleepResult } : {}),
      parked: {
        parked,
        claim: { without: claimWithout, with: claimWith },
        drain: {
          without: drainWithout,
          with: drainWith,
          ratio: drainWith.jobsPerSecond / drainWithout.jobsPerSecond,
        },
        idle: { without: idleWithout, with: idleWith, ratio: idleWithout / Math.max(idleWith, 1e-9) },
      },
    };
    log(
      `  claim of 100: ${claimWithout.buffers} -> ${claimWith.buffers} buffers, ${claimWithout.ms.toFixed(2)} -> ${claimWith.ms.toFixed(2)} ms; ` +
        `drain ${drainWithout.jobsPerSecond.toFixed(0)} -> ${drainWith.jobsPerSecond.toFixed(0)} jobs/s; ` +
        `idle ${idleWithout.toFixed(2)} -> ${idleWith.toFixed(2)} transactions/s`,
    );
    return result;
  } finally {
    await pool.end();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      "database-url": { type: "string" },
      parked: { type: "string" },
      jobs: { type: "string" },
      steps: { type: "string" },
      sleepers: { type: "string" },
      "idle-ms": { type: "string" },
      machines: { type: "boolean", default: false },
    },
  });
  const num = (v: string | undefined) => (v === undefined ? undefined : Number(v));
  const result = await runDurable({
    databaseUrl:
      values["database-url"] ??
      process.env.BENCH_DATABASE_URL ??
      "postgres://postgres@127.0.0.1:5432/pawl_bench_durable",
    ...(num(values.parked) ? { parked: num(values.parked)! } : {}),
    ...(num(values.jobs) ? { jobs: num(values.jobs)! } : {}),
    ...(num(values.steps) ? { steps: num(values.steps)! } : {}),
    ...(num(values.sleepers) ? { sleepers: num(values.sleepers)! } : {}),
    ...(num(values["idle-ms"]) ? { idleMs: num(values["idle-ms"])! } : {}),
    machines: values.machines === true,
  });
  console.log(JSON.stringify(result, null, 2));
  process.exit(0);
}
