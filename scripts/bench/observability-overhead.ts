/**
 * The overhead of metrics and inspection on throughput: drains pre-inserted no-op jobs (20,000 at
 * concurrency 10 by default, the `npm run bench` drain) with observability off, and on (createMetrics and
 * createInspector mounted on an HTTP server, /metrics scraped every --scrape-ms, 1 s by default: fifteen
 * times more often than Prometheus' default), alternating the two, and prints the median jobs/s of each
 * and the overhead in percent, both from the medians and as the median of the ratios of adjacent runs
 * (which cancels slow drift of a shared machine; the load average is printed too). `--stream` adds a third variant with one SSE client following every actor
 * (a debugging session, not a steady state). A warm-up drain runs first and is not counted.
 *
 *   npx tsx scripts/bench/observability-overhead.ts [--jobs N] [--concurrency N] [--runs N] [--scrape-ms N] [--stream] [--json]
 *
 * Uses DATABASE_URL (default: the local `postgres` database) and schema pawl_bench_obs.
 */
import { createServer, get, type Server } from "node:http";
import { loadavg } from "node:os";
import type { AddressInfo } from "node:net";
import { parseArgs } from "node:util";
import pg from "pg";
import { createPawl } from "../../src/index.js";
import { createInspector, createMetrics, metricsHandler } from "../../observability/index.js";

type Variant = "off" | "on" | "on+stream";

interface Run {
  variant: Variant;
  jobsPerSecond: number;
  cpuMicrosPerJob: number;
  scrapes: number;
  streamed: number;
}

const { values } = parseArgs({
  options: {
    jobs: { type: "string", default: "20000" },
    concurrency: { type: "string", default: "10" },
    runs: { type: "string", default: "3" },
    "scrape-ms": { type: "string", default: "1000" },
    stream: { type: "boolean", default: false },
    json: { type: "boolean", default: false },
  },
});
const url = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const schema = "pawl_bench_obs";
const jobs = Number(values.jobs);
const concurrency = Number(values.concurrency);
const runs = Number(values.runs);
const scrapeMs = Number(values["scrape-ms"]);

async function prepare(): Promise<void> {
  const setup = createPawl({ connectionString: url, schema });
  await setup.migrate();
  await setup.close();
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  try {
    await pool.query(
      `TRUNCATE "${schema}".scheduler_job_queue, "${schema}".scheduler_job_finished, "${schema}".scheduler_resource_permit`,
    );
    for (let done = 0; done < jobs; done += 10_000) {
      await pool.query(
        `INSERT INTO "${schema}".scheduler_job_queue (type, payload, scheduled_time)
         SELECT 'noop', '{}'::jsonb, now() - interval '1 second' FROM generate_series(1, $1)`,
        [Math.min(10_000, jobs - done)],
      );
    }
    await pool.query(`VACUUM ANALYZE "${schema}".scheduler_job_queue`);
  } finally {
    await pool.end();
  }
}

async function drain(variant: Variant): Promise<Run> {
  await prepare();
  const node = createPawl({ connectionString: url, schema, concurrency });
  node.register("noop", () => undefined);
  let done = 0;
  let finish: () => void = () => {};
  const finished = new Promise<void>((resolve) => (finish = resolve));
  node.on("job:succeeded", () => {
    if (++done === jobs) finish();
  });

  let server: Server | null = null;
  let scrapes = 0;
  let streamed = 0;
  const stops: (() => void)[] = [];
  if (variant !== "off") {
    const metrics = createMetrics(node);
    const inspector = createInspector(node);
    const serveMetrics = metricsHandler(metrics, { path: "/metrics" });
    server = createServer((req, res) => inspector.handler(req, res, () => serveMetrics(req, res)));
    await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const scraper = setInterval(() => {
      void fetch(`${base}/metrics`)
        .then((r) => r.text())
        .then(() => scrapes++);
    }, scrapeMs);
    stops.push(
      () => clearInterval(scraper),
      () => metrics.close(),
      () => inspector.close(),
    );
    if (variant === "on+stream") {
      node.on("node:started", () => {
        const req = get(`${base}/debug/actors/stream?types=event,snapshot`, (res) => {
          res.on("data", (chunk: Buffer) => (streamed += chunk.toString().split("\n\n").length - 1));
        });
        req.on("error", () => {});
        stops.push(() => req.destroy());
      });
    }
  }

  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await node.start();
  await finished;
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  for (const stop of stops) stop();
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  await node.close();
  return {
    variant,
    jobsPerSecond: jobs / seconds,
    cpuMicrosPerJob: (cpu.user + cpu.system) / jobs,
    scrapes,
    streamed,
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const variants: Variant[] = values.stream ? ["off", "on", "on+stream"] : ["off", "on"];

await drain("off"); // warm-up: JIT, connection setup, table and index pages
const results: Run[] = [];
for (let i = 0; i < runs; i++) {
  // Alternating (and rotating the order) keeps slow drift of the machine out of the comparison.
  const order = i % 2 === 0 ? variants : [...variants].reverse();
  for (const v of order) results.push(await drain(v));
}

const summary = Object.fromEntries(
  variants.map((v) => {
    const mine = results.filter((r) => r.variant === v);
    return [
      v,
      {
        runs: mine.map((r) => Math.round(r.jobsPerSecond)),
        jobsPerSecond: Math.round(median(mine.map((r) => r.jobsPerSecond))),
        cpuMicrosPerJob: Math.round(median(mine.map((r) => r.cpuMicrosPerJob))),
        scrapes: mine.reduce((n, r) => n + r.scrapes, 0),
        streamedEvents: mine.reduce((n, r) => n + r.streamed, 0),
      },
    ];
  }),
) as Record<
  Variant,
  { runs: number[]; jobsPerSecond: number; cpuMicrosPerJob: number; scrapes: number; streamedEvents: number }
>;
const overhead = (v: Variant) =>
  +((1 - summary[v].jobsPerSecond / summary.off.jobsPerSecond) * 100).toFixed(1);
const cpuOverhead = (v: Variant) =>
  +((summary[v].cpuMicrosPerJob / summary.off.cpuMicrosPerJob - 1) * 100).toFixed(1);
/** The median over rounds of (1 - on/off) for the runs of one round (adjacent in time). */
const pairedOverhead = (v: Variant) => {
  const off = results.filter((r) => r.variant === "off");
  const on = results.filter((r) => r.variant === v);
  const ratios = on.map((r, i) => 1 - r.jobsPerSecond / (off[i] as Run).jobsPerSecond);
  return +(median(ratios) * 100).toFixed(1);
};
const load = loadavg()
  .map((l) => l.toFixed(2))
  .join(" ");

if (values.json) {
  const out = {
    jobs,
    concurrency,
    runs,
    scrapeMs,
    loadAverage: load,
    ...summary,
    overheadPercent: overhead("on"),
    pairedOverheadPercent: pairedOverhead("on"),
    cpuOverheadPercent: cpuOverhead("on"),
  };
  console.log(JSON.stringify(out, null, 2));
} else {
  console.log(
    `drain ${jobs} no-op jobs at concurrency ${concurrency}, median of ${runs} (scrape every ${scrapeMs} ms):`,
  );
  for (const v of variants) {
    const s = summary[v];
    const extra =
      v === "off"
        ? ""
        : `   overhead ${overhead(v)}% (paired ${pairedOverhead(v)}%, CPU/job ${cpuOverhead(v)}%)`;
    console.log(
      `  ${v.padEnd(10)} ${String(s.jobsPerSecond).padStart(6)} jobs/s  ${s.cpuMicrosPerJob} us CPU/job   runs: ${s.runs.join(", ")}${extra}`,
    );
  }
  console.log(`load average at the end: ${load}`);
}
process.exit(0);
