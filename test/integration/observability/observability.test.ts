/**
 * Observability end to end: a node with metrics and the inspector mounted on a node:http server runs a
 * scripted scenario (a claim with a boosted job, a breaker that opens, timeouts, DEAD jobs, a snooze, a
 * wakeup from another node through the in-memory coordinator, a long job), and each step is checked by
 * scraping /metrics over HTTP: exact counter deltas and gauge values. Then /debug/actors, its SSE stream,
 * the token, and `pawl inspect` are exercised against the same node. Every wait is on an event.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createServer, get, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { randomBytes } from "node:crypto";
import type pg from "pg";
import { NonRetryableError, Snooze, type Pawl } from "../../../src/index.js";
import {
  createInspector,
  createMetrics,
  metricsHandler,
  serveMetrics,
  type ActorsView,
  type Inspector,
  type PawlMetrics,
} from "../../../observability/index.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";
import { jobEvent } from "../../helpers/events.js";
import { runCli } from "../../helpers/cli.js";
import { metricKey as key, parseMetrics as parse, type Scrape } from "../../helpers/metrics.js";

const token = "t0ken-" + randomBytes(4).toString("hex");
const bus = `obs-${randomBytes(4).toString("hex")}`;

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let a: Pawl;
let b: Pawl;
let metrics: PawlMetrics;
let inspector: Inspector;
let server: Server;
let base: string;
let releaseLong: () => void = () => {};
const never = () => new Promise<never>(() => {});

async function scrape(): Promise<Scrape> {
  const res = await fetch(`${base}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe(metrics.contentType);
  return parse(await res.text());
}

function value(s: Scrape, name: string, labels: Record<string, string> = {}): number | undefined {
  return s.get(key(name, labels));
}

/** The change of a counter between two scrapes (a series absent before counts as 0). */
function delta(after: Scrape, before: Scrape, name: string, labels: Record<string, string> = {}): number {
  return (value(after, name, labels) ?? 0) - (value(before, name, labels) ?? 0);
}

/** Every counter series that moved between two scrapes, as `key -> delta`. */
function moved(after: Scrape, before: Scrape, prefix: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of after) {
    if (!k.startsWith(prefix)) continue;
    const d = v - (before.get(k) ?? 0);
    if (d !== 0) out[k] = d;
  }
  return out;
}

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("obs"));
  a = testPawl(schema, {
    nodeId: "obs-a",
    concurrency: 4,
    coordinator: `in-memory://${bus}`,
    breakers: { svc: { failureThreshold: 2, minimumCalls: 100, openMs: 60_000, halfOpenTrials: 1 } },
    watchdog: { cancellationGraceMs: 50 },
  });
  const slowRetry = { baseMs: 60_000, factor: 1, maxMs: 60_000, jitter: 0 };
  a.register("work", () => "ok");
  a.register(
    "flaky",
    () => {
      throw new Error("503 from svc");
    },
    { service: "svc", maxAttempts: 10, retry: slowRetry },
  );
  a.register("stuck", () => never(), {
    timeoutMs: 200,
    maxAttempts: 2,
    retry: { baseMs: 1, factor: 1, maxMs: 1, jitter: 0 },
  });
  a.register("bad", () => {
    throw new NonRetryableError("bad input");
  });
  a.register("sleepy", () => {
    throw new Snooze(60_000);
  });
  let gate = new Promise<void>((resolve) => (releaseLong = resolve));
  a.register(
    "long",
    async () => {
      await gate;
      gate = Promise.resolve();
    },
    { timeoutMs: 30_000 },
  );
  metrics = createMetrics(a, { queueDepthCacheMs: 0 });
  inspector = createInspector(a, { token });
  const serveMetricsPath = metricsHandler(metrics, { path: "/metrics" });
  server = createServer((req, res) => inspector.handler(req, res, () => serveMetricsPath(req, res)));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // The second node only enqueues: it shares the schema and the coordinator bus.
  b = testPawl(schema, { nodeId: "obs-b", coordinator: `in-memory://${bus}` });
});

afterAll(async () => {
  releaseLong();
  inspector?.close();
  metrics?.close();
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  await b?.close();
  await a?.close();
  await cleanup();
});

describe("metrics over HTTP after a scripted scenario", () => {
  let s0: Scrape;
  let s1: Scrape;

  it("counts a claim that includes a boosted job, and its pickup latency", async () => {
    s0 = await scrape();
    expect(value(s0, "pawl_node_running")).toBe(0);
    expect(value(s0, "pawl_node_info", { node_id: "obs-a" })).toBe(1);
    // Two jobs due now, and one at a lower priority that has waited 40 minutes: two boost levels (15 min each).
    const rows = await pool.query<{ id: string }>(
      `INSERT INTO "${schema}".scheduler_job_queue (type, payload, priority, scheduled_time)
       VALUES ('work', '{}', 10, now() - interval '1 second'), ('work', '{}', 10, now() - interval '1 second'),
              ('work', '{}', 0, now() - interval '40 minutes')
       RETURNING id`,
    );
    const ids = rows.rows.map((r) => String(r.id));
    const claimed = a.events.next("claim");
    const done = Promise.all(ids.map((id) => a.events.next("job:succeeded", (e) => e.job.id === id)));
    await a.start();
    expect((await claimed).boosts).toEqual([2]);
    await done;

    s1 = await scrape();
    expect(value(s1, "pawl_node_running")).toBe(1);
    expect(value(s1, "pawl_jobs_claimed_total", { type: "work" })).toBe(3);
    expect(value(s1, "pawl_claim_batch_size_count")).toBe(1);
    expect(value(s1, "pawl_claim_batch_size_sum")).toBe(3);
    expect(value(s1, "pawl_jobs_boosted_total")).toBe(1);
    expect(value(s1, "pawl_boost_levels_count")).toBe(1);
    expect(value(s1, "pawl_boost_levels_sum")).toBe(2);
    expect(value(s1, "pawl_boost_levels_bucket", { le: "1" })).toBe(0);
    expect(value(s1, "pawl_boost_levels_bucket", { le: "2" })).toBe(1);
    expect(value(s1, "pawl_jobs_started_total", { type: "work" })).toBe(3);
    expect(value(s1, "pawl_job_outcomes_total", { type: "work", outcome: "succeeded" })).toBe(3);
    expect(value(s1, "pawl_job_outcomes_total", { type: "work", outcome: "dead" })).toBe(0);
    expect(value(s1, "pawl_job_duration_seconds_count", { type: "work" })).toBe(3);
    // Pickup latency: two within seconds, the boosted one 40 minutes late.
    expect(value(s1, "pawl_job_pickup_latency_seconds_count", { type: "work" })).toBe(3);
    expect(value(s1, "pawl_job_pickup_latency_seconds_bucket", { type: "work", le: "900" })).toBe(2);
    expect(value(s1, "pawl_job_pickup_latency_seconds_bucket", { type: "work", le: "3600" })).toBe(3);
    expect(value(s1, "pawl_job_pickup_latency_seconds_sum", { type: "work" })).toBeGreaterThan(2400);
    expect(value(s1, "pawl_polls_total")).toBeGreaterThanOrEqual(1);
    expect(value(s1, "pawl_empty_polls_total")).toBe(value(s1, "pawl_polls_total")! - 1);
    expect(value(s1, "pawl_claim_duration_seconds_count")).toBe(value(s1, "pawl_polls_total"));
    expect(value(s1, "pawl_wakeups_total", { source: "local" })).toBe(0);
    expect(value(s1, "pawl_wakeups_total", { source: "coordinator" })).toBe(0);
    // Gauges read from the actor tree at scrape time.
    expect(value(s1, "pawl_jobs_in_flight")).toBe(0);
    expect(value(s1, "pawl_slots_free")).toBe(4);
    expect(value(s1, "pawl_jobs_buffered")).toBe(0);
    expect(value(s1, "pawl_coordinator_connected", { transport: "in-memory" })).toBe(1);
    const modes = ["burst", "normal", "deep-idle"].map((mode) => value(s1, "pawl_polling_mode", { mode }));
    expect(modes.filter((v) => v === 1)).toHaveLength(1);
    expect(modes.filter((v) => v === 0)).toHaveLength(2);
    expect(value(s1, "pawl_poll_delay_seconds")).toBeGreaterThan(0);
    expect(value(s1, "pawl_last_poll_timestamp_seconds")).toBeGreaterThan(Date.now() / 1000 - 60);
    // Nothing is queued: no depth series, an empty DLQ.
    expect([...s1.keys()].filter((k) => k.startsWith("pawl_queue_depth{"))).toEqual([]);
    expect(value(s1, "pawl_dlq_size")).toBe(0);
  });

  let s2: Scrape;
  it("counts failures, a breaker that opens, and a job it hands back", async () => {
    const opened = a.events.next("breaker:change", (e) => e.to === "OPEN");
    const jobRetried = jobEvent(a.events, "job:retried");
    const [f1, f2] = await a.enqueueMany([{ type: "flaky" }, { type: "flaky" }]);
    await Promise.all([opened, jobRetried.forAll([f1!.id, f2!.id])]);
    const jobRescheduled = jobEvent(a.events, "job:rescheduled", (e) => e.reason === "breaker");
    const f3 = await a.enqueue("flaky", {});
    await jobRescheduled.for(f3.id);

    s2 = await scrape();
    expect(moved(s2, s1, "pawl_job_outcomes_total")).toEqual({
      [key("pawl_job_outcomes_total", { type: "flaky", outcome: "retried" })]: 2,
      [key("pawl_job_outcomes_total", { type: "flaky", outcome: "rescheduled_breaker" })]: 1,
    });
    expect(delta(s2, s1, "pawl_jobs_claimed_total", { type: "flaky" })).toBe(3);
    expect(delta(s2, s1, "pawl_jobs_started_total", { type: "flaky" })).toBe(2);
    expect(value(s2, "pawl_breaker_transitions_total", { service: "svc", from: "closed", to: "open" })).toBe(
      1,
    );
    expect(moved(s2, s1, "pawl_breaker_transitions_total")).toEqual({
      [key("pawl_breaker_transitions_total", { service: "svc", from: "closed", to: "open" })]: 1,
    });
    expect(value(s2, "pawl_breaker_state", { service: "svc", state: "open" })).toBe(1);
    expect(value(s2, "pawl_breaker_state", { service: "svc", state: "closed" })).toBe(0);
    expect(value(s2, "pawl_breaker_state", { service: "svc", state: "half_open" })).toBe(0);
    // One wake per enqueue call; the single job's hint went out and came back as this node's own.
    expect(delta(s2, s1, "pawl_wakeups_total", { source: "local" })).toBe(2);
    expect(delta(s2, s1, "pawl_wakeups_total", { source: "coordinator" })).toBe(0);
    expect(delta(s2, s1, "pawl_coordinator_hints_published_total")).toBe(1);
    expect(delta(s2, s1, "pawl_coordinator_hints_suppressed_total")).toBe(1);
    expect(value(s2, "pawl_queue_depth", { status: "pending", type: "flaky" })).toBe(3);
  });

  let s3: Scrape;
  it("counts timeouts, the watchdog's steps, DEAD jobs, a snooze and the DLQ size", async () => {
    const jobDead = jobEvent(a.events, "job:dead");
    const jobSnoozed = jobEvent(a.events, "job:snoozed");
    const [stuck, bad, sleepy] = await a.enqueueMany([
      { type: "stuck" },
      { type: "bad" },
      { type: "sleepy" },
    ]);
    await Promise.all([jobDead.forAll([stuck!.id, bad!.id]), jobSnoozed.for(sleepy!.id)]);

    s3 = await scrape();
    expect(moved(s3, s2, "pawl_job_outcomes_total")).toEqual({
      [key("pawl_job_outcomes_total", { type: "stuck", outcome: "timed_out" })]: 1,
      [key("pawl_job_outcomes_total", { type: "stuck", outcome: "dead" })]: 1,
      [key("pawl_job_outcomes_total", { type: "bad", outcome: "dead" })]: 1,
      [key("pawl_job_outcomes_total", { type: "sleepy", outcome: "snoozed" })]: 1,
    });
    expect(value(s3, "pawl_job_timeouts_total", { type: "stuck" })).toBe(2);
    expect(value(s3, "pawl_job_timeouts_total", { type: "bad" })).toBe(0);
    // timeout 200 ms, grace 50 ms: cancel request at 150, soft warning at 160, hard timeout at 200; twice.
    expect(value(s3, "pawl_watchdog_cancel_requests_total", { type: "stuck" })).toBe(2);
    expect(value(s3, "pawl_watchdog_soft_warnings_total", { type: "stuck" })).toBe(2);
    expect(value(s3, "pawl_watchdog_hard_timeouts_total", { type: "stuck" })).toBe(2);
    expect(delta(s3, s2, "pawl_jobs_started_total", { type: "stuck" })).toBe(2);
    expect(delta(s3, s2, "pawl_wakeups_total", { source: "local" })).toBe(1);
    expect(value(s3, "pawl_queue_depth", { status: "dead", type: "stuck" })).toBe(1);
    expect(value(s3, "pawl_queue_depth", { status: "dead", type: "bad" })).toBe(1);
    expect(value(s3, "pawl_queue_depth", { status: "pending", type: "sleepy" })).toBe(1);
    expect(value(s3, "pawl_queue_depth", { status: "pending", type: "flaky" })).toBe(3);
    expect(value(s3, "pawl_dlq_size")).toBe(2);
    expect(value(s3, "pawl_queue_depth_updated_timestamp_seconds")).toBeGreaterThan(Date.now() / 1000 - 60);
    expect(value(s3, "pawl_jobs_in_flight")).toBe(0);
  });

  let s4: Scrape;
  it("counts a wakeup from another node through the coordinator", async () => {
    const woke = a.events.next("wakeup", (e) => e.source === "coordinator");
    const jobSucceeded = jobEvent(a.events, "job:succeeded");
    const job = await b.enqueue("work", {}, { priority: "critical" });
    const [wakeup] = await Promise.all([woke, jobSucceeded.for(job.id)]);
    expect(wakeup.hint).toMatchObject({ source: "obs-b", target: "work", priority: 30 });

    s4 = await scrape();
    expect(delta(s4, s3, "pawl_wakeups_total", { source: "coordinator" })).toBe(1);
    expect(delta(s4, s3, "pawl_wakeups_total", { source: "local" })).toBe(0);
    expect(delta(s4, s3, "pawl_coordinator_hints_received_total")).toBe(1);
    // No work hint; but a node sends a completion notice (a `finished` hint, for pawl.waitFor) for the
    // jobs it ends: this job's, and perhaps the DEAD ones' of the last step if their 20 ms window ran late.
    expect(delta(s4, s3, "pawl_coordinator_hints_published_total")).toBeLessThanOrEqual(2);
    expect(delta(s4, s3, "pawl_jobs_claimed_total", { type: "work" })).toBe(1);
    expect(moved(s4, s3, "pawl_job_outcomes_total")).toEqual({
      [key("pawl_job_outcomes_total", { type: "work", outcome: "succeeded" })]: 1,
    });
    expect(value(s4, "pawl_coordinator_malformed_messages_total")).toBe(0);
    expect(value(s4, "pawl_coordinator_reconnects_total")).toBe(0);
    // Nothing failed inside the runtime during the whole scenario.
    expect([...s4].filter(([k, v]) => k.startsWith("pawl_errors_total") && v > 0)).toEqual([]);
    expect(value(s4, "pawl_scrape_read_errors_total", { read: "queue_depth", reason: "failed" }) ?? 0).toBe(
      0,
    );
  });
});

describe("the actor inspector", () => {
  let longId = "";
  let slot = -1;
  let before = 0;
  let after = 0;

  it("shows a long job's slot, step and watchdog deadline, and enforces the token", async () => {
    before = Date.now();
    const jobStarted = jobEvent(a.events, "job:started");
    const job = await a.enqueue("long", {});
    longId = job.id;
    await jobStarted.for(job.id);
    after = Date.now();

    expect((await fetch(`${base}/debug/actors`)).status).toBe(401);
    const wrong = await fetch(`${base}/debug/actors`, { headers: { Authorization: "Bearer nope" } });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get("www-authenticate")).toContain("Bearer");
    expect((await fetch(`${base}/debug/actors?token=nope`)).status).toBe(401);
    expect((await fetch(`${base}/debug/actors/stream`)).status).toBe(401);
    // Never from the URL.
    expect((await fetch(`${base}/debug/actors?token=${token}`)).status).toBe(401);

    const res = await fetch(`${base}/debug/actors`, { headers: { Authorization: `Bearer ${token}` } });
    expect(res.status).toBe(200);
    const view = (await res.json()) as ActorsView;
    expect(view).toMatchObject({ nodeId: "obs-a", running: true });
    expect(view.busy).toHaveLength(1);
    const busy = view.busy[0]!;
    slot = busy.slot;
    expect(busy).toMatchObject({
      actor: `slot-${slot}`,
      step: "running",
      job: { id: longId, type: "long", attempt: 1 },
    });
    expect(["pending", "armed"]).toContain(busy.watchdog.phase);
    expect(busy.watchdog.deadline).toBeGreaterThanOrEqual(before + 30_000);
    expect(busy.watchdog.deadline).toBeLessThanOrEqual(after + 30_000);
    expect(busy.payload).toBeUndefined();
    // The same slot in the tree, with its watchdog child.
    const node = view.tree!.children.find((c) => c.id === `slot-${slot}`)!;
    expect(node).toMatchObject({ machine: "jobTask", state: "running", context: { job: { id: longId } } });
    expect(node.children[0]).toMatchObject({ id: `watchdog-${slot}`, machine: "watchdog" });

    const s = await scrape();
    expect(value(s, "pawl_jobs_in_flight")).toBe(1);
    expect(value(s, "pawl_slots_free")).toBe(3);
    expect(value(s, "pawl_queue_depth", { status: "running", type: "long" })).toBe(1);
  });

  it("pawl inspect prints the tree, and fails clearly without the token", async () => {
    const r = await runCli(["inspect", base, "--token", token], process.env);
    expect(r).toMatchObject({ code: 0, stderr: "" });
    expect(r.stdout).toContain("node obs-a  running");
    expect(r.stdout).toContain(`slot-${slot}  job ${longId} (long, attempt 1)  step running  watchdog`);
    expect(r.stdout).toContain("└─ ");
    expect(r.stdout).toMatch(/idle slots?: slot-/);
    expect(r.stdout).toContain("coordinator: transport=in-memory connected=true");

    const json = await runCli(["inspect", `${base}/debug/actors`, "--token", token, "--json"], process.env);
    expect(json.code).toBe(0);
    expect((JSON.parse(json.stdout) as ActorsView).busy[0]?.job.id).toBe(longId);

    const refused = await runCli(["inspect", base], process.env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("401");
    expect((await runCli(["inspect", "not a url"], process.env)).code).toBe(2);
  });

  it("streams inspection events over SSE, filtered by actor, subscribed only while a client listens", async () => {
    expect(inspector.subscribed).toBe(false);
    const events: { actor: string; type: string; snapshot?: { value: unknown } }[] = [];
    let res!: IncomingMessage;
    const idle = new Promise<void>((resolve, reject) => {
      const url = `${base}/debug/actors/stream?actor=slot-${slot}`;
      const req = get(url, { headers: { Authorization: `Bearer ${token}` } }, (r) => {
        res = r;
        expect(r.statusCode).toBe(200);
        expect(r.headers["content-type"]).toContain("text/event-stream");
        let buffer = "";
        r.setEncoding("utf8");
        r.on("data", (chunk: string) => {
          buffer += chunk;
          let end: number;
          while ((end = buffer.indexOf("\n\n")) !== -1) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            if (block.startsWith("event: hello")) {
              // Connected: the inspector subscribed; now let the long job finish.
              expect(inspector.subscribed).toBe(true);
              releaseLong();
              continue;
            }
            const data = /^data: (.*)$/m.exec(block)?.[1];
            if (!data) continue;
            const e = JSON.parse(data) as (typeof events)[number];
            events.push(e);
            if (e.type === "@xstate.snapshot" && e.snapshot?.value === "idle") resolve();
          }
        });
      });
      req.on("error", reject);
    });
    await idle;
    await a.events.next("job:succeeded", (e) => e.job.id === longId).catch(() => undefined);
    expect(events.length).toBeGreaterThan(0);
    expect(events.every((e) => e.actor === `slot-${slot}`)).toBe(true);
    expect(events.some((e) => e.type === "@xstate.event")).toBe(true);
    expect(JSON.stringify(events)).not.toContain("function");
    expect(inspector.streams).toBe(1);
    res.destroy();
    await vi.waitFor(() => expect(inspector.streams).toBe(0));
    expect(inspector.subscribed).toBe(false);
  });

  it("pawl inspect --follow streams events until --count", async () => {
    const following = runCli(
      ["inspect", base, "--token", token, "--follow", "--actor", "slot-", "--count", "2", "--json"],
      process.env,
    );
    await vi.waitFor(() => expect(inspector.streams).toBe(1));
    const jobSucceeded = jobEvent(a.events, "job:succeeded");
    const job = await a.enqueue("work", {});
    const r = await following;
    await jobSucceeded.for(job.id).catch(() => undefined);
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split("\n");
    expect(lines).toHaveLength(3);
    expect((JSON.parse(lines[0]!) as ActorsView).nodeId).toBe("obs-a");
    for (const line of lines.slice(1))
      expect((JSON.parse(line) as { actor: string }).actor).toMatch(/^slot-/);
    await vi.waitFor(() => expect(inspector.streams).toBe(0));
  });
});

describe("serveMetrics", () => {
  it("serves the metrics on a port of its own, and only GET", async () => {
    const own = await serveMetrics(metrics, { port: 0 });
    try {
      expect(own.url).toBe(`http://127.0.0.1:${own.port}/metrics`);
      const res = await fetch(own.url);
      expect(res.status).toBe(200);
      expect(await res.text()).toContain("pawl_jobs_claimed_total{");
      expect((await fetch(own.url, { method: "POST" })).status).toBe(405);
      expect((await fetch(own.url.replace("/metrics", "/other"))).status).toBe(404);
      // Without an inspector, its path is not served.
      expect((await fetch(own.url.replace("/metrics", "/debug/actors"))).status).toBe(404);
    } finally {
      await own.close();
    }
  });
});
