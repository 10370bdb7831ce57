/**
 * The concurrency keys' load, seen from outside (issue 27, docs/fairness.md#visibility): a node runs keyed
 * jobs held open by a gate, some keys at their limit with jobs waiting behind them, and /metrics reports
 * the `pawl_concurrency_*` gauges (counts over every key, never a series per key) while the console's
 * overview lists the busiest keys in order. Once the gate opens and every job has succeeded, the gauges
 * fall back to zero (the running counts follow the outcomes' -1 deltas) and the section goes away.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Pawl } from "../../../src/index.js";
import {
  createConsole,
  createMetrics,
  serveMetrics,
  type MetricsServer,
  type PawlMetrics,
} from "../../../observability/index.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";
import { jobEvent } from "../../helpers/events.js";
import { gate } from "../../helpers/gate.js";
import { parseMetrics, type Scrape } from "../../helpers/metrics.js";

let cleanup: () => Promise<void>;
let node: Pawl;
let metrics: PawlMetrics;
let server: MetricsServer;
const held = gate();

beforeAll(async () => {
  const s = await setupSchema("ckobs");
  cleanup = s.cleanup;
  node = testPawl(s.schema, { concurrency: 8 });
  node.register("work", () => held.promise);
  // Read on every scrape, so each scrape shows the database as it is now.
  metrics = createMetrics(node, { concurrencyKeysCacheMs: 0 });
  server = await serveMetrics(metrics, { port: 0, console: createConsole(node) });
  await node.start();
});

afterAll(async () => {
  held.open();
  await server?.close();
  metrics?.close();
  await node?.close();
  await cleanup?.();
});

async function scrape(): Promise<Scrape> {
  const res = await fetch(server.url);
  expect(res.status).toBe(200);
  return parseMetrics(await res.text());
}

/** The `pawl_concurrency_*` series of a scrape. */
function concurrencySeries(s: Scrape): Record<string, number> {
  return Object.fromEntries([...s].filter(([k]) => k.startsWith("pawl_concurrency_")));
}

async function overview(): Promise<string> {
  const res = await fetch(server.url.replace(/\/metrics$/, "/console"));
  expect(res.status).toBe(200);
  return res.text();
}

/** The busiest-keys table's rows, as the cells' text. */
function keyRows(html: string): string[][] {
  const section = /<section id="concurrency-keys">([\s\S]*?)<\/section>/.exec(html)?.[1] ?? "";
  return [...section.matchAll(/<tr><td>([\s\S]*?)<\/td><\/tr>/g)].map((m) =>
    m[1]!.split("</td><td>").map((c) => c.replace(/<[^>]+>/g, "")),
  );
}

const key = (concurrencyKey: string, concurrencyLimit: number) => ({
  type: "work",
  concurrencyKey,
  concurrencyLimit,
});

describe("concurrency keys in metrics and the console", () => {
  let due: string[] = [];

  it("reports zeros while no job has a key, and the console shows no keys section", async () => {
    const s = await scrape();
    expect(concurrencySeries(s)).toMatchObject({
      pawl_concurrency_keys_active: 0,
      pawl_concurrency_keys_at_limit: 0,
      pawl_concurrency_keyed_jobs_running: 0,
      pawl_concurrency_keyed_jobs_waiting: 0,
    });
    // The read succeeded (an unread gauge would also say 0).
    expect(s.get("pawl_concurrency_keys_updated_timestamp_seconds")).toBeGreaterThan(Date.now() / 1000 - 60);
    expect(await overview()).not.toContain('id="concurrency-keys"');
  });

  it("counts keys at their limit and waiting keyed jobs, and lists the busiest keys", async () => {
    const started = jobEvent(node.events, "job:started");
    // alpha: limit 2, 4 jobs (2 run, 2 wait). beta: limit 1, 2 jobs (1 runs, 1 waits). gamma: limit 3,
    // 1 job (runs). delta: limit 5, 2 jobs (both run). later: not due for an hour (neither runs nor waits).
    // Every key has a limit: whether a job without one counts as running is the claim's rule (0011 counted
    // it, 0013 does not), and this test is about what the read reports, whichever rule counted.
    const alpha = await node.enqueueMany([1, 2, 3, 4].map(() => key("alpha", 2)));
    const beta = await node.enqueueMany([1, 2].map(() => key("beta", 1)));
    const gamma = await node.enqueue("work", {}, { concurrencyKey: "gamma", concurrencyLimit: 3 });
    const delta = await node.enqueueMany([1, 2].map(() => key("delta", 5)));
    await node.enqueue("work", {}, { concurrencyKey: "later", concurrencyLimit: 1, delayMs: 3_600_000 });
    due = [...alpha, ...beta, gamma, ...delta].map((j) => j.id);
    // Within a key the claim takes rows in (priority, scheduled time, id) order: the first ones run.
    await started.forAll([alpha[0]!.id, alpha[1]!.id, beta[0]!.id, gamma.id, delta[0]!.id, delta[1]!.id]);

    const s = await scrape();
    expect(concurrencySeries(s)).toEqual({
      pawl_concurrency_keys_active: 4,
      pawl_concurrency_keys_at_limit: 2,
      pawl_concurrency_keyed_jobs_running: 6,
      pawl_concurrency_keyed_jobs_waiting: 3,
      pawl_concurrency_keys_updated_timestamp_seconds: expect.any(Number) as number,
    });
    // Bounded cardinality: no series anywhere names a key.
    for (const series of s.keys()) expect(series).not.toMatch(/alpha|beta|gamma|delta/);

    const html = await overview();
    expect(html).toContain("4 active keys, 2 at their limit; 6 keyed jobs running, 3 due and waiting.");
    // Most running first, then most waiting, then by key.
    expect(keyRows(html)).toEqual([
      ["alpha", "2", "2", "2", "at limit"],
      ["delta", "2", "5", "0", ""],
      ["beta", "1", "1", "1", "at limit"],
      ["gamma", "1", "3", "0", ""],
    ]);
  });

  it("falls back to zero once every keyed job has succeeded", async () => {
    const succeeded = jobEvent(node.events, "job:succeeded");
    held.open();
    await succeeded.forAll(due);
    expect(concurrencySeries(await scrape())).toMatchObject({
      pawl_concurrency_keys_active: 0,
      pawl_concurrency_keys_at_limit: 0,
      pawl_concurrency_keyed_jobs_running: 0,
      pawl_concurrency_keyed_jobs_waiting: 0,
    });
    expect(await overview()).not.toContain('id="concurrency-keys"');
  });
});
