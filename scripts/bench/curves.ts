/**
 * `npm run bench -- --curves [--axes backlog,finished,processes,payload,queues,load,idle] [--plots docs/plots]`: how
 * pawl's rate moves as the tables grow, beside graphile-worker tuned where it has the same axis, in one
 * run. Each point runs in its own process (curve-drain.ts, idle-cost.ts) on the bench database:
 *
 * - backlog: 20,000 jobs at the head of 0, 100,000 and 1,000,000 more due jobs (pawl, graphile-worker);
 * - finished: 20,000 jobs beside 0, 1,000,000 and 10,000,000 finished rows kept (pawl; graphile-worker
 *   deletes what it completed, so it has no such axis);
 * - processes: 40,000 jobs run by 1, 2, 4 and 8 node processes of 10 slots each (pawl, graphile-worker),
 *   the window closing when the database shows them all completed;
 * - payload: 20,000 jobs of 100 B and 10 kB (pawl, graphile-worker);
 * - queues: 20,000 jobs spread over 1, 100 and 10,000 queues (pawl; a named queue in graphile-worker runs
 *   one job at a time, a different thing);
 * - load: pickup (enqueue to handler start) at 25%, 50% and 75% of the system's own maximum drain rate,
 *   measured in the same process just before (pawl, graphile-worker; loaded-pickup.ts);
 * - idle: transactions per second and database CPU per idle node, at 1, 10 and 100 nodes, without a
 *   coordinator and with others, as `idleCoordinators` names them (idle-axis.ts).
 *
 * A point's ratio is to the first point of its own line, measured in the same run. With `--plots DIR`
 * each axis is drawn as an SVG there (docs/benchmarks.md shows them).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { CurveDrainInput, CurveDrainResult } from "./curve-drain.js";
import { runIdleAxis, type IdlePoint } from "./idle-axis.js";
import type { LoadedPickupInput, LoadedPickupResult } from "./loaded-pickup.js";
import { runChild } from "./lib/child.js";
import { databaseName } from "./lib/common.js";
import { renderLineChart, shortNumber, type Series } from "./lib/svg-plot.js";
import { int, ratio, renderTable } from "./lib/table.js";
import type { SystemName } from "./systems/types.js";

/** The axes a curves run can measure. */
export const CURVE_AXES = ["backlog", "finished", "processes", "payload", "queues", "load", "idle"] as const;
export type CurveAxis = (typeof CURVE_AXES)[number];

interface Axis {
  name: Exclude<CurveAxis, "idle" | "load">;
  title: string;
  xLabel: string;
  xLog: boolean;
  points: readonly number[];
  systems: readonly SystemName[];
  input: (
    x: number,
  ) => Pick<CurveDrainInput, "backlog" | "finishedRows" | "payloadBytes" | "queues" | "processes">;
}

const none = { backlog: 0, finishedRows: 0, payloadBytes: 0, queues: 1 };
/** The pause between a point's set-up and its measurement (ms), the same for every point. */
const settleMs = 10_000;
const AXES: readonly Axis[] = [
  {
    name: "backlog",
    title: "20,000 jobs at the head of a due backlog",
    xLabel: "due jobs behind them",
    xLog: true,
    points: [0, 100_000, 1_000_000],
    systems: ["pawl", "graphile-tuned"],
    input: (x) => ({ ...none, backlog: x }),
  },
  {
    name: "finished",
    title: "20,000 jobs beside finished rows kept",
    xLabel: "finished rows in the table",
    xLog: true,
    points: [0, 1_000_000, 10_000_000],
    systems: ["pawl"],
    input: (x) => ({ ...none, finishedRows: x }),
  },
  {
    name: "processes",
    title: "40,000 jobs run by several node processes",
    xLabel: "node processes (10 slots each)",
    xLog: false,
    points: [1, 2, 4, 8],
    systems: ["pawl", "graphile-tuned"],
    input: (x) => ({ ...none, processes: x }),
  },
  {
    name: "payload",
    title: "20,000 jobs by payload size",
    xLabel: "payload bytes",
    xLog: true,
    points: [100, 10_000],
    systems: ["pawl", "graphile-tuned"],
    // The bench payload is {"i": n}, about 10 bytes: the pad makes up the rest.
    input: (x) => ({ ...none, payloadBytes: Math.max(0, x - 10) }),
  },
  {
    name: "queues",
    title: "20,000 jobs spread over queues",
    xLabel: "queues",
    xLog: true,
    points: [1, 100, 10_000],
    systems: ["pawl"],
    input: (x) => ({ ...none, queues: x }),
  },
];

/** One measured point of a drain axis. */
export interface CurvePoint {
  axis: CurveAxis;
  system: SystemName;
  x: number;
  result: CurveDrainResult;
}

/** The shares of the maximum the load axis offers. */
const LOADS = [0.25, 0.5, 0.75];

/** Runs the load axis: one child per system, each finding its own maximum first. */
async function loadAxis(
  url: string,
  plotsDir: string | undefined,
): Promise<{ system: SystemName; result: LoadedPickupResult }[]> {
  const database = databaseName(url);
  const out: { system: SystemName; result: LoadedPickupResult }[] = [];
  for (const system of ["pawl", "graphile-tuned"] as const) {
    process.stderr.write(`curves: load ${LOADS.join(", ")} of the maximum, ${system}\n`);
    const input: LoadedPickupInput = {
      system,
      url,
      concurrency: 10,
      maxJobs: 20_000,
      loads: LOADS,
      seconds: 10,
      warmupSeconds: 2,
      tickMs: 10,
    };
    out.push({ system, result: await runChild<LoadedPickupResult>("loaded-pickup.ts", input, { database }) });
  }
  console.log(
    "\nPickup under load (enqueue call to handler start, bulk enqueues every 10 ms, 10 s each, the first 2 s not sampled)",
  );
  console.log(
    renderTable(
      [
        "system",
        "maximum jobs/s",
        "load",
        "offered/s",
        "achieved/s",
        "p50 ms",
        "p90 ms",
        "p99 ms",
        "max ms",
        "node / db CPU us/job",
        "run twice",
        "other load",
      ],
      out.flatMap(({ system, result }) =>
        result.points.map((p) => [
          system,
          int(result.maxPerSecond),
          `${Math.round(p.load * 100)}%`,
          int(p.offeredPerSecond),
          int(p.achievedPerSecond),
          p.p50.toFixed(1),
          p.p90.toFixed(1),
          p.p99.toFixed(1),
          p.max.toFixed(1),
          `${Math.round(p.nodeUs)} / ${Math.round(p.dbUs)}`,
          String(p.duplicates),
          `${Math.round(p.otherLoadPct)}%`,
        ]),
      ),
    ),
  );
  if (plotsDir) {
    const series: Series[] = out.flatMap(({ system, result }) =>
      (["p50", "p99"] as const).map((q) => ({
        name: `${system} ${q}`,
        points: result.points.map((p) => [p.load * 100, p[q]] as const),
      })),
    );
    mkdirSync(plotsDir, { recursive: true });
    writeFileSync(
      join(plotsDir, "curve-load.svg"),
      renderLineChart({
        title: "Pickup under load",
        xLabel: "% of the system's maximum drain rate",
        yLabel: "ms from enqueue to handler start",
        xLog: false,
        yLog: true,
        series,
      }),
    );
  }
  return out;
}

/** Runs the chosen axes on `url` and prints their tables; returns every point for --json-out. */
export async function runCurves(
  url: string,
  axes: readonly CurveAxis[],
  plotsDir: string | undefined,
  runs = 1,
  idleCoordinators: readonly string[] = ["none", "postgres"],
): Promise<{
  points: CurvePoint[];
  load: { system: SystemName; result: LoadedPickupResult }[];
  idle: IdlePoint[];
}> {
  const database = databaseName(url);
  const points: CurvePoint[] = [];
  for (const axis of AXES.filter((a) => axes.includes(a.name))) {
    // Every point of the axis once per run, the runs interleaved, so a slow stretch of the machine lands
    // on several points instead of on all the runs of one; each point keeps its median run.
    const measured = new Map<string, CurveDrainResult[]>();
    const pointKey = (system: SystemName, x: number) => `${system} ${x}`;
    for (let run = 1; run <= runs; run++) {
      for (const system of axis.systems) {
        for (const x of axis.points) {
          process.stderr.write(`curves: [run ${run}/${runs}] ${axis.name} = ${shortNumber(x)}, ${system}\n`);
          const jobs = axis.name === "processes" ? 40_000 : 20_000;
          const input: CurveDrainInput = { system, url, jobs, concurrency: 10, ...axis.input(x) };
          // Set up in one process, measured in a fresh one (curve-drain.ts says why), after the same
          // pause for every point so the set-up's writes and their reclaim settle first.
          await runChild<null>("curve-drain.ts", { ...input, phase: "prepare" }, { database });
          await new Promise((r) => setTimeout(r, settleMs));
          const result = await runChild<CurveDrainResult>("curve-drain.ts", input, { database });
          const key = pointKey(system, x);
          measured.set(key, [...(measured.get(key) ?? []), result]);
        }
      }
    }
    for (const system of axis.systems) {
      for (const x of axis.points) {
        const all = measured.get(pointKey(system, x))!;
        const sorted = [...all].sort((a, b) => a.jobsPerSecond - b.jobsPerSecond);
        const median = sorted[Math.floor((sorted.length - 1) / 2)]!;
        // A duplicate in any run counts: the median run must not hide one.
        const duplicates = all.reduce((n, r) => n + r.duplicates, 0);
        points.push({ axis: axis.name, system, x, result: { ...median, duplicates } });
      }
    }
    const mine = points.filter((p) => p.axis === axis.name);
    const rows = mine.map((p) => {
      const base = mine.find((q) => q.system === p.system)!;
      return [
        p.system,
        shortNumber(p.x),
        int(p.result.jobsPerSecond),
        ratio(p.result.jobsPerSecond / base.result.jobsPerSecond),
        p.result.nodeUs === null ? "-" : int(p.result.nodeUs),
        int(p.result.dbUs),
        `${Math.round(p.result.otherLoadPct)}%`,
        String(p.result.duplicates),
      ];
    });
    console.log(`\n${axis.title}`);
    console.log(
      renderTable(
        [
          "system",
          axis.xLabel,
          "jobs/s",
          "vs first point",
          "node CPU us/job",
          "db CPU us/job",
          "other load",
          "run twice",
        ],
        rows,
      ),
    );
    if (plotsDir) {
      const series: Series[] = axis.systems.map((system) => ({
        name: system,
        points: mine.filter((p) => p.system === system).map((p) => [p.x, p.result.jobsPerSecond] as const),
      }));
      mkdirSync(plotsDir, { recursive: true });
      writeFileSync(
        join(plotsDir, `curve-${axis.name}.svg`),
        renderLineChart({
          title: axis.title,
          xLabel: axis.xLabel,
          yLabel: "jobs/s",
          xLog: axis.xLog,
          series,
        }),
      );
    }
  }
  const load = axes.includes("load") ? await loadAxis(url, plotsDir) : [];
  const idle = axes.includes("idle") ? await runIdleAxis(url, idleCoordinators) : [];
  return { points, load, idle };
}
