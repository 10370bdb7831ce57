/**
 * `npm run bench`: pawl's benchmark. Drains pre-inserted no-op jobs (20,000 at concurrency 10 by
 * default) and measures pickup latency into an idle node. Flags: --jobs N, --concurrency N, --runs N,
 * --samples N, --json. Uses DATABASE_URL (default: the local `postgres` database) and schema pawl_bench.
 */
import { parseArgs } from "node:util";
import { drain, localLatency } from "./pawl-drain.js";

const { values } = parseArgs({
  options: {
    jobs: { type: "string", default: "20000" },
    concurrency: { type: "string", default: "10" },
    runs: { type: "string", default: "3" },
    samples: { type: "string", default: "200" },
    json: { type: "boolean", default: false },
  },
});
const url = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const schema = "pawl_bench";
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

const runs = [];
for (let i = 0; i < Number(values.runs); i++) {
  runs.push(await drain(url, schema, Number(values.jobs), Number(values.concurrency)));
}
const latency = await localLatency(url, schema, Number(values.samples));
const result = {
  drain: {
    jobs: Number(values.jobs),
    concurrency: Number(values.concurrency),
    runs: runs.map((r) => Math.round(r.jobsPerSecond)),
    jobsPerSecond: Math.round(median(runs.map((r) => r.jobsPerSecond))),
    cpuMicrosPerJob: Math.round(median(runs.map((r) => r.cpuMicrosPerJob))),
  },
  localPickupLatencyMs: { p50: +latency.p50.toFixed(2), p99: +latency.p99.toFixed(2) },
};
if (values.json) {
  console.log(JSON.stringify(result, null, 2));
} else {
  console.log(`drain ${result.drain.jobs} no-op jobs at concurrency ${result.drain.concurrency}:`);
  console.log(
    `  jobs/s (median of ${runs.length}): ${result.drain.jobsPerSecond}   runs: ${result.drain.runs.join(", ")}`,
  );
  console.log(`  CPU per job: ${result.drain.cpuMicrosPerJob} us (node process)`);
  console.log(`pickup latency, local submission into an idle node (${values.samples} samples):`);
  console.log(`  p50 ${result.localPickupLatencyMs.p50} ms   p99 ${result.localPickupLatencyMs.p99} ms`);
}
process.exit(0);
