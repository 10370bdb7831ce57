/**
 * The tables `npm run bench` prints once a run is summarised (bench-results.ts): the run's settings, then
 * one table per workload measured, the one-glance summary with issue 28's goals that the drain measured,
 * the two-process pickup, the soak, and any duplicate executions or errors a system showed.
 */
import { cpus } from "node:os";
import type { BenchResults, SystemSeries } from "./bench-results.js";
import { goalRows, renderGoals, type DrainResults } from "./lib/goal-table.js";
import { dec, int, ratio, renderTable } from "./lib/table.js";
import type { DrainMeasurement } from "./measure.js";
import type { SystemName } from "./systems/types.js";

/** What the report says that the results do not hold. */
export interface ReportOptions {
  /** Whether any per-system workload (drain, mixed, pickup, enqueue) ran. */
  perSystem: boolean;
  /** Samples per run of the same-process pickup. */
  pickupSamples: number;
  /** The enqueue workload's sizes, as given. */
  enqueue: { single: number; bulk: number; batch: number };
  /** Whether pawl kept its finished rows (which of issue 28's goals the drain measured). */
  kept: boolean;
}

const LABELS: Record<SystemName, string> = {
  pawl: "pawl",
  "graphile-tuned": "graphile-worker tuned",
  "graphile-defaults": "graphile-worker defaults",
  "pg-boss": "pg-boss",
  floor: "SQL floor",
};
const label = (s: string) => LABELS[s as SystemName] ?? s;

/** The report of a summarised run, as lines of text. */

/** What every section needs to know of the run. */
interface Context {
  results: BenchResults;
  options: ReportOptions;
  /** Whether pawl ran beside another system, so each row shows pawl's ratio to it. */
  showRatio: boolean;
}

type Row = Record<string, unknown> & { median: Record<string, number> };

/** The run's machine, versions, load and settings. */
function header({ results, options }: Context): string[] {
  const m = results.meta;
  return [
    `pawl bench, ${m.date} | ${m.cpus} | node ${m.node} | PostgreSQL ${m.postgres} | pawl ${m.versions.pawl}, ` +
      `graphile-worker ${m.versions["graphile-worker"]}, pg-boss ${m.versions["pg-boss"]}`,
    `load average (1/5/15 min) at start ${m.loadAverage.start.join(" ")}, at end ${m.loadAverage.end.join(" ")}` +
      (cpus().length <= 2 ? " -- on a shared 2-core machine, absolute numbers are noisy" : ""),
    ...(options.perSystem
      ? [
          `medians of ${m.settings.runs} run(s); concurrency ${m.settings.concurrency}; CPU per job: node = the measuring process, ` +
            "db = the bench database's backends, other load = the rest of the machine (share of all cores)",
        ]
      : []),
    "",
  ];
}

/** One table per drain size: each system's median jobs/s, runs, CPU, transactions and WAL per job. */
function drainTables({ results, showRatio }: Context): string[] {
  const out: string[] = [];
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
  return out;
}

/** The mixed drain (every 10th job fails once): all-succeeded and first-pass rates. */
function mixedTable({ results, showRatio }: Context): string[] {
  const out: string[] = [];
  if (Object.keys(results.mixed).length) {
    out.push(
      `Mixed: ${int(results.meta.settings.mixedJobs)} jobs, every 10th fails its first attempt (first pass = every job attempted once)`,
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
  return out;
}

/** Same-process pickup into an idle worker. */
function pickupTable({ results, options, showRatio }: Context): string[] {
  const out: string[] = [];
  if (Object.keys(results.pickup).length) {
    out.push(
      `Pickup latency into an idle worker, enqueue call start -> handler start, same process (${options.pickupSamples} samples per run)`,
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
  return out;
}

/** Single and bulk enqueue rates and CPU. */
function enqueueTable({ results, options, showRatio }: Context): string[] {
  const out: string[] = [];
  if (Object.keys(results.enqueue).length) {
    const e = options.enqueue;
    out.push(
      `Enqueue: single (${e.single} calls, one at a time) and bulk (${e.bulk} jobs in calls of ${e.batch}); CPU = node + db`,
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
  return out;
}

/** The one-glance summary the issue asks for (throughput, CPU, latency and the ratios), then issue 28's goals that this drain measured (`--goals` runs them all). */
function summaryTable({ results, options, showRatio }: Context): string[] {
  const out: string[] = [];
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
        results.meta.settings.systems.map((s) => {
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
    const { kept } = options;
    const drains = results.drain as unknown as DrainResults;
    const rows = goalRows(kept ? { kept: drains } : { notKept: drains }).filter((r) => r.holds !== null);
    out.push(
      "",
      `Issue 28's goals measured by this run (finished rows ${kept ? "kept" : "not kept"}; sizes smallest first)`,
    );
    out.push(renderGoals(rows));
    out.push("");
  }
  return out;
}

/** Two-process pickup per coordinator, and any errors either process saw. */
function latencyTable({ results }: Context): string[] {
  const out: string[] = [];
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
  return out;
}

/** The soak's memory over a long drain. */
function soakTable({ results }: Context): string[] {
  const out: string[] = [];
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
  return out;
}

/** Duplicate executions and errors the drains showed, pawl's claim diagnostics, failed measurements. */
function notes({ results }: Context): string[] {
  const out: string[] = [];
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
  if (results.failures.length) out.push(`failed measurements (skipped): ${results.failures.join("; ")}`);
  return out;
}

/** The report of a summarised run, as lines of text. */
export function renderReport(results: BenchResults, options: ReportOptions): string {
  const { systems } = results.meta.settings;
  const ctx: Context = { results, options, showRatio: systems.length > 1 && systems.includes("pawl") };
  return [
    header,
    drainTables,
    mixedTable,
    pickupTable,
    enqueueTable,
    summaryTable,
    latencyTable,
    soakTable,
    notes,
  ]
    .flatMap((section) => section(ctx))
    .join("\n");
}
