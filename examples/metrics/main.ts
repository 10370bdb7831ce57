/**
 * A pawl node embedded in an HTTP service that Prometheus scrapes, with the actor inspector mounted:
 *
 *   GET /              a hello from the service itself
 *   GET /metrics       pawl's Prometheus metrics (plus Node's process metrics)
 *   GET /debug/actors  the node's actor tree (bearer token); /debug/actors/stream follows it (SSE)
 *
 * A small producer feeds it thumbnails (quick), webhooks (a third fail; their service has a circuit
 * breaker) and exports (some outlive their timeout), so every panel of the dashboard has something to
 * show. With `--once`, PAWL_EXAMPLE_DURATION_MS or EXAMPLE_BRIEF=1 it scrapes itself, reads its own
 * actors (with and without the token) and stops after a few seconds, exiting 0 only if all of that worked.
 */
import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createPawl, type JobContext } from "pawl";
import { createInspector, createMetrics, metricsHandler } from "pawl/observability";
import { databaseUrl, lifecycle, sleep } from "../shared/lifecycle.js";

if (process.env.EXAMPLE_BRIEF === "1" && !process.argv.includes("--once")) process.argv.push("--once");
const life = lifecycle("metrics");
const brief = life.durationMs !== null;
const schema = process.env.PAWL_SCHEMA ?? "pawl_metrics_example";
const port = brief ? 0 : Number(process.env.PORT ?? 3001);
const token = process.env.PAWL_INSPECT_TOKEN ?? randomBytes(12).toString("hex");

const pawl = createPawl({
  connectionString: databaseUrl,
  schema,
  concurrency: 4,
  pollIntervalMs: 500,
  breakers: { webhooks: { failureThreshold: 5, minimumCalls: 10, openMs: 2_000 } },
});

pawl.register("thumbnail.render", async (_p: { image: string }, ctx: JobContext) => {
  await sleep(20 + Math.random() * 80, ctx.signal);
  return { width: 128 };
});
pawl.register(
  "webhook.deliver",
  async (_p: { url: string }, ctx: JobContext) => {
    await sleep(10 + Math.random() * 40, ctx.signal);
    if (Math.random() < 0.33) throw new Error("503 from the receiver");
  },
  { service: "webhooks", maxAttempts: 3, retry: { baseMs: 200, factor: 2, maxMs: 2_000, jitter: 0.2 } },
);
pawl.register(
  "export.build",
  async (_p: { rows: number }, ctx: JobContext) => {
    // Most finish in time; some run past the 400 ms timeout and are aborted by the watchdog.
    await sleep(Math.random() < 0.8 ? 100 : 1_000, ctx.signal);
  },
  { timeoutMs: 400, maxAttempts: 2, retry: { baseMs: 100, factor: 1, maxMs: 100, jitter: 0 } },
);

// Observability: the metrics on a registry of their own, the inspector behind a token. Neither is
// exposed unless the service mounts it, as below.
const metrics = createMetrics(pawl, { defaultMetrics: true });
const inspector = createInspector(pawl, { token });
const serveMetrics = metricsHandler(metrics);

const server = createServer((req, res) => {
  // Not `new URL(req.url, base)`: a target such as "//[" makes it throw, and a throw here ends the process.
  const path = (req.url ?? "/").split("?")[0];
  if (path === "/metrics") return serveMetrics(req, res);
  inspector.handler(req, res, () => {
    if (path !== "/") {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
      return;
    }
    res.writeHead(200, { "content-type": "text/plain" }).end("hello from the service that runs pawl\n");
  });
});

await pawl.migrate();
await pawl.start();
await new Promise<void>((resolve) => server.listen(port, brief ? "127.0.0.1" : "0.0.0.0", resolve));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
life.log(
  `metrics at ${base}/metrics; actors: npx pawl inspect ${base} --token ${brief ? "<token>" : token} --follow`,
);

// The producer: a mixed batch every 500 ms.
let produced = 0;
const producer = setInterval(() => {
  const batch = [
    ...Array.from({ length: 6 }, (_, i) => ({
      type: "thumbnail.render",
      payload: { image: `img-${produced + i}.png` },
    })),
    { type: "webhook.deliver", payload: { url: "https://example.test/hook" } },
    { type: "webhook.deliver", payload: { url: "https://example.test/hook" } },
    { type: "export.build", payload: { rows: 1000 } },
  ];
  produced += batch.length;
  pawl.enqueueMany(batch).catch((error: unknown) => life.log(`enqueue failed: ${String(error)}`));
}, 500);

const sample = (text: string, name: string): number =>
  text
    .split("\n")
    .filter((l) => l.startsWith(name))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(" ") + 1)), 0);

const ticker = setInterval(() => {
  void metrics
    .metrics()
    .then((text) =>
      life.progress(
        `enqueued=${produced} succeeded=${sample(text, 'pawl_job_outcomes_total{type="thumbnail.render",outcome="succeeded"}')}` +
          ` thumbnails, dead=${sample(text, "pawl_dlq_size")} in the DLQ`,
      ),
    );
}, 1_000);

/** The self-test of a brief run: the service scrapes itself and reads its own actors. */
async function selfTest(): Promise<boolean> {
  await pawl.events.next("job:succeeded", () => true, 10_000);
  const scrape = await fetch(`${base}/metrics`);
  const text = await scrape.text();
  const succeeded = sample(text, "pawl_job_outcomes_total{") > 0;
  life.progress(
    `GET /metrics -> ${scrape.status}, ${text.split("\n").length} lines, outcomes counted: ${succeeded}`,
  );
  const refused = await fetch(`${base}/debug/actors`);
  const actors = await fetch(`${base}/debug/actors`, { headers: { Authorization: `Bearer ${token}` } });
  const view = (await actors.json()) as { busy: unknown[]; tree: { children: unknown[] } | null };
  life.progress(
    `GET /debug/actors -> ${refused.status} without the token, ${actors.status} with it ` +
      `(${view.tree?.children.length ?? 0} actors, ${view.busy.length} busy)`,
  );
  return (
    scrape.status === 200 &&
    succeeded &&
    refused.status === 401 &&
    actors.status === 200 &&
    view.tree !== null
  );
}

const selfTestPassed = brief ? await selfTest().catch((e: unknown) => (life.log(String(e)), false)) : true;

const reason = await life.stopping;
life.log(`${reason}: stopping the producer, closing the listener, draining the node`);
clearInterval(producer);
life.onForce(() => {
  server.closeAllConnections();
  void pawl.stop();
});
inspector.close(); // ends open inspector streams, so the listener can close
await new Promise<void>((resolve) => server.close(() => resolve()));
await pawl.stop({ graceMs: 5_000 });
clearInterval(ticker);
metrics.close();
await pawl.close();
if (!selfTestPassed) {
  life.log("the self-test failed");
  process.exit(1);
}
life.log("stopped");
process.exit(0);
