/**
 * `npm run bench [-- flags]`: pawl's benchmark, alone or side by side with its peers on the same
 * database and machine. See docs/benchmarks.md for what each workload does and each peer's settings.
 *
 * With no flags: pawl drains 20,000 pre-inserted no-op jobs at concurrency 10 (3 runs, median) and
 * pickup latency into an idle node is sampled 500 times (local submission).
 *
 * Systems:    --peers (pawl, graphile-worker tuned and defaults, pg-boss, the SQL floor), or
 *             --systems pawl,graphile-tuned,graphile-defaults,pg-boss,floor
 * Workloads:  --drain, --pickup, --mixed, --enqueue (none given: --drain --pickup), --all (all four)
 *             --latency [--coordinator none|postgres|amqp|hazelcast[,...]]   two processes (issue 4);
 *                                                                           default coordinator: postgres
 *             --soak [--soak-jobs 1000000] [--soak-chunk 50000]             memory of a 1M-job drain
 *             --curves [--axes backlog,finished,processes,payload,queues,load,idle] [--plots docs/plots]
 *                      [--coordinator none,postgres[,amqp,hazelcast]]
 *                                         rate against the due backlog, finished rows, payload size and
 *                                         queues (beside graphile-worker tuned where it has the axis), and
 *                                         the idle cost per node with each --coordinator (idle-axis.ts);
 *                                         SVG plots into --plots (curves.ts); each drain point the median
 *                                         of --runs, interleaved
 *             --goals [--skip drain,latency,curves] [--curve-runs 1]
 *                                         issue 28's goals in one run: the drain beside graphile-worker
 *                                         tuned and the floor with finished rows kept and not kept,
 *                                         pickup per coordinator, the backlog, finished, load and idle
 *                                         curves, then one table of each goal and whether it holds
 *                                         (goals.ts; --jobs and --runs as for the drain)
 *             --fairness                  concurrency keys (issue 27): noisy neighbour, a limit of 3 on two
 *                                         nodes, 1,000 keys, a critical job behind a backlog, throughput
 *                                         with and without keys (fairness.ts)
 *             --primaries URL             one database per group of queues (issue 28): 40,000 jobs on one
 *                                         primary (one node, two nodes) against 20,000 on each of two, a
 *                                         node bound to each; URL is the second primary's bench database
 *                                         (two-primaries.ts; docs/scaling.md says how to start one)
 *             --graveyard                 idle-poll and claim cost over 200,000 dead tuples, with and
 *                                         without claim cursors (database pawl_graveyard, or
 *                                         GRAVEYARD_DATABASE_URL)
 * Sizes:      --jobs 20000[,100000] --mixed-jobs N --concurrency 10 --runs 3 --samples 500
 *             --warmup 20 --gap-ms 10 --enqueue-single 2000 --enqueue-bulk 20000 --batch 1000
 * Output:     --json (machine-readable, on stdout; progress goes to stderr), --json-out FILE (the tables
 *             on stdout and the JSON in FILE)
 * pawl:       --keep-succeeded false      pawl deletes succeeded rows (createPawl's keepSucceeded: false);
 *                                         same as PAWL_BENCH_KEEP_SUCCEEDED=false
 *             --tracing on|unsampled|off|sdk-span
 *                                         pawl with OpenTelemetry tracing (the SDK, a no-op exporter; jobs
 *                                         carry a producer's trace context; unsampled: AlwaysOffSampler;
 *                                         sdk-span: pawl's tracing off, the handler starts one bare span);
 *                                         same as PAWL_BENCH_TRACING=on
 * Database:   --database-url URL, else BENCH_DATABASE_URL, else postgres://postgres@127.0.0.1:5432/pawl_bench
 *             (created when missing; a dedicated database lets the bench count PostgreSQL's CPU).
 */
import { readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { parseArgs } from "node:util";
import pg from "pg";
import { runChild } from "./lib/child.js";
import { benchDatabaseUrl, databaseName, ensureDatabase, median, queryOnce, round } from "./lib/common.js";
import { benchTracingModes } from "./lib/bench-tracing.js";
import { dec, int, ratio, renderTable } from "./lib/table.js";
import { goalRows, renderGoals, type DrainResults } from "./lib/goal-table.js";
import type {
  DrainMeasurement,
  EnqueueMeasurement,
  MeasureInput,
  Measurement,
  PickupMeasurement,
} from "./measure.js";
import { coordinatorLatency, type CoordinatorLatencyResult } from "./latency/coordinator-latency.js";
import type { SoakInput, SoakResult } from "./soak.js";
import { SYSTEMS, type SystemName } from "./systems/types.js";

const USAGE = readFileSync(new URL(import.meta.url), "utf8")
  .split(" */")[0]!
  .replace(/^\/\*\*\n/, "")
  .replace(/^ \* ?/gm, "");

const { values: flags } = parseArgs({
  options: {
    peers: { type: "boolean", default: false },
    systems: { type: "string" },
    drain: { type: "boolean", default: false },
    pickup: { type: "boolean", default: false },
    mixed: { type: "boolean", default: false },
    enqueue: { type: "boolean", default: false },
    all: { type: "boolean", default: false },
    latency: { type: "boolean", default: false },
    coordinator: { type: "string" },
    soak: { type: "boolean", default: false },
    "soak-jobs": { type: "string", default: "1000000" },
    "soak-chunk": { type: "string", default: "50000" },
    // Hook for the claim-cursor benchmark of issue 7, which belongs to the claim-cursor work.
    graveyard: { type: "boolean", default: false },
    fairness: { type: "boolean", default: false },
    goals: { type: "boolean", default: false },
    skip: { type: "string" },
    "curve-runs": { type: "string", default: "1" },
    curves: { type: "boolean", default: false },
    primaries: { type: "string" },
    axes: { type: "string" },
    plots: { type: "string" },
    jobs: { type: "string" },
    "mixed-jobs": { type: "string" },
    concurrency: { type: "string", default: "10" },
    runs: { type: "string", default: "3" },
    samples: { type: "string" },
    warmup: { type: "string", default: "20" },
    "gap-ms": { type: "string", default: "10" },
    "enqueue-single": { type: "string", default: "2000" },
    "enqueue-bulk": { type: "string", default: "20000" },
    batch: { type: "string", default: "1000" },
    json: { type: "boolean", default: false },
    "json-out": { type: "string" },
    "database-url": { type: "string" },
    "keep-succeeded": { type: "string" },
    tracing: { type: "string" },
    help: { type: "boolean", short: "h", default: false },
  },
});

if (flags.help) {
  console.log(USAGE);
  process.exit(0);
}

if (flags.goals) {
  const skip = (flags.skip ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = skip.filter((s) => !["drain", "latency", "curves"].includes(s));
  if (unknown.length > 0) {
    console.error(`--skip takes drain, latency, curves; got ${unknown.join(", ")}`);
    process.exit(2);
  }
  const { runGoals } = await import("./goals.js");
  await runGoals({
    jobs: flags.jobs ?? "20000,100000",
    runs: Math.max(1, Math.floor(Number(flags.runs)) || 1),
    curveRuns: Math.max(1, Math.floor(Number(flags["curve-runs"])) || 1),
    skip,
    ...(flags["database-url"] ? { databaseUrl: flags["database-url"] } : {}),
    ...(flags["json-out"] ? { jsonOut: flags["json-out"] } : {}),
  });
  process.exit(0);
}

if (flags.fairness) {
  const url = benchDatabaseUrl(flags["database-url"]);
  await ensureDatabase(url);
  const { runFairness } = await import("./fairness.js");
  console.log(JSON.stringify(await runFairness({ databaseUrl: url }), null, 2));
  process.exit(0);
}

if (flags.graveyard) {
  // A database of its own: the pinned horizon holds back vacuum for every table of the database it is in,
  // which would distort any other measurement sharing it.
  const target = new URL(benchDatabaseUrl(flags["database-url"]));
  target.pathname = "/pawl_graveyard";
  const { runGraveyard } = await import("./graveyard.js");
  const result = await runGraveyard({
    databaseUrl: process.env.GRAVEYARD_DATABASE_URL ?? target.toString(),
    ...(flags.json ? { log: () => {} } : {}),
  });
  if (flags.json) console.log(JSON.stringify(result, null, 2));
  process.exit(0);
}

if (flags.primaries !== undefined) {
  const url = benchDatabaseUrl(flags["database-url"]);
  await ensureDatabase(url);
  await ensureDatabase(flags.primaries);
  const { runTwoPrimaries } = await import("./two-primaries-run.js");
  const result = await runTwoPrimaries([url, flags.primaries], Number(flags.runs));
  if (flags["json-out"]) writeFileSync(flags["json-out"], JSON.stringify(result, null, 2));
  process.exit(0);
}

if (flags.curves) {
  const { CURVE_AXES, runCurves } = await import("./curves.js");
  const axes = (flags.axes ?? CURVE_AXES.join(",")).split(",").map((a) => a.trim());
  const unknown = axes.filter((a) => !(CURVE_AXES as readonly string[]).includes(a));
  if (unknown.length > 0) {
    console.error(`--axes takes ${CURVE_AXES.join(", ")}; got ${unknown.join(", ")}`);
    process.exit(2);
  }
  const url = benchDatabaseUrl(flags["database-url"]);
  await ensureDatabase(url);
  const result = await runCurves(
    url,
    axes as (typeof CURVE_AXES)[number][],
    flags.plots,
    Math.max(1, Math.floor(Number(flags.runs)) || 1),
    (flags.coordinator ?? "none,postgres").split(",").map((c) => c.trim()),
  );
  if (flags["json-out"]) writeFileSync(flags["json-out"], JSON.stringify(result, null, 2));
  process.exit(0);
}

const positiveInt = (name: string, raw: string | undefined): number => {
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) {
    console.error(`--${name} must be a positive integer, got ${raw}`);
    process.exit(2);
  }
  return n;
};
const intList = (name: string, raw: string): number[] =>
  raw.split(",").map((s) => positiveInt(name, s.trim()));

if (flags["keep-succeeded"] !== undefined) {
  if (flags["keep-succeeded"] !== "true" && flags["keep-succeeded"] !== "false") {
    console.error(`--keep-succeeded must be true or false, got ${flags["keep-succeeded"]}`);
    process.exit(2);
  }
  // The measuring children inherit the environment; systems/pawl.ts reads it.
  process.env.PAWL_BENCH_KEEP_SUCCEEDED = flags["keep-succeeded"];
}

if (flags.tracing !== undefined) {
  if (!(benchTracingModes as readonly string[]).includes(flags.tracing)) {
    console.error(`--tracing must be one of ${benchTracingModes.join(", ")}, got ${flags.tracing}`);
    process.exit(2);
  }
  process.env.PAWL_BENCH_TRACING = flags.tracing;
}
const url = benchDatabaseUrl(flags["database-url"]);
const database = databaseName(url);
const concurrency = positiveInt("concurrency", flags.concurrency);
const runs = positiveInt("runs", flags.runs);
const warmup = Number(flags.warmup);
const gapMs = Number(flags["gap-ms"]);

let systems: SystemName[] = ["pawl"];
if (flags.systems) {
  systems = flags.systems.split(",").map((s) => s.trim()) as SystemName[];
  for (const s of systems) {
    if (!SYSTEMS.includes(s)) {
      console.error(`unknown system ${s}: use ${SYSTEMS.join(", ")}`);
      process.exit(2);
    }
  }
} else if (flags.peers) {
  systems = [...SYSTEMS];
}
const multi = systems.length > 1;
const jobsList = intList("jobs", flags.jobs ?? (multi ? "20000,100000" : "20000"));

const special = flags.latency || flags.soak;
const explicit = flags.drain || flags.pickup || flags.mixed || flags.enqueue || flags.all;
const workloads = {
  drain: flags.all || flags.drain || (!explicit && !special),
  pickup: flags.all || flags.pickup || (!explicit && !special),
  mixed: flags.all || flags.mixed,
  enqueue: flags.all || flags.enqueue,
};
const mixedJobs = positiveInt("mixed-jobs", flags["mixed-jobs"] ?? String(jobsList[0]));

/** Progress lines go to stderr, so `--json` output on stdout stays clean. */
const progress = (line: string) => console.error(line);

function versionOf(pkg: string): string {
  try {
    const path = new URL(
      `../../${pkg === "pawl" ? "" : `node_modules/${pkg}/`}package.json`,
      import.meta.url,
    );
    return (JSON.parse(readFileSync(path, "utf8")) as { version: string }).version;
  } catch {
    return "?";
  }
}

async function serverVersion(): Promise<string> {
  return (await queryOnce<{ server_version: string }>(url, "SHOW server_version"))[0]!.server_version;
}

/** Waits until the database accepts connections again (another session may restart it). */
async function databaseUp(timeoutMs = 120_000): Promise<void> {
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

const failures: string[] = [];

/**
 * Runs one measurement in a child process. On a shared machine a measurement can fail for reasons that
 * are not the system's (another session restarting PostgreSQL or terminating backends): it is retried
 * once, and a second failure is recorded and skipped, so one incident does not end an hour-long run.
 */
async function measure<T extends Measurement>(input: MeasureInput): Promise<T | null> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await runChild<T>("measure.ts", input, { database });
    } catch (error) {
      const what = `${input.kind} ${input.system}${input.kind === "drain" ? ` ${input.jobs}${input.failEvery ? " mixed" : ""}` : ""}`;
      const message = (error as Error).message.split("\n")[0];
      progress(`  ${what} failed (attempt ${attempt}): ${message}`);
      if (attempt >= 2) {
        failures.push(`${what}: ${message}`);
        return null;
      }
      await databaseUp();
    }
  }
}

const load = () => loadavg().map((x) => round(x, 2));

// ---- run ----

interface SystemSeries<M> {
  runs: M[];
}
const results = {
  meta: {
    date: new Date().toISOString(),
    node: process.version,
    postgres: "",
    cpus: `${cpus().length} x ${cpus()[0]?.model ?? "?"}`,
    versions: {
      pawl: versionOf("pawl"),
      "graphile-worker": versionOf("graphile-worker"),
      "pg-boss": versionOf("pg-boss"),
    },
    database,
    loadAverage: { start: load(), end: [] as number[] },
    settings: { concurrency, runs, jobs: jobsList, mixedJobs, systems },
  },
  drain: {} as Record<string, Record<string, SystemSeries<DrainMeasurement> & Record<string, unknown>>>,
  mixed: {} as Record<string, SystemSeries<DrainMeasurement> & Record<string, unknown>>,
  pickup: {} as Record<string, SystemSeries<PickupMeasurement> & Record<string, unknown>>,
  enqueue: {} as Record<string, SystemSeries<EnqueueMeasurement> & Record<string, unknown>>,
  coordinatorLatency: [] as CoordinatorLatencyResult[],
  soak: null as SoakResult | null,
  /** Measurements that failed twice (skipped; the medians use the runs that succeeded). */
  failures,
};

await ensureDatabase(url);
results.meta.postgres = await serverVersion();
progress(
  `pawl bench: ${systems.join(", ")} | db ${database} (PostgreSQL ${results.meta.postgres}) | node ${process.version} | ` +
    `load average ${results.meta.loadAverage.start.join(" ")}`,
);

const pickupSamples = positiveInt("samples", flags.samples ?? "500");

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
        progress(`[run ${run}/${runs}] drain ${jobs} ${system} (load ${load()[0]})...`);
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
      progress(`[run ${run}/${runs}] mixed ${mixedJobs} ${system} (load ${load()[0]})...`);
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
      progress(`[run ${run}/${runs}] pickup ${system}, ${pickupSamples} samples (load ${load()[0]})...`);
      const m = await measure<PickupMeasurement>({
        kind: "pickup",
        system,
        url,
        samples: pickupSamples,
        warmup,
        gapMs,
        concurrency,
      });
      if (!m) continue;
      (results.pickup[system] ??= { runs: [] }).runs.push(m);
      progress(`  p50 ${dec(m.p50)} ms, p99 ${dec(m.p99)} ms`);
    }
  }
  if (workloads.enqueue) {
    for (const system of systems) {
      progress(`[run ${run}/${runs}] enqueue ${system} (load ${load()[0]})...`);
      const m = await measure<EnqueueMeasurement>({
        kind: "enqueue",
        system,
        url,
        single: positiveInt("enqueue-single", flags["enqueue-single"]),
        bulk: positiveInt("enqueue-bulk", flags["enqueue-bulk"]),
        batch: positiveInt("batch", flags.batch),
      });
      if (!m) continue;
      (results.enqueue[system] ??= { runs: [] }).runs.push(m);
      progress(`  single ${int(m.single.jobsPerSecond)} jobs/s, bulk ${int(m.bulk.jobsPerSecond)} jobs/s`);
    }
  }
}

if (flags.latency) {
  const coordinators = (flags.coordinator ?? "postgres").split(",").map((s) => s.trim());
  for (const coordinator of coordinators) {
    // Without a coordinator every pickup waits for a poll (30 s interval): a few samples show it.
    const samples = flags.samples ? positiveInt("samples", flags.samples) : coordinator === "none" ? 5 : 500;
    const w = coordinator === "none" ? 0 : warmup;
    progress(
      `two-process pickup latency, coordinator ${coordinator}, ${samples} samples (load ${load()[0]})...`,
    );
    try {
      const r = await coordinatorLatency({
        url,
        coordinator,
        samples,
        warmup: w,
        gapMs: Math.max(gapMs, 20),
      });
      results.coordinatorLatency.push(r);
      progress(`  p50 ${dec(r.p50)} ms, p99 ${dec(r.p99)} ms`);
    } catch (error) {
      const message = (error as Error).message.split("\n")[0];
      progress(`  failed: ${message}`);
      failures.push(`latency ${coordinator}: ${message}`);
    }
  }
}

if (flags.soak) {
  const input: SoakInput = {
    url,
    jobs: positiveInt("soak-jobs", flags["soak-jobs"]),
    chunk: positiveInt("soak-chunk", flags["soak-chunk"]),
    concurrency,
  };
  progress(`soak: ${input.jobs} jobs in chunks of ${input.chunk} (load ${load()[0]})...`);
  results.soak = await runChild<SoakResult>("soak.ts", input, {
    database,
    extraExecArgv: ["--expose-gc"],
    timeoutMs: 6 * 3_600_000,
  });
}

results.meta.loadAverage.end = load();

// ---- summaries ----

const med = <M>(series: SystemSeries<M> | undefined, f: (m: M) => number | undefined): number =>
  series ? median(series.runs.map(f).filter((x): x is number => x !== undefined)) : NaN;

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

// ---- output ----

if (flags["json-out"]) writeFileSync(flags["json-out"], JSON.stringify(results, null, 2) + "\n");
if (flags.json) {
  console.log(JSON.stringify(results, null, 2));
  process.exit(0);
}

const LABELS: Record<SystemName, string> = {
  pawl: "pawl",
  "graphile-tuned": "graphile-worker tuned",
  "graphile-defaults": "graphile-worker defaults",
  "pg-boss": "pg-boss",
  floor: "SQL floor",
};
const label = (s: string) => LABELS[s as SystemName] ?? s;
const showRatio = multi && systems.includes("pawl");
const out: string[] = [];
const m = results.meta;
out.push(
  `pawl bench, ${m.date} | ${m.cpus} | node ${m.node} | PostgreSQL ${m.postgres} | pawl ${m.versions.pawl}, ` +
    `graphile-worker ${m.versions["graphile-worker"]}, pg-boss ${m.versions["pg-boss"]}`,
  `load average (1/5/15 min) at start ${m.loadAverage.start.join(" ")}, at end ${m.loadAverage.end.join(" ")}` +
    (cpus().length <= 2 ? " -- on a shared 2-core machine, absolute numbers are noisy" : ""),
  ...(workloads.drain || workloads.mixed || workloads.pickup || workloads.enqueue
    ? [
        `medians of ${runs} run(s); concurrency ${concurrency}; CPU per job: node = the measuring process, ` +
          "db = the bench database's backends, other load = the rest of the machine (share of all cores)",
      ]
    : []),
  "",
);

type Row = Record<string, unknown> & { median: Record<string, number> };
for (const [jobs, bySystem] of Object.entries(results.drain)) {
  out.push(`Drain ${int(Number(jobs))} pre-inserted no-op jobs`);
  out.push(
    renderTable(
      [
        "system",
        "jobs/s",
        "runs (jobs/s)",
        "node CPU us/job",
        "db CPU us/job",
        "db xacts/job",
        "WAL B/job",
        "other load",
        ...(showRatio ? ["pawl / system"] : []),
      ],
      Object.entries(bySystem).map(([s, v]) => {
        const r = v as unknown as Row & SystemSeries<DrainMeasurement>;
        return [
          label(s),
          int(r.median.jobsPerSecond),
          r.runs.map((x) => int(x.jobsPerSecond)).join(", "),
          dec(r.median.nodeCpuUsPerJob, 0),
          dec(r.median.dbCpuUsPerJob, 0),
          dec(r.median.xactsPerJob, 3),
          int(r.median.walBytesPerJob),
          `${dec(r.median.otherLoadPct, 0)}%`,
          ...(showRatio ? [ratio(r.pawlRatio as number)] : []),
        ];
      }),
    ),
    "",
  );
}
if (Object.keys(results.mixed).length) {
  out.push(
    `Mixed: ${int(mixedJobs)} jobs, every 10th fails its first attempt (first pass = every job attempted once)`,
  );
  out.push(
    renderTable(
      [
        "system",
        "jobs/s (all succeeded)",
        "first pass jobs/s",
        "node CPU us/job",
        "db CPU us/job",
        ...(showRatio ? ["pawl / system (first pass)", "pawl / system (all)"] : []),
      ],
      Object.entries(results.mixed).map(([s, v]) => {
        const r = v as unknown as Row;
        return [
          label(s),
          int(r.median.jobsPerSecond),
          int(r.median.firstPassJobsPerSecond),
          dec(r.median.nodeCpuUsPerJob, 0),
          dec(r.median.dbCpuUsPerJob, 0),
          ...(showRatio ? [ratio(r.pawlRatioFirstPass as number), ratio(r.pawlRatio as number)] : []),
        ];
      }),
    ),
    "retry delays: pawl 0 (retry.baseMs 0), graphile-worker exp(1) = 2.7 s (fixed in its SQL), pg-boss 1 s, floor 0",
    "",
  );
}
if (Object.keys(results.pickup).length) {
  out.push(
    `Pickup latency into an idle worker, enqueue call start -> handler start, same process (${pickupSamples} samples per run)`,
  );
  out.push(
    renderTable(
      [
        "system",
        "p50 ms",
        "p99 ms",
        "max ms",
        "enqueue call p50 ms",
        ...(showRatio ? ["pawl p50 / system p50"] : []),
      ],
      Object.entries(results.pickup).map(([s, v]) => {
        const r = v as unknown as Row;
        return [
          label(s),
          dec(r.median.p50),
          dec(r.median.p99),
          dec(r.median.max),
          dec(r.median.enqueueCallP50),
          ...(showRatio ? [ratio(r.pawlP50Ratio as number)] : []),
        ];
      }),
    ),
    "",
  );
}
if (Object.keys(results.enqueue).length) {
  out.push(
    `Enqueue: single (${flags["enqueue-single"]} calls, one at a time) and bulk (${flags["enqueue-bulk"]} jobs in calls of ${flags.batch}); CPU = node + db`,
  );
  out.push(
    renderTable(
      [
        "system",
        "single jobs/s",
        "single CPU us/job",
        "bulk jobs/s",
        "bulk CPU us/job",
        ...(showRatio ? ["pawl / system (single)", "pawl / system (bulk)"] : []),
      ],
      Object.entries(results.enqueue).map(([s, v]) => {
        const r = v as unknown as Row;
        return [
          label(s),
          int(r.median.singleJobsPerSecond),
          dec(r.median.singleCpuUsPerJob, 0),
          int(r.median.bulkJobsPerSecond),
          dec(r.median.bulkCpuUsPerJob, 1),
          ...(showRatio ? [ratio(r.pawlRatioSingle as number), ratio(r.pawlRatioBulk as number)] : []),
        ];
      }),
    ),
    "",
  );
}
if (showRatio && Object.keys(results.drain).length) {
  // The one-glance summary the issue asks for: throughput, CPU, latency and the ratios.
  const sizes = Object.keys(results.drain);
  out.push("Summary (ratios: pawl jobs/s divided by the system's; > 1 means pawl is faster)");
  out.push(
    renderTable(
      [
        "system",
        ...sizes.map((n) => `${int(Number(n))} jobs/s`),
        "CPU us/job (node+db)",
        "pickup p50 / p99 ms",
        ...sizes.map((n) => `pawl / system (${int(Number(n))})`),
      ],
      systems.map((s) => {
        const d = sizes.map((n) => results.drain[n]![s] as unknown as Row | undefined);
        const p = results.pickup[s] as unknown as Row | undefined;
        return [
          label(s),
          ...d.map((r) => int(r?.median.jobsPerSecond)),
          d[0] ? dec(d[0].median.nodeCpuUsPerJob! + d[0].median.dbCpuUsPerJob!, 0) : "-",
          p ? `${dec(p.median.p50)} / ${dec(p.median.p99)}` : "-",
          ...d.map((r) => (s === "pawl" ? "1.00x" : ratio(r?.pawlRatio as number))),
        ];
      }),
    ),
  );
  // Issue 28's goals this run measured (--goals runs them all): the ratios to graphile-worker tuned and
  // the floor, pawl's node CPU, and with rows kept its WAL per job.
  const kept = process.env.PAWL_BENCH_KEEP_SUCCEEDED !== "false";
  const drains = results.drain as unknown as DrainResults;
  const rows = goalRows(kept ? { kept: drains } : { notKept: drains }).filter((r) => r.holds !== null);
  out.push(
    "",
    `Issue 28's goals measured by this run (finished rows ${kept ? "kept" : "not kept"}; sizes smallest first)`,
  );
  out.push(renderGoals(rows));
  out.push("");
}
if (results.coordinatorLatency.length) {
  out.push(
    "Pickup latency across two pawl processes (enqueuer does not run the type; receiver polls every 30 s)",
  );
  out.push(
    renderTable(
      [
        "coordinator",
        "p50 ms",
        "p90 ms",
        "p99 ms",
        "max ms",
        "samples",
        "picked up by a poll",
        "enqueue call p50",
        "enqueue -> wakeup p50",
        "wakeup -> handler p50",
      ],
      results.coordinatorLatency.map((r) => [
        r.coordinator,
        dec(r.p50),
        dec(r.p90),
        dec(r.p99),
        dec(r.max),
        String(r.samples),
        String(r.withoutWakeup),
        dec(r.enqueueCallP50),
        dec(r.toWakeupP50),
        dec(r.wakeupToHandlerP50),
      ]),
    ),
    "",
  );
  for (const r of results.coordinatorLatency) {
    const errors = [...((r.receiver.errors as string[]) ?? []), ...((r.enqueuer.errors as string[]) ?? [])];
    if (errors.length) out.push(`  ${r.coordinator} errors: ${errors.join("; ")}`);
  }
}
if (results.soak) {
  const s = results.soak;
  out.push(
    `Soak: ${int(s.jobs)} jobs in ${dec(s.seconds, 0)} s (${int(s.jobsPerSecond)} jobs/s), memory of the node process`,
  );
  out.push(
    renderTable(
      ["", "start", "peak", "end", "end after GC"],
      [
        [
          "heap used MB",
          dec(s.memory.start.heapUsedMB, 1),
          dec(s.memory.peak.heapUsedMB, 1),
          dec(s.memory.end.heapUsedMB, 1),
          dec(s.memory.endAfterGc.heapUsedMB, 1),
        ],
        [
          "RSS MB",
          dec(s.memory.start.rssMB, 1),
          dec(s.memory.peak.rssMB, 1),
          dec(s.memory.end.rssMB, 1),
          dec(s.memory.endAfterGc.rssMB, 1),
        ],
      ],
    ),
    `heap after GC at each tenth (MB): ${s.memory.heapAfterGcByTenth.join(", ")}`,
    `jobs/s in each tenth: ${s.jobsPerSecondByTenth.map(int).join(", ")}`,
    `table at the end: ${int(s.table.rows)} rows, ${dec(s.table.totalMB, 0)} MB with indexes; claims: ${JSON.stringify(s.diagnostics)}`,
    "",
  );
}
for (const [title, group] of [
  ["drain", Object.values(results.drain).flatMap((x) => Object.entries(x))],
  ["mixed", Object.entries(results.mixed)],
] as const) {
  for (const [s, v] of group) {
    const diags = (v.runs as DrainMeasurement[]).map((r) => r.diagnostics).filter(Boolean);
    const dups = (v.runs as DrainMeasurement[]).reduce((a, r) => a + r.duplicates, 0);
    if (dups) out.push(`note: ${label(s)} ${title}: ${dups} duplicate executions`);
    if (s === "pawl" && diags.length)
      out.push(`pawl ${title} diagnostics (last run): ${JSON.stringify(diags[diags.length - 1])}`);
    else
      for (const d of diags)
        if (d && "errors" in d) out.push(`note: ${label(s)} ${title} errors: ${JSON.stringify(d)}`);
  }
}
if (failures.length) out.push(`failed measurements (skipped): ${failures.join("; ")}`);
console.log(out.join("\n"));
process.exit(0);
