/**
 * The console's pages at 1,000,000 jobs, measured in a real browser (docs/console.md records the table):
 *
 * 1. a schema of its own in the bench database is migrated and filled in SQL (`INSERT ... SELECT
 *    generate_series`): 1,000,000 live jobs (99% PENDING over three priorities, 1% RUNNING under a node
 *    that is gone, 40 types, 8 queues, payloads with a customer and an order number) and 200,000 finished
 *    ones (5% DEAD with an error, finished over the last two hours); a workflow, a paused queue and a
 *    schedule through the API; then ANALYZE;
 * 2. a node starts (it registers one type that has no jobs, so it claims nothing) and serves the console
 *    (read-only) on a local port;
 * 3. Debian's chromium (headless, through playwright-core) loads each page once to warm up, then five
 *    times; the navigation timing of each load (responseEnd, domContentLoadedEventEnd, loadEventEnd, ms
 *    from navigation start) is kept, and the medians are printed as a Markdown table with the machine's
 *    load average.
 *
 *   npx tsx scripts/bench/console-pages.ts                 # 1,000,000 live + 200,000 finished
 *   npx tsx scripts/bench/console-pages.ts 100000 20000    # smaller
 *   npx tsx scripts/bench/console-pages.ts --keep          # keep the schema (to EXPLAIN; drop it yourself)
 *   PAWL_CHROMIUM=/path/to/chromium BENCH_DATABASE_URL=postgres://... npx tsx scripts/bench/console-pages.ts
 *
 * The schema is dropped at the end (also on failure), unless `--keep`. Not a test: it takes a minute or two.
 */
import { randomBytes } from "node:crypto";
import { cpus, loadavg } from "node:os";
import pg from "pg";
import { createPawl } from "../../src/index.js";
import { tablesFor } from "../../src/db/sql.js";
import { createConsole, createInspector, createMetrics, serveMetrics } from "../../observability/index.js";
import { benchDatabaseUrl, ensureDatabase } from "./lib/common.js";
import { findChromium, launchChromium } from "../lib/chromium.js";

const args = process.argv.slice(2).filter((a) => a !== "--keep");
/** `--keep`: leave the schema in place (its name is printed) to EXPLAIN a page's reads afterwards. */
const keep = process.argv.includes("--keep");
const live = Number(args[0] ?? 1_000_000);
const finished = Number(args[1] ?? 200_000);
const runs = 5;

function chromiumPath(): string {
  const found = findChromium();
  if (!found) throw new Error("no chromium found: apt-get install -y chromium, or set PAWL_CHROMIUM");
  return found;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

async function fill(pool: pg.Pool, schema: string): Promise<void> {
  const t = tablesFor(schema);
  const started = performance.now();
  await pool.query(
    `INSERT INTO ${t.jobs} (type, queue, payload, priority, status, scheduled_time, attempts, picked_by, picked_at)
     SELECT 'bench.t' || (g % 40), 'q' || (g % 8),
            jsonb_build_object('customer', 'customer-' || (g % 5000), 'order', g,
                               'note', 'order ' || g || ' of customer-' || (g % 5000)),
            (ARRAY[0, 10, 50])[1 + g % 3],
            CASE WHEN g % 100 = 0 THEN 'RUNNING' ELSE 'PENDING' END,
            now() - (g % 3600) * interval '1 second',
            CASE WHEN g % 100 = 0 THEN 1 ELSE 0 END,
            CASE WHEN g % 100 = 0 THEN 'bench-node-gone' END,
            CASE WHEN g % 100 = 0 THEN now() - interval '1 minute' END
     FROM generate_series(1, $1::int) g`,
    [live],
  );
  await pool.query(
    `INSERT INTO ${t.finished} (id, type, queue, payload, priority, status, scheduled_time, attempts, max_attempts,
                                errors, result, created_at, updated_at, finished_at)
     SELECT nextval(pg_get_serial_sequence('${t.jobs}', 'id')), 'bench.t' || (g % 40), 'q' || (g % 8),
            jsonb_build_object('customer', 'customer-' || (g % 5000), 'order', 2000000 + g),
            10, CASE WHEN g % 20 = 0 THEN 'DEAD' ELSE 'SUCCEEDED' END,
            now() - interval '3 hours', CASE WHEN g % 20 = 0 THEN 3 ELSE 1 END, 3,
            CASE WHEN g % 20 = 0
                 THEN jsonb_build_array(jsonb_build_object('attempt', 3, 'at', now(), 'name', 'Error',
                                                           'message', 'upstream answered 503'))
                 ELSE '[]'::jsonb END,
            CASE WHEN g % 20 = 0 THEN NULL ELSE '{"ok": true}'::jsonb END,
            now() - interval '3 hours', now(), now() - (g % 7200) * interval '1 second'
     FROM generate_series(1, $1::int) g`,
    [finished],
  );
  await pool.query(`ANALYZE ${t.jobs}`);
  await pool.query(`ANALYZE ${t.finished}`);
  console.error(
    `filled ${live} live + ${finished} finished jobs in ${Math.round(performance.now() - started)} ms`,
  );
}

async function main(): Promise<void> {
  const url = benchDatabaseUrl();
  await ensureDatabase(url);
  const schema = `bench_console_${randomBytes(3).toString("hex")}`;
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  const node = createPawl({ connectionString: url, schema, concurrency: 2 });
  let browser: Awaited<ReturnType<typeof launchChromium>> | undefined;
  let server: Awaited<ReturnType<typeof serveMetrics>> | undefined;
  try {
    await node.migrate();
    await fill(pool, schema);
    // Things the other pages show: a workflow nobody runs, a paused queue, a schedule.
    const wf = await node.workflow({
      name: "bench-etl",
      jobs: [
        { name: "extract", type: "bench.etl" },
        { name: "transform", type: "bench.etl", dependsOn: ["extract"] },
        { name: "load", type: "bench.etl", dependsOn: ["transform"] },
      ],
    });
    await node.pauseQueue("q7");
    await node.schedule("bench-nightly", "0 3 * * *", {}, { type: "bench.t1" });
    node.register("bench.idle", async () => undefined);
    await node.start();
    await node.clusterServices?.heartbeat.runOnce();
    server = await serveMetrics(createMetrics(node), {
      port: 0,
      inspector: createInspector(node),
      console: createConsole(node),
    });
    const origin = server.url.replace(/\/metrics$/, "");
    const t = tablesFor(schema);
    const mid = (
      await pool.query<{ id: string }>(`SELECT id::text FROM ${t.jobs} WHERE id = $1`, [Math.floor(live / 2)])
    ).rows[0]!.id;
    const dead = (
      await pool.query<{ id: string }>(`SELECT id::text FROM ${t.finished} WHERE status = 'DEAD' LIMIT 1`)
    ).rows[0]!.id;

    const pages: [string, string][] = [
      ["overview", "/console"],
      ["jobs", "/console/jobs"],
      ["jobs, status=PENDING", "/console/jobs?status=PENDING"],
      ["jobs, status=DEAD", "/console/jobs?status=DEAD"],
      ["jobs, type and queue", "/console/jobs?type=bench.t7&queue=q7"],
      ["jobs, before=500000", "/console/jobs?before=500000"],
      ["jobs, text (common: customer-42)", "/console/jobs?text=customer-42"],
      ["jobs, text (absent)", "/console/jobs?text=no-such-text"],
      ["jobs, type and text", "/console/jobs?type=bench.t3&text=customer-4243"],
      ["a PENDING job (explain)", `/console/jobs/${mid}`],
      ["a DEAD job (explain)", `/console/jobs/${dead}`],
      ["dead letters", "/console/dlq"],
      ["flows", "/console/flows"],
      ["a workflow", `/console/flows/${wf.flowId}`],
      ["paused", "/console/paused"],
      ["schedules", "/console/schedules"],
      ["nodes", "/console/nodes"],
      ["breakers & permits", "/console/breakers"],
      ["actors", "/console/actors"],
    ];

    browser = await launchChromium(chromiumPath());
    const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
    const rows: string[] = [];
    for (const [name, path] of pages) {
      const timings: { responseEnd: number; dom: number; load: number }[] = [];
      for (let i = 0; i <= runs; i++) {
        const res = await page.goto(`${origin}${path}`, { waitUntil: "load" });
        if (res?.status() !== 200) throw new Error(`${path}: HTTP ${res?.status()}`);
        const nav = await page.evaluate(() => {
          // Runs in the page: the browser's Navigation Timing entry (this file is typed without the DOM).
          type Nav = { responseEnd: number; domContentLoadedEventEnd: number; loadEventEnd: number };
          const timing = performance as unknown as { getEntriesByType(type: string): Nav[] };
          const n = timing.getEntriesByType("navigation")[0]!;
          return { responseEnd: n.responseEnd, dom: n.domContentLoadedEventEnd, load: n.loadEventEnd };
        });
        if (i > 0) timings.push(nav); // the first load warms the caches up
      }
      const m = (k: "responseEnd" | "dom" | "load") => median(timings.map((x) => x[k])).toFixed(1);
      rows.push(
        `| ${name} | \`${path.replace(/\/jobs\/\d+$/, "/jobs/<id>").replace(/\/flows\/\d+$/, "/flows/<id>")}\` | ${m("responseEnd")} | ${m("dom")} | ${m("load")} |`,
      );
      console.error(`${name}: ${m("responseEnd")} / ${m("dom")} / ${m("load")} ms`);
    }
    const [l1, l5, l15] = loadavg().map((x) => x.toFixed(2));
    console.log(
      `\n${live.toLocaleString("en")} live + ${finished.toLocaleString("en")} finished jobs; ${cpus().length} CPUs; load average ${l1}, ${l5}, ${l15}; medians of ${runs} loads after one warm-up\n`,
    );
    console.log("| Page | Path | responseEnd (ms) | DOMContentLoaded (ms) | load (ms) |");
    console.log("| ---- | ---- | ---------------: | --------------------: | --------: |");
    for (const r of rows) console.log(r);
  } finally {
    await browser?.close().catch(() => undefined);
    await server?.close().catch(() => undefined);
    await node.close().catch(() => undefined);
    if (keep) console.error(`kept schema ${schema}`);
    else await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
    await pool.end();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
