/**
 * Where a drain's node CPU goes: drains `--jobs` no-op jobs in this process (pawl's defaults, as the
 * bench's drain: no event listener on the job path) and, run under `node --cpu-prof`, summarises the
 * profile it leaves: the top self-time functions and the share of xstate, pg, garbage collection, idle and
 * pawl itself. Each drain also prints its node CPU by phase (start(), the first 1,000 jobs, the next 9,000,
 * the rest): how much of a fresh process's figure is warm-up. `--rounds N` drains N times in the same
 * process, each on a fresh schema with a fresh node: what the same drain costs once V8 has compiled it.
 *
 * ```sh
 * npm run build
 * node --cpu-prof --cpu-prof-dir=/tmp/prof --import tsx scripts/bench/profile-drain.ts --jobs 100000
 * npx tsx scripts/bench/profile-drain.ts --summarise /tmp/prof/<file>.cpuprofile
 * ```
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import pg from "pg";
import { createPawl } from "../../dist/src/index.js";
import { benchDatabaseUrl, ensureDatabase } from "./lib/common.js";
import { insertJobs, resetSchema } from "./pawl-drain.js";
import { benchHandler, benchPawlTracing, registerBenchTracing } from "./lib/bench-tracing.js";

const { values: flags } = parseArgs({
  options: {
    jobs: { type: "string", default: "100000" },
    concurrency: { type: "string", default: "10" },
    summarise: { type: "string" },
    top: { type: "string", default: "25" },
    rounds: { type: "string", default: "1" },
    "database-url": { type: "string" },
  },
});

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** The category of a frame, for the split. */
function category(f: ProfileNode["callFrame"]): string {
  if (f.functionName === "(garbage collector)") return "gc";
  if (f.functionName === "(idle)") return "idle";
  if (f.functionName === "(program)") return "program";
  if (f.url.includes("node_modules/xstate")) return "xstate";
  if (f.url.includes("node_modules/pg")) return "pg";
  if (f.url.includes("/dist/src/") || f.url.includes("/src/")) return "pawl";
  if (f.url.startsWith("node:") || f.url === "") return "node/v8";
  return "other";
}

/** Prints the self time by function and by category of a .cpuprofile. */
export function summarise(file: string, top: number): void {
  const p = JSON.parse(readFileSync(file, "utf8")) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  p.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (p.timeDeltas[i] ?? 0)));
  const byFn = new Map<string, number>();
  const byCat = new Map<string, number>();
  let total = 0;
  for (const [id, us] of self) {
    const f = byId.get(id)!.callFrame;
    const file = f.url.replace(/^.*\/(node_modules\/[^/]+|dist\/src|src)\//, "$1/");
    const key = `${f.functionName || "(anonymous)"} ${file}:${f.lineNumber + 1}`;
    byFn.set(key, (byFn.get(key) ?? 0) + us);
    byCat.set(category(f), (byCat.get(category(f)) ?? 0) + us);
    total += us;
  }
  const busy = total - (byCat.get("idle") ?? 0);
  const pct = (us: number, of: number) => ((100 * us) / of).toFixed(1).padStart(5) + "%";
  console.log(`profile ${(total / 1e6).toFixed(2)} s, busy ${(busy / 1e6).toFixed(2)} s`);
  for (const [c, us] of [...byCat].sort((a, b) => b[1] - a[1])) {
    console.log(
      `  ${c.padEnd(8)} ${pct(us, total)} of all  ${c === "idle" ? "" : pct(us, busy) + " of busy"}`,
    );
  }
  console.log(`top ${top} self time (share of busy):`);
  for (const [k, us] of [...byFn]
    .filter(([k]) => !k.startsWith("(idle)"))
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)) {
    console.log(`  ${pct(us, busy)}  ${k}`);
  }
}

if (flags.summarise) {
  summarise(flags.summarise, Number(flags.top));
} else {
  const url = benchDatabaseUrl(flags["database-url"]);
  await ensureDatabase(url);
  registerBenchTracing(); // PAWL_BENCH_TRACING=on: the SDK with a no-op exporter (lib/bench-tracing.ts)
  const rounds = Number(flags.rounds);
  for (let round = 1; round <= rounds; round++) {
    if (rounds > 1) console.log(`round ${round} of ${rounds}`);
    await drainOnce(url, Number(flags.jobs), Number(flags.concurrency));
  }
}

/** One drain of `jobs` no-op jobs on a fresh schema by a fresh node in this process; prints its figures. */
async function drainOnce(url: string, jobs: number, concurrency: number): Promise<void> {
  const schema = "bench_pawl_profile";
  await resetSchema(url, schema);
  const admin = new pg.Pool({ connectionString: url, max: 2 });
  await insertJobs(admin, schema, jobs);
  await admin.query(`VACUUM ANALYZE "${schema}".scheduler_job_queue`);
  const node = createPawl({
    connectionString: url,
    schema,
    concurrency,
    // PAWL_BENCH_TRACING=sdk-span: the SDK is registered, pawl does not trace, the handler starts a span.
    ...(benchPawlTracing ? {} : { tracing: false }),
  });
  // Node CPU by phase: a fresh process runs its first jobs interpreted and compiles the hot paths as it
  // goes (on background threads too, which process.cpuUsage() counts), so the per-job cost falls with the
  // job count until the code is warm. The phases show how much of a drain's figure that warm-up is.
  const phaseEnds = [1_000, 10_000, jobs].filter((n, i, all) => n <= jobs && all.indexOf(n) === i);
  const phaseCpu: number[] = [];
  const cpuNow = () => {
    const c = process.cpuUsage();
    return c.user + c.system;
  };
  let ran = 0;
  node.register(
    "noop",
    benchHandler((payload: { i: number }) => {
      ran += payload.i >= 0 ? 1 : 0;
      if (ran === phaseEnds[phaseCpu.length]) phaseCpu.push(cpuNow());
    }),
  );
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await node.start();
  const started = cpuNow();
  // Done when every job ran and the database holds none unfinished (as the bench's window).
  for (;;) {
    await new Promise((r) => setTimeout(r, 20));
    if (ran < jobs) continue;
    const { rows } = await admin.query<{ n: string }>(
      `SELECT count(*) AS n FROM "${schema}".scheduler_job_queue WHERE status <> 'SUCCEEDED'`,
    );
    if (Number(rows[0]!.n) === 0) break;
  }
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  await node.close();
  await admin.end();
  console.log(
    `${jobs} jobs in ${seconds.toFixed(2)} s: ${Math.round(jobs / seconds)} jobs/s, ` +
      `node CPU ${((cpu.user + cpu.system) / jobs).toFixed(1)} µs/job`,
  );
  const phases = phaseCpu.map((at, k) => {
    const from = k === 0 ? 0 : phaseEnds[k - 1]!;
    const spent = at - (k === 0 ? started : phaseCpu[k - 1]!);
    return `jobs ${from + 1}-${phaseEnds[k]} ${(spent / (phaseEnds[k]! - from)).toFixed(1)} µs/job`;
  });
  console.log(
    `node CPU by phase: start() ${((started - cpu0.user - cpu0.system) / 1000).toFixed(0)} ms; ${phases.join("; ")}`,
  );
}
