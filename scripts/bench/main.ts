/**
 * `npm run bench [-- flags]`: pawl's benchmark, alone or side by side with its peers on the same
 * database and machine. See docs/benchmarks.md for what each workload does and each peer's settings.
 *
 * This file parses the flags and starts the mode they ask for. The per-system workloads run in
 * run-workloads.ts (each measurement in a child process, measure.ts); bench-results.ts summarises them
 * and report.ts prints the tables.
 *
 * With no flags: pawl drains 20,000 pre-inserted no-op jobs at concurrency 10 (3 runs, median) and
 * pickup latency into an idle node is sampled 500 times (local submission).
 *
 * Systems:    --peers (pawl, graphile-worker tuned and defaults, pg-boss, the SQL floor), or
 *             --systems pawl,graphile-tuned,graphile-defaults,pg-boss,floor
 * Workloads:  --drain, --pickup, --mixed, --enqueue (none given: --drain --pickup), --all (all four)
 *             --latency [--coordinator none|postgres|amqp|hazelcast[,...]]   two processes (issue 4);
 *                                                                           default coordinator: postgres
 *             --soak [--minutes 12] [--rate 1500] [--keys 200] [--own-cluster PORT [--keep-cluster]]
 *                    [--dist path/to/dist/src/index.js] [--json-out FILE]
 *                                         issue 44's mix on one node, per 30 s window (soak.ts,
 *                                         soak-run.ts); --own-cluster: on a cluster of its own
 *                                         (pg_createcluster, autovacuum on), dropped afterwards
 *             --soak-plot before=a.json,after=b.json --plots docs/plots
 *                                         the soak's p99-per-window plot (soak-p99.svg)
 *             --keyed-graveyard --dist PREVIOUS/dist/src/index.js
 *                                         the keyed claim statement under a held xmin horizon with
 *                                         200, 1,000 and 20,000 keys: 0013's (the build at --dist,
 *                                         schema 16) against this tree's (keyed-graveyard.ts)
 *             --soak-drain [--soak-jobs 1000000] [--soak-chunk 50000]       memory of a 1M-job drain
 *             --idle-pickup [--idle-minutes 1,10] [--receivers 4] [--samples 20] [--idle-coordinator none]
 *                                         pickup with pawl's defaults on both sides (issue 43): a worker
 *                                         given only its URL, idle N minutes, and a web process's bare
 *                                         client; the first job after the idle period on each of
 *                                         --receivers workers, p50/p99 over all, idle transactions/s per
 *                                         node (latency/idle-pickup.ts); --idle-coordinator none is the
 *                                         0.2.0 default, for a baseline
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
 *             --durable                   durable handlers (issue 41): a no-op step's cost, sleep due ->
 *                                         resume p50/p99, 100,000 parked jobs against none (claim, drain,
 *                                         idle cost), interleaved (durable.ts; docs/durable.md)
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
import { cpus } from "node:os";
import { parseArgs } from "node:util";
import { runChild } from "./lib/child.js";
import { benchDatabaseUrl, databaseName, ensureDatabase, loadAverage, queryOnce } from "./lib/common.js";
import { benchTracingModes } from "./lib/bench-tracing.js";
import { dec } from "./lib/table.js";
import { newBenchResults, summarise } from "./bench-results.js";
import { renderReport } from "./report.js";
import { runWorkloads } from "./run-workloads.js";
import { coordinatorLatency } from "./latency/coordinator-latency.js";
import type { SoakInput, SoakResult } from "./soak-drain.js";
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
    "soak-drain": { type: "boolean", default: false },
    minutes: { type: "string", default: "12" },
    rate: { type: "string", default: "1500" },
    keys: { type: "string", default: "200" },
    "own-cluster": { type: "string" },
    "keep-cluster": { type: "boolean", default: false },
    dist: { type: "string" },
    "soak-plot": { type: "string" },
    "keyed-graveyard": { type: "boolean", default: false },
    "soak-jobs": { type: "string", default: "1000000" },
    "soak-chunk": { type: "string", default: "50000" },
    // Hook for the claim-cursor benchmark of issue 7, which belongs to the claim-cursor work.
    graveyard: { type: "boolean", default: false },
    fairness: { type: "boolean", default: false },
    durable: { type: "boolean", default: false },
    "idle-pickup": { type: "boolean", default: false },
    "idle-minutes": { type: "string", default: "1,10" },
    receivers: { type: "string", default: "4" },
    "idle-coordinator": { type: "string", default: "" },
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

if (flags["keyed-graveyard"]) {
  if (!flags.dist) {
    console.error("--keyed-graveyard needs --dist: a build of the previous keyed claim (dist/src/index.js)");
    process.exit(2);
  }
  const url = benchDatabaseUrl(flags["database-url"]);
  await ensureDatabase(url);
  const { runKeyedGraveyard, keyedGraveyardTable } = await import("./keyed-graveyard.js");
  console.log(keyedGraveyardTable(await runKeyedGraveyard({ url, previousDist: flags.dist })));
  process.exit(0);
}

if (flags["soak-plot"]) {
  const { soakPlot } = await import("./soak-run.js");
  const file = `${flags.plots ?? "docs/plots"}/soak-p99.svg`;
  writeFileSync(file, soakPlot(flags["soak-plot"], "Soak: pickup p99 per 30 s window"));
  console.log(`wrote ${file}`);
  process.exit(0);
}

if (flags.soak) {
  const { runSoak, soakReport } = await import("./soak-run.js");
  const count = (name: string, v: string): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n <= 0) {
      console.error(`--${name} takes a positive integer; got ${v}`);
      process.exit(2);
    }
    return n;
  };
  const result = await runSoak(
    {
      url: benchDatabaseUrl(flags["database-url"]),
      minutes: count("minutes", flags.minutes),
      rate: count("rate", flags.rate),
      keys: count("keys", flags.keys),
      concurrency: count("concurrency", flags.concurrency),
      ownClusterPort: flags["own-cluster"] ? count("own-cluster", flags["own-cluster"]) : null,
      keepCluster: flags["keep-cluster"],
      dist: flags.dist ?? null,
      jsonOut: flags["json-out"] ?? null,
    },
    (line) => console.error(line),
  );
  console.log(soakReport(result));
  process.exit(0);
}

if (flags.fairness) {
  const url = benchDatabaseUrl(flags["database-url"]);
  await ensureDatabase(url);
  const { runFairness } = await import("./fairness.js");
  console.log(JSON.stringify(await runFairness({ databaseUrl: url }), null, 2));
  process.exit(0);
}

if (flags.durable) {
  const url = benchDatabaseUrl(flags["database-url"]);
  const { runDurable } = await import("./durable.js");
  const result = await runDurable({ databaseUrl: url });
  if (flags["json-out"]) writeFileSync(flags["json-out"], JSON.stringify(result, null, 2));
  console.log(JSON.stringify(result, null, 2));
  process.exit(0);
}

if (flags["idle-pickup"]) {
  const minutes = flags["idle-minutes"].split(",").map((m) => Number(m.trim()));
  const receivers = Number(flags.receivers);
  const samples = Number(flags.samples ?? "20");
  if (
    minutes.some((m) => !(m > 0)) ||
    !Number.isInteger(receivers) ||
    receivers < 1 ||
    !Number.isInteger(samples) ||
    samples < 1
  ) {
    console.error(
      "--idle-minutes takes positive numbers (0.25 for a quick run); --receivers and --samples positive integers",
    );
    process.exit(2);
  }
  const url = benchDatabaseUrl(flags["database-url"]);
  await ensureDatabase(url);
  const { idlePickup } = await import("./latency/idle-pickup.js");
  const coordinator = flags["idle-coordinator"];
  const rows = [];
  for (const idleMinutes of minutes) {
    console.error(
      `idle pickup after ${idleMinutes} min, coordinator ${coordinator || "default"} (load ${loadAverage()[0]})...`,
    );
    const r = await idlePickup({
      url,
      idleMinutes,
      receivers,
      samples,
      gapMs: Math.max(Number(flags["gap-ms"]), 200),
      coordinator,
      progress: (l) => console.error(l),
    });
    rows.push(r);
    console.log(
      `idle ${idleMinutes} min, coordinator ${coordinator || "default"}: first job after idle ${r.cold.map((c) => dec(c)).join(" / ")} ms; ` +
        `p50 ${dec(r.p50)} ms, p99 ${dec(r.p99)} ms, max ${dec(r.max)} ms over ${r.samples} (${r.withoutWakeup} found by a poll); ` +
        `idle ${dec(r.idleTransactionsPerSecondPerNode)} transactions/s per node`,
    );
  }
  if (flags["json-out"]) writeFileSync(flags["json-out"], JSON.stringify(rows, null, 2));
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

const special = flags.latency || flags["soak-drain"];
const explicit = flags.drain || flags.pickup || flags.mixed || flags.enqueue || flags.all;
const workloads = {
  drain: flags.all || flags.drain || (!explicit && !special),
  pickup: flags.all || flags.pickup || (!explicit && !special),
  mixed: flags.all || flags.mixed,
  enqueue: flags.all || flags.enqueue,
};
const mixedJobs = positiveInt("mixed-jobs", flags["mixed-jobs"] ?? String(jobsList[0]));
const pickupSamples = positiveInt("samples", flags.samples ?? "500");
const enqueueSizes = {
  single: positiveInt("enqueue-single", flags["enqueue-single"]),
  bulk: positiveInt("enqueue-bulk", flags["enqueue-bulk"]),
  batch: positiveInt("batch", flags.batch),
};

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

const results = newBenchResults({
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
  loadAverage: { start: loadAverage(), end: [] },
  settings: { concurrency, runs, jobs: jobsList, mixedJobs, systems },
});

// ---- run ----

await ensureDatabase(url);
results.meta.postgres = await serverVersion();
progress(
  `pawl bench: ${systems.join(", ")} | db ${database} (PostgreSQL ${results.meta.postgres}) | node ${process.version} | ` +
    `load average ${results.meta.loadAverage.start.join(" ")}`,
);

await runWorkloads(
  {
    url,
    database,
    systems,
    jobsList,
    runs,
    concurrency,
    workloads,
    mixedJobs,
    pickup: { samples: pickupSamples, warmup, gapMs },
    enqueue: enqueueSizes,
  },
  results,
  progress,
);

if (flags.latency) {
  const coordinators = (flags.coordinator ?? "postgres").split(",").map((s) => s.trim());
  for (const coordinator of coordinators) {
    // Without a coordinator every pickup waits for a poll (30 s interval): a few samples show it.
    const samples = flags.samples ? positiveInt("samples", flags.samples) : coordinator === "none" ? 5 : 500;
    const w = coordinator === "none" ? 0 : warmup;
    progress(
      `two-process pickup latency, coordinator ${coordinator}, ${samples} samples (load ${loadAverage()[0]})...`,
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
      results.failures.push(`latency ${coordinator}: ${message}`);
    }
  }
}

if (flags["soak-drain"]) {
  const input: SoakInput = {
    url,
    jobs: positiveInt("soak-jobs", flags["soak-jobs"]),
    chunk: positiveInt("soak-chunk", flags["soak-chunk"]),
    concurrency,
  };
  progress(`soak: ${input.jobs} jobs in chunks of ${input.chunk} (load ${loadAverage()[0]})...`);
  results.soak = await runChild<SoakResult>("soak-drain.ts", input, {
    database,
    extraExecArgv: ["--expose-gc"],
    timeoutMs: 6 * 3_600_000,
  });
}

results.meta.loadAverage.end = loadAverage();

// ---- summaries and output ----

summarise(results);
if (flags["json-out"]) writeFileSync(flags["json-out"], JSON.stringify(results, null, 2) + "\n");
if (flags.json) {
  console.log(JSON.stringify(results, null, 2));
  process.exit(0);
}
console.log(
  renderReport(results, {
    perSystem: workloads.drain || workloads.mixed || workloads.pickup || workloads.enqueue,
    pickupSamples,
    enqueue: enqueueSizes,
    kept: process.env.PAWL_BENCH_KEEP_SUCCEEDED !== "false",
  }),
);
process.exit(0);
