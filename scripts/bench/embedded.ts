/**
 * The embedded database against a PostgreSQL server, in one run (docs/embedded.md records the numbers):
 *
 * - boot: createPawl to a migrated schema (for the embedded database: compiling PGlite's WebAssembly,
 *   initdb, the socket server and the migrations; for the server: a connection and the migrations);
 * - enqueue: 10,000 jobs in one enqueueMany;
 * - drain: a node at the default concurrency runs the 10,000 no-op jobs; the clock stops at the last
 *   `job:succeeded` (the outcome is written, not just returned).
 *
 *   npx tsx scripts/bench/embedded.ts                 # 10,000 jobs, concurrency 10
 *   npx tsx scripts/bench/embedded.ts 20000 50        # jobs, concurrency
 *   DATABASE_URL=postgres://... npx tsx scripts/bench/embedded.ts
 *
 * The server is DATABASE_URL, else the local `test` database; a schema of its own is dropped afterwards.
 * Each system runs in a fresh child process, so the embedded boot is a cold one (WebAssembly compiled
 * anew) and neither run inherits the other's heap.
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { randomBytes } from "node:crypto";
import { cpus, loadavg } from "node:os";
import pg from "pg";
import { createPawl } from "../../src/index.js";

interface Result {
  system: string;
  bootMs: number;
  enqueueMs: number;
  drainMs: number;
  jobsPerSecond: number;
}

const serverUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";

async function measure(url: string, jobs: number, concurrency: number): Promise<Result> {
  const schema = `bench_embedded_${randomBytes(3).toString("hex")}`;
  const t0 = performance.now();
  const pawl = createPawl({ connectionString: url, schema, concurrency });
  await pawl.migrate();
  const bootMs = performance.now() - t0;
  try {
    const t1 = performance.now();
    await pawl.enqueueMany(Array.from({ length: jobs }, (_, i) => ({ type: "noop", payload: { i } })));
    const enqueueMs = performance.now() - t1;
    let done = 0;
    let finish: () => void = () => {};
    const finished = new Promise<void>((resolve) => (finish = resolve));
    pawl.register("noop", () => undefined);
    pawl.on("job:succeeded", () => {
      if (++done === jobs) finish();
    });
    const t2 = performance.now();
    await pawl.start();
    await finished;
    const drainMs = performance.now() - t2;
    return {
      system: url.startsWith("pglite://") ? "embedded (PGlite, in memory)" : "PostgreSQL server",
      bootMs,
      enqueueMs,
      drainMs,
      jobsPerSecond: jobs / (drainMs / 1000),
    };
  } finally {
    await pawl.close();
    if (!url.startsWith("pglite://")) {
      const pool = new pg.Pool({ connectionString: url, max: 1 });
      await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await pool.end();
    }
  }
}

const [, , jobsArg, concurrencyArg, childUrl] = process.argv;
const jobs = Number(jobsArg ?? 10_000);
const concurrency = Number(concurrencyArg ?? 10);

if (childUrl !== undefined) {
  // A child: one system, one JSON line.
  console.log(JSON.stringify(await measure(childUrl, jobs, concurrency)));
  process.exit(0);
}

const results: Result[] = [];
for (const url of ["pglite://memory", serverUrl]) {
  const child = spawnSync(
    process.execPath,
    ["--import", "tsx", fileURLToPath(import.meta.url), String(jobs), String(concurrency), url],
    { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] },
  );
  const line = child.stdout.trim().split("\n").pop() ?? "";
  if (child.status !== 0 || !line.startsWith("{")) {
    console.error(`the run on ${url.startsWith("pglite://") ? url : "the server"} failed`);
    process.exit(1);
  }
  results.push(JSON.parse(line) as Result);
}
console.log(
  `${jobs} no-op jobs, concurrency ${concurrency}, ${cpus().length} cores, load average ${loadavg()[0]!.toFixed(1)}`,
);
console.log("| system | boot to migrated | enqueue (one enqueueMany) | drain | jobs/s |");
console.log("| --- | ---: | ---: | ---: | ---: |");
for (const r of results) {
  console.log(
    `| ${r.system} | ${(r.bootMs / 1000).toFixed(2)} s | ${(r.enqueueMs / 1000).toFixed(2)} s | ` +
      `${(r.drainMs / 1000).toFixed(2)} s | ${Math.round(r.jobsPerSecond)} |`,
  );
}
