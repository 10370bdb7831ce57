/**
 * The parent side of `npm run bench -- --soak` (soak.ts is the child): where it runs, the table it
 * prints, and the p99-per-window plot.
 *
 * `--own-cluster PORT` runs the soak on a PostgreSQL cluster of its own, created with Debian's
 * `pg_createcluster` (default settings, so autovacuum on; trust on 127.0.0.1) and dropped afterwards
 * (`--keep-cluster` keeps it). That cluster logs every statement over 100 ms, which the soak reads per
 * window. Without it the soak runs on the bench database (`--database-url`), and only the node's own
 * timing of its claim statements is reported.
 */
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { runChild } from "./lib/child.js";
import { renderLineChart, type Series } from "./lib/svg-plot.js";
import { ensureDatabase } from "./lib/common.js";
import type { SoakInput, SoakResult } from "./soak.js";

/** What `--soak` was asked for. */
export interface SoakOptions {
  url: string;
  minutes: number;
  rate: number;
  keys: number;
  concurrency: number;
  ownClusterPort: number | null;
  keepCluster: boolean;
  dist: string | null;
  jsonOut: string | null;
}

const clusterName = (port: number) => `pawl_soak_${port}`;

/** Creates (if missing) and starts the soak's own cluster; returns its URL and log file. */
function startOwnCluster(port: number): { url: string; logFile: string } {
  const name = clusterName(port);
  const listed = execFileSync("pg_lsclusters", ["-h"], { encoding: "utf8" });
  if (!listed.split("\n").some((l) => l.split(/\s+/)[1] === name)) {
    execFileSync("pg_createcluster", [
      ...["15", name, "-p", String(port)],
      ...["-o", "log_min_duration_statement=100"],
      ...["-o", "max_connections=200"],
      ...["--", "--auth-host=trust", "--auth-local=trust"],
    ]);
  }
  execFileSync("pg_ctlcluster", ["15", name, "start"]);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/pawl_soak`,
    logFile: `/var/log/postgresql/postgresql-15-${name}.log`,
  };
}

function dropOwnCluster(port: number): void {
  execFileSync("pg_dropcluster", ["15", clusterName(port), "--stop"]);
}

/** Runs the soak and prints its windows; returns the result. */
export async function runSoak(o: SoakOptions, progress: (line: string) => void): Promise<SoakResult> {
  const own = o.ownClusterPort === null ? null : startOwnCluster(o.ownClusterPort);
  const url = own?.url ?? o.url;
  await ensureDatabase(url);
  const input: SoakInput = {
    url,
    minutes: o.minutes,
    rate: o.rate,
    keys: o.keys,
    concurrency: o.concurrency,
    windowSeconds: 30,
    logFile: own?.logFile ?? null,
    dist: o.dist,
  };
  progress(
    `soak: ${o.minutes} min at ${o.rate} jobs/s, ${o.keys} keys, on ${own ? `own cluster :${o.ownClusterPort}` : url}`,
  );
  try {
    const result = await runChild<SoakResult>("soak.ts", input, {
      database: new URL(url).pathname.slice(1),
      extraExecArgv: ["--expose-gc"],
      timeoutMs: (o.minutes + 10) * 60_000,
    });
    if (o.jsonOut) writeFileSync(o.jsonOut, JSON.stringify(result, null, 2) + "\n");
    return result;
  } finally {
    if (own && !o.keepCluster) dropOwnCluster(o.ownClusterPort as number);
  }
}

/** The soak's windows as a text table, and the run's totals. */
export function soakReport(r: SoakResult): string {
  const out = [
    "| s | pickup p50 ms | p99 ms | keyed p99 ms | jobs run | heap MB (after GC) | table MB | dead tuples | claims > 100 ms (node) | slowest claim ms | logged > 100 / > 500 ms | slowest logged |",
    "|---|---|---|---|---|---|---|---|---|---|---|",
  ];
  for (const w of r.windows) {
    const top = w.loggedSlow?.top[0];
    out.push(
      `| ${w.at} | ${w.pickupP50} | ${w.pickupP99} | ${w.keyedP99 ?? "-"} | ${w.jobsRun} | ${w.heapAfterGcMB} | ${w.tableMB} | ${w.deadTuples} | ` +
        `${w.claims.over100}${w.claims.timedOut ? ` (${w.claims.timedOut} timed out)` : ""} | ${w.claims.maxMs} | ` +
        `${w.loggedSlow ? `${w.loggedSlow.over100} / ${w.loggedSlow.over500}` : "-"} | ${top ? `${top.ms} ${top.what}` : "-"} |`,
    );
  }
  out.push(
    "",
    `enqueued ${r.enqueued}, succeeded ${r.succeeded} (finished rows ${r.finishedRows}), duplicates ${r.duplicates}, ` +
      `missing ${r.missing}; waitFor ${r.waitFor.returned}/${r.waitFor.called} returned (${r.waitFor.failed} failed); ` +
      `recurring fires ${r.ticks}; heap growth ${r.heapGrowthMB} MB`,
  );
  if (r.errors.length > 0) out.push(`errors: ${r.errors.join("; ")}`);
  return out.join("\n");
}

/**
 * The p99-per-window plot of several soak results (`label=file.json`, comma separated) as SVG: one line
 * per run, log scale (a stall reads seconds beside a normal window's tens of milliseconds).
 */
export function soakPlot(spec: string, title: string): string {
  const series: Series[] = spec.split(",").map((part) => {
    const [name, file] = part.split("=") as [string, string];
    const r = JSON.parse(readFileSync(file, "utf8")) as SoakResult;
    return {
      name,
      points: r.windows.map((w, i) => [(i + 1) * r.input.windowSeconds, Math.max(1, w.pickupP99)] as const),
    };
  });
  return renderLineChart({
    title,
    xLabel: "seconds into the run",
    yLabel: "pickup p99 (ms)",
    yLog: true,
    series,
  });
}
