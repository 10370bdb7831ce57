/**
 * One pawl node as its own process, for the multi-process cluster tests (run with node_modules/.bin/tsx).
 *
 * Its handler for `work` jobs waits `payload.sleepMs`, then records the execution (job id, node id,
 * attempt) in `<schema>.executions`, and returns; on the node named by `payload.holdOn` it instead holds the
 * job until the attempt is aborted. It prints one JSON line per lifecycle step on stdout
 * (`ready` with the pid to signal, `stopped`), and exits 0 after a graceful stop on SIGTERM. An unhandled
 * rejection or uncaught exception is printed as a `fatal` line on stderr and exits 70, so a test can tell
 * a crash from a clean exit.
 *
 * Environment: DATABASE_URL, PAWL_SCHEMA, PAWL_NODE_ID, PAWL_CONCURRENCY (read by createPawl), and
 * NODE_OPTIONS_JSON: extra createPawl options plus `graceMs` for the stop. The fault tests add
 * PAWL_FAULT_KIT, PAWL_FAULT_SCHEDULE, PAWL_RECORDS_URL and PAWL_PROBE_TYPE / PAWL_PROBE_PEER_TYPE (below);
 * the rate-limit test PAWL_RATE_LIMIT, the waitFor test PAWL_OUTCOME_KIT, the durable crash test
 * PAWL_DURABLE_KIT.
 */
import { performance } from "node:perf_hooks";
import pg from "pg";
import { consoleLogger, createPawl, type PawlConfig } from "../../src/index.js";
import { createMetrics } from "../../observability/index.js";

const fatal = (kind: string) => (error: unknown) => {
  process.stderr.write(
    JSON.stringify({
      event: "fatal",
      kind,
      error: error instanceof Error ? (error.stack ?? error.message) : String(error),
    }) + "\n",
  );
  process.exit(70);
};
process.on("unhandledRejection", fatal("unhandledRejection"));
process.on("uncaughtException", fatal("uncaughtException"));

const say = (line: Record<string, unknown>) => process.stdout.write(JSON.stringify(line) + "\n");

const schema = process.env.PAWL_SCHEMA ?? "pawl";
const { graceMs = 10_000, ...options } = JSON.parse(process.env.NODE_OPTIONS_JSON ?? "{}") as PawlConfig & {
  graceMs?: number;
};
const pawl = createPawl({ logger: consoleLogger("warn"), ...options });
// Recording is test bookkeeping: asynchronous commit keeps it off the disk's fsync path (a crash of this
// process never loses a committed row; only a database crash could, and the tests never crash it).
// PAWL_RECORDS_URL: the fault tests record on connections of another application_name, so the backends
// they terminate are only pawl's own.
const records = new pg.Pool({
  connectionString: process.env.PAWL_RECORDS_URL ?? pawl.config.connectionString,
  max: 4,
  options: "-c synchronous_commit=off",
});
records.on("error", () => {});

pawl.register("work", async (payload: { sleepMs?: number; holdOn?: string }, ctx) => {
  if (payload.holdOn === ctx.nodeId) {
    // Held on that node until the attempt is aborted (the kill tests kill the node while it holds the job);
    // any other node runs it as usual. An aborted hold throws, so it never counts as a run.
    await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true }));
    throw new Error(`held job ${ctx.jobId} aborted on ${ctx.nodeId}`);
  }
  if (payload.sleepMs) await new Promise((resolve) => setTimeout(resolve, payload.sleepMs));
  await records.query(`INSERT INTO "${schema}".executions (job_id, node_id, attempt) VALUES ($1, $2, $3)`, [
    ctx.jobId,
    ctx.nodeId,
    ctx.attempt,
  ]);
});

// PAWL_RATE_LIMIT (rate-limit.test.ts): a JSON { limit, perMs } for the `rated` type, whose handler
// records its own start time (this process's clock) in `<schema>.rate_runs`. The refusals are counted
// (from the node's memory, and by the store) and printed as a `rate-limited` line at stop.
const refusals = { local: 0, store: 0 };
if (process.env.PAWL_RATE_LIMIT) {
  pawl.on("job:rate-limited", (e) => refusals[e.local ? "local" : "store"]++);
  const rateLimit = JSON.parse(process.env.PAWL_RATE_LIMIT) as { limit: number; perMs: number };
  pawl.register(
    "rated",
    async (_payload, ctx) => {
      const at = Date.now();
      await records.query(
        `INSERT INTO "${schema}".rate_runs (job_id, node_id, handler_ms) VALUES ($1, $2, $3)`,
        [ctx.jobId, ctx.nodeId, at],
      );
    },
    { rateLimit },
  );
}

// PAWL_FAULT_KIT=1 (test/processes/fault-*.test.ts): more of pawl in use at once. `pwork` holds a permit
// of the `slots` resource, `rwork` is admitted by a cluster-wide rate limit (30 a second), `tick` is the
// child of a recurring schedule every second, `sig` parks until the test signals it; chains of `work` are
// enqueued by the test. Each records its run like `work`. The
// node's metrics are printed on stdout at stop, so the test can read the fault counters.
const faultKit = process.env.PAWL_FAULT_KIT === "1";
const metrics = faultKit ? createMetrics(pawl) : undefined;
if (faultKit) {
  const record = async (ctx: { jobId: string; nodeId: string; attempt: number }) => {
    await records.query(`INSERT INTO "${schema}".executions (job_id, node_id, attempt) VALUES ($1, $2, $3)`, [
      ctx.jobId,
      ctx.nodeId,
      ctx.attempt,
    ]);
  };
  pawl.register("pwork", async (_payload, ctx) => record(ctx), { resource: "slots" });
  pawl.register("rwork", async (_payload, ctx) => record(ctx), { rateLimit: { limit: 30, perMs: 1000 } });
  pawl.register("tick", async (_payload, ctx) => record(ctx));
  pawl.register("sig", async (_payload, ctx) => {
    await ctx.waitForSignal({ timeoutMs: 120_000 });
    await record(ctx);
  });
  pawl.on("claim", (e) => {
    if (e.jobs.length > 0) say({ event: "claim", at: Date.now(), n: e.jobs.length });
  });
  // The coordinator fault test (fault-coordinators.test.ts) times outages and reconnections from these,
  // and tells a wakeup-driven claim from a polled one by the coordinator's wakeups.
  pawl.on("coordinator:connected", () => say({ event: "coordinator", state: "connected", at: Date.now() }));
  pawl.on("coordinator:disconnected", () =>
    say({ event: "coordinator", state: "disconnected", at: Date.now() }),
  );
  pawl.on("wakeup", (e) => {
    if (e.source === "coordinator" && e.hint)
      say({ event: "wakeup", at: Date.now(), target: e.hint.target ?? null, source: e.hint.source });
  });
}

// PAWL_OUTCOME_KIT=1 (wait-for-processes.test.ts): job types that end each way a waiter can see.
// `outcome.ok` waits `sleepMs` and returns `{ i }` (SUCCEEDED), `outcome.fail` throws with one attempt
// (DEAD), `outcome.hold` runs until the test cancels it (CANCELED; its attempt ends when the signal
// aborts, at the latest after 60 s so a lost cancel cannot hang the stop).
if (process.env.PAWL_OUTCOME_KIT === "1") {
  pawl.register("outcome.ok", async (p: { i: number; sleepMs?: number }) => {
    if (p.sleepMs) await new Promise((resolve) => setTimeout(resolve, p.sleepMs));
    return { i: p.i };
  });
  pawl.register(
    "outcome.fail",
    async (p: { i: number }) => {
      throw new Error(`outcome.fail ${p.i}`);
    },
    { maxAttempts: 1 },
  );
  pawl.register("outcome.hold", async (_p, ctx) => {
    await new Promise((resolve) => {
      const timer = setTimeout(resolve, 60_000);
      ctx.signal.addEventListener("abort", () => resolve(clearTimeout(timer)), { once: true });
    });
  });
}

// PAWL_DURABLE_KIT=1 (durable-crash.test.ts): a durable handler of 5 steps with a child (spawned and
// awaited after step 1), a sleep (after step 2) and a named signal "go" (after step 4). Each step body
// records its start and its end in `<schema>.step_runs` (the end just before the body returns, so a kill
// between the end and the step's record is what runs a body twice); the child records its runs in
// `<schema>.child_runs`.
if (process.env.PAWL_DURABLE_KIT === "1") {
  const mark = (ctx: { jobId: string; nodeId: string }, step: string, phase: string) =>
    records.query(
      `INSERT INTO "${schema}".step_runs (job_id, step, node_id, phase) VALUES ($1, $2, $3, $4)`,
      [ctx.jobId, step, ctx.nodeId, phase],
    );
  pawl.register("durable", async (p: { sleepMs: number; stepMs: number }, ctx) => {
    let sum = 0;
    for (let i = 1; i <= 5; i++) {
      sum += await ctx.step(`s${i}`, async () => {
        await mark(ctx, `s${i}`, "start");
        await new Promise((resolve) => setTimeout(resolve, p.stepMs));
        await mark(ctx, `s${i}`, "end");
        return i;
      });
      if (i === 1) await ctx.waitFor<number>("kid-done", await ctx.spawn("kid", "durable-child", {}));
      if (i === 2) await ctx.sleep("nap", p.sleepMs);
      if (i === 4 && (await ctx.waitForSignal("go")).timedOut) throw new Error("no timeout was set");
    }
    return sum;
  });
  pawl.register("durable-child", async (_p, ctx) => {
    await records.query(`INSERT INTO "${schema}".child_runs (job_id, node_id) VALUES ($1, $2)`, [
      ctx.jobId,
      ctx.nodeId,
    ]);
    return 7;
  });
}

// PAWL_PROBE_TYPE / PAWL_PROBE_PEER_TYPE (fault-coordinators.test.ts): this node runs probe jobs of its
// own type, and on SIGUSR2 enqueues one job of its peer's type, which only the peer can claim. The
// enqueue's wakeup is the only fast way the peer can learn of it, so a prompt pickup proves the
// coordinator carries wakeups between the two nodes. Printed as a `probe` line (or `probe-failed`).
const probeType = process.env.PAWL_PROBE_TYPE;
const probePeerType = process.env.PAWL_PROBE_PEER_TYPE;
if (probeType) {
  pawl.register(probeType, async (_payload, ctx) => {
    await records.query(`INSERT INTO "${schema}".executions (job_id, node_id, attempt) VALUES ($1, $2, $3)`, [
      ctx.jobId,
      ctx.nodeId,
      ctx.attempt,
    ]);
  });
}
if (probePeerType) {
  process.on("SIGUSR2", () => {
    const at = Date.now();
    pawl.enqueue(probePeerType, {}).then(
      (job) => say({ event: "probe", id: job.id, type: probePeerType, at }),
      (error: unknown) => say({ event: "probe-failed", error: String(error), at }),
    );
  });
}

let errors = 0;
pawl.on("error", (e) => {
  // Database outages produce a stream of these; print the first few of each place.
  if (++errors <= 20)
    process.stderr.write(JSON.stringify({ event: "error", where: e.where, error: e.error.message }) + "\n");
});
pawl.on("cluster:orphans-recovered", (e) =>
  say({ event: "orphans-recovered", startup: e.startup, jobs: e.jobs.length }),
);
pawl.on("cluster:node-dead", (e) => say({ event: "node-dead", nodeId: e.nodeId }));

// pawl's timers are unref'd, so while the database is unreachable (no open socket) nothing would keep
// this process alive and it would exit 0 mid-outage: a worker process holds its own handle until stop.
const keepAlive = setInterval(() => {}, 60_000);

let stopping = false;
process.on("SIGTERM", () => {
  if (stopping) return;
  stopping = true;
  void (async () => {
    await pawl.stop({ graceMs });
    if (metrics) say({ event: "metrics", text: await metrics.metrics() });
    if (process.env.PAWL_RATE_LIMIT) say({ event: "rate-limited", ...refusals });
    clearInterval(keepAlive);
    await pawl.close();
    await records.end();
    say({ event: "stopped" });
    process.exit(0);
  })().catch(fatal("stop"));
});

await pawl.start();
if (faultKit && process.env.PAWL_FAULT_SCHEDULE === "1")
  await pawl.schedule("fault-tick", "* * * * * *", {}, { type: "tick" });
say({ event: "ready", pid: process.pid, nodeId: pawl.nodeId, bootMs: Math.round(performance.now()) });
