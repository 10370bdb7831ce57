/**
 * One node of the three-node cluster example. Start one per terminal (see README.md):
 *
 *   PAWL_COORDINATOR=postgres npx tsx examples/cluster/node.ts a
 *   PAWL_COORDINATOR=postgres npx tsx examples/cluster/node.ts b
 *   PAWL_COORDINATOR=postgres npx tsx examples/cluster/node.ts c
 *
 * Every node registers the same handlers and the same recurring schedule (registering is idempotent, and
 * each fire runs once across the cluster). Node `a` also enqueues a batch of work. Each node prints what
 * it runs and, every few seconds, the cluster as it sees it: live nodes, lease holders, clock skew. Kill
 * one with Ctrl-\ (SIGQUIT) or `kill -9` and watch the others recover its jobs within seconds.
 *
 * With EXAMPLE_BRIEF=1 a node runs until this run's batch is done, prints the cluster once, stops and
 * exits 0 (that is how CI runs it, through main.ts).
 */
import { consoleLogger, createPawl } from "pawl";

const name = process.argv[2] ?? "a";
const brief = process.env.EXAMPLE_BRIEF === "1";
const run = process.env.EXAMPLE_RUN ?? "manual";
const batch = Number(process.env.EXAMPLE_JOBS ?? 30);
const enqueuer = process.env.EXAMPLE_ENQUEUE ? process.env.EXAMPLE_ENQUEUE === "1" : name === "a";

const pawl = createPawl({
  connectionString: process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres",
  schema: process.env.PAWL_SCHEMA ?? "pawl_example_cluster",
  nodeId: `example-${name}`,
  coordinator: process.env.PAWL_COORDINATOR ?? "postgres",
  concurrency: 4,
  // Short thresholds so the demo shows a rescue quickly; production keeps the defaults.
  deadNodeThresholdMs: 6000,
  orphanSweepIntervalMs: 1000,
  recurringCheckIntervalMs: 1000,
  logger: consoleLogger("warn"),
});

const log = (message: string) => console.log(`[${pawl.nodeId}] ${message}`);

pawl.register("demo.work", async (payload: { n: number; run: string }, ctx) => {
  await new Promise((resolve) => setTimeout(resolve, 50));
  log(`ran demo.work #${payload.n} (job ${ctx.jobId}, attempt ${ctx.attempt})`);
  return { by: ctx.nodeId };
});
pawl.register("demo.tick", async (_payload, ctx) => log(`tick (job ${ctx.jobId})`));

pawl.on("cluster:node-dead", (e) =>
  log(`node ${e.nodeId} is dead (last heartbeat ${e.lastHeartbeat.toISOString()})`),
);
pawl.on("cluster:orphans-recovered", (e) =>
  log(`recovered ${e.jobs.length} jobs of ${[...new Set(e.jobs.map((j) => j.nodeId))].join(", ")}`),
);
pawl.on("recurring:fired", (e) => log(`fired ${e.name} for ${e.fireAt.toISOString()}`));
pawl.on("cluster:clock-skew", (e) => e.exceeded && log(`clock skew ${e.skewMs} ms`));

async function printCluster(): Promise<void> {
  const view = await pawl.cluster();
  const nodes = view.nodes.map((n) => `${n.nodeId}${n.alive ? "" : " (dead)"} ${n.ageMs}ms`).join(", ");
  const leases =
    view.leases
      .filter((l) => l.held)
      .map((l) => `${l.name}=${l.owner}`)
      .join(", ") || "none held";
  log(`progress cluster: ${nodes} | leases: ${leases} | skew ${view.clockSkew?.skewMs ?? "?"} ms`);
}

async function batchDone(): Promise<boolean> {
  const done = await pawl.listJobs({ type: "demo.work", status: "SUCCEEDED", limit: 1000 });
  return done.filter((j) => (j.payload as { run?: string }).run === run).length >= batch;
}

await pawl.migrate();
// Every node registers the schedule: an update of the same schedule, never a second one.
await pawl.schedule("demo.tick", "*/2 * * * * *", {});
// A worker process keeps itself alive: pawl's own timers never hold the process open.
const keepAlive = setInterval(() => {}, 60_000);
await pawl.start();
log(`started (coordinator ${String(pawl.config.coordinator).split("?")[0]})`);
if (enqueuer) {
  await pawl.enqueueMany(
    Array.from({ length: batch }, (_, n) => ({ type: "demo.work", payload: { n, run } })),
  );
  log(`enqueued ${batch} demo.work jobs`);
}

let stopping = false;
async function shutdown(code: number): Promise<void> {
  if (stopping) return;
  stopping = true;
  await pawl.stop({ graceMs: 10_000 });
  await pawl.close();
  clearInterval(keepAlive);
  log("stopped");
  process.exit(code);
}
process.on("SIGINT", () => void shutdown(0));
process.on("SIGTERM", () => void shutdown(0));

if (brief) {
  const deadline = Date.now() + 60_000;
  while (!(await batchDone())) {
    if (Date.now() > deadline) {
      log("the batch did not finish within 60 s");
      await shutdown(1);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  await printCluster();
  await shutdown(0);
} else {
  setInterval(
    () => void printCluster().catch((e: unknown) => log(`cluster view failed: ${String(e)}`)),
    5000,
  ).unref();
}
