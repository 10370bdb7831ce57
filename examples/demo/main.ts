/**
 * The demo: one pawl node, fed a steady stream of four kinds of job, each showing one behaviour of the
 * runtime. It runs on DATABASE_URL, else the local PostgreSQL, else (no server accepts it: not running,
 * a refused password, no such database) the embedded database, and says which and why in its first line
 * (database.ts). Progress (counts per event) is printed every second until Ctrl-C;
 * the first Ctrl-C drains the node gracefully, a second aborts running jobs at once.
 *
 *   npm start                         # until Ctrl-C
 *   npm start -- --once               # 5 seconds, then a graceful stop (CI); DEMO_DURATION_MS sets the time
 */
import { randomBytes } from "node:crypto";
import { createPawl, type JobContext } from "pawl";
import { lifecycle, sleep } from "../shared/lifecycle.js";
import { chooseDatabase } from "./database.js";
import {
  connectStatelyInspector,
  createConsole,
  createInspector,
  createMetrics,
  serveMetrics,
} from "pawl/observability";

/** Logs before the lifecycle exists (it is made once the node runs), in its `[demo]` format. */
const log = (message: string) => console.log(`[demo] ${message}`);
const database = await chooseDatabase();
log(database.explanation);
const schema = process.env.PAWL_SCHEMA ?? "pawl_demo";
const graceMs = 5_000;

const pawl = createPawl({
  connectionString: database.url,
  schema,
  concurrency: 8,
  pollIntervalMs: 250,
  // The breaker of "flaky-api" opens after 3 failures within 10 s and probes again after 2 s.
  breakers: { "flaky-api": { failureThreshold: 3, windowMs: 10_000, openMs: 2_000, halfOpenTrials: 1 } },
});

// The console (actions on: this is a demo) and /metrics on one port, 9464 or a free one; URLs come first.
// Actions need a token: PAWL_CONSOLE_TOKEN, else a fresh one, printed for the sign-in form (never in a URL).
const token = process.env.PAWL_CONSOLE_TOKEN || randomBytes(12).toString("base64url");
const serveOn = (port: number) =>
  serveMetrics(createMetrics(pawl), {
    port,
    inspector: createInspector(pawl, { token }),
    console: createConsole(pawl, { token, actions: true }),
  });
const server = await serveOn(Number(process.env.PAWL_DEMO_PORT ?? 9464)).catch(() => serveOn(0));
log(
  `console: ${server.url.replace(/\/metrics$/, "/console")} (actions on, token ${token})  metrics: ${server.url}`,
);

// 1. Succeeds after a little work.
pawl.register("demo.ok", async (payload: { n: number }, ctx: JobContext) => {
  await sleep(20 + Math.random() * 80, ctx.signal);
  return { n: payload.n };
});

// 2. Fails its first attempt, succeeds on the retry (200 ms later).
pawl.register(
  "demo.fails-once",
  async (_payload: unknown, ctx: JobContext) => {
    if (ctx.attempt === 1) throw new Error("first attempt fails on purpose");
    return { attempt: ctx.attempt };
  },
  { retry: { baseMs: 200, factor: 1, jitter: 0 } },
);

// 3. Takes a second but is given 300 ms: the watchdog aborts it (ctx.signal) and records a timeout;
//    after 2 attempts it goes DEAD.
pawl.register(
  "demo.times-out",
  async (_payload: unknown, ctx: JobContext) => {
    await sleep(1_000, ctx.signal);
    ctx.throwIfCancellationRequested();
  },
  { timeoutMs: 300, maxAttempts: 2, retry: { baseMs: 200, factor: 1, jitter: 0 } },
);

// 4. Calls a service that is down: after 3 failures its breaker opens, and jobs of the service are handed
//    back (attempt not counted) until it probes again.
pawl.register(
  "demo.flaky-api",
  async () => {
    throw new Error("flaky-api answered 503");
  },
  { service: "flaky-api", maxAttempts: 5, retry: { baseMs: 300, factor: 1, jitter: 0 } },
);

const counts = {
  enqueued: 0,
  started: 0,
  succeeded: 0,
  retried: 0,
  timedOut: 0,
  dead: 0,
  breakerDeferred: 0,
  errors: 0,
};
const breakers = new Map<string, string>();
pawl.on("job:started", () => counts.started++);
pawl.on("job:succeeded", () => counts.succeeded++);
pawl.on("job:retried", (e) => {
  counts.retried++;
  if (e.timedOut) counts.timedOut++;
});
pawl.on("job:dead", (e) => {
  counts.dead++;
  if (e.timedOut) counts.timedOut++;
});
pawl.on("job:rescheduled", (e) => {
  if (e.reason === "breaker") counts.breakerDeferred++;
});
pawl.on("breaker:change", (e) => {
  breakers.set(e.service, e.to);
  log(`breaker ${e.service}: ${e.from} -> ${e.to}`);
});
pawl.on("error", (e) => {
  counts.errors++;
  log(`runtime error in ${e.where}: ${e.error.message}`);
});

const began = Date.now();
function report(): void {
  const parts = Object.entries(counts).map(([k, v]) => `${k}=${v}`);
  const open = [...breakers].map(([s, state]) => `${s}:${state}`).join(" ");
  life.progress(
    `t=${((Date.now() - began) / 1000).toFixed(0)}s ${parts.join(" ")}${open ? ` breakers ${open}` : ""}`,
  );
}

// Booting the embedded database takes seconds: a Ctrl-C meanwhile exits at once. Nothing has run yet,
// and a directory database recovers from an exit like from a crash (its lock is taken over).
const interruptBoot = () => {
  log("interrupted while starting");
  process.exit(130);
};
process.once("SIGINT", interruptBoot);
process.once("SIGTERM", interruptBoot);
const booting = Date.now();
await pawl.migrate();
if (database.embedded) log(`embedded database ready and migrated in ${Date.now() - booting} ms`);
await pawl.start();
process.off("SIGINT", interruptBoot);
process.off("SIGTERM", interruptBoot);
// Made once the node runs, so a `--once` run's few seconds are not spent booting the embedded database.
const life = lifecycle("demo", { durationEnv: "DEMO_DURATION_MS" });
life.log(`node ${pawl.nodeId} running on schema ${schema}; Ctrl-C stops it gracefully, twice aborts`);

// PAWL_STATELY=1: the node's actors in Stately's visual inspector too (docs/observability.md). The relay
// serves a page that frames the hosted inspector, so that page needs a browser with internet access.
let stately: { close(): void } | null = null;
let relay: { stop(): void } | null = null;
if (process.env.PAWL_STATELY === "1") {
  const { createInspectorServer } = await import("@statelyai/inspect/server");
  relay = createInspectorServer({ port: 8080, autoOpen: false });
  stately = await connectStatelyInspector(pawl, { url: "ws://localhost:8080" });
  life.log("Stately inspector: http://localhost:8080 (its page loads the hosted inspector)");
}

let tick = 0;
let feeding = true;
const feeder = setInterval(() => {
  tick++;
  const batch = [
    { type: "demo.ok", payload: { n: tick } },
    { type: "demo.ok", payload: { n: -tick } },
    { type: "demo.fails-once" },
    { type: "demo.flaky-api" },
    ...(tick % 4 === 0 ? [{ type: "demo.times-out" }] : []),
  ];
  pawl.enqueueMany(batch).then(
    (jobs) => (counts.enqueued += jobs.length),
    (error: unknown) => {
      if (feeding) life.log(`enqueue failed: ${String(error)}`);
    },
  );
}, 250);
const ticker = setInterval(report, 1_000);

const reason = await life.stopping;
feeding = false;
clearInterval(feeder);
life.log(`${reason}: stopping (running jobs get ${graceMs} ms to finish)`);
life.onForce(() => void pawl.stop());
await pawl.stop({ graceMs });
clearInterval(ticker);
report();
stately?.close();
relay?.stop();
await server.close();
await pawl.close();
if (life.durationMs !== null && counts.succeeded === 0) {
  life.log("no job succeeded during the run");
  process.exit(1);
}
life.log("stopped");
process.exit(0);
