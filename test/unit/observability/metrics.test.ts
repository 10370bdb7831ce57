/**
 * createMetrics against a fake node (a real event emitter, a hand-made actor tree, a fake store): every
 * event's counting, the scrape-time gauges, the cached and bounded reads (and their failures), and
 * cleanup. The exposition text is also linted by `promtool check metrics` when promtool is installed.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { spawnSync } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Registry } from "prom-client";
import { type ActorTree, type JobEventInfo } from "../../../src/index.js";
import { PawlEventEmitter } from "../../../src/core/events.js";
import type { JobCount } from "../../../src/store/jobs/read-jobs.js";
import { createMetrics, metricsHandler, type PawlMetrics } from "../../../observability/index.js";
import { TypeHistogram } from "../../../observability/hot-path.js";
import type { ClusterSnapshot, MetricsSource } from "../../../observability/metrics.js";
import { metricKey as key, parseMetrics as parse } from "../../helpers/metrics.js";

const promtool = spawnSync("promtool", ["--version"]).status === 0;

function job(type: string, id = "1"): JobEventInfo {
  return { id, type, queue: "default", priority: 10, attempt: 1, maxAttempts: 3 };
}

function tree(over: Partial<ActorTree> = {}, breakerState = "OPEN", mode = "deep-idle"): ActorTree {
  return {
    id: "node",
    machine: "node",
    nodeId: "n1",
    state: "running",
    status: "active",
    context: { concurrency: 4, prefetch: 200, busy: 1, free: 3 },
    buffered: 5,
    pendingOutcomes: 0,
    coordinator: {
      transport: "amqp",
      connected: true,
      published: 3,
      received: 2,
      suppressed: 1,
      malformed: 0,
      reconnects: 0,
      dropped: 0,
    },
    children: [
      {
        id: "poller",
        machine: "poller",
        state: "waiting",
        status: "active",
        context: { mode, delayMs: 60_000 },
        children: [
          {
            id: "strategy",
            machine: "pollingStrategy",
            state: mode,
            status: "active",
            context: { mode, delayMs: 60_000 },
            children: [],
          },
        ],
      },
      {
        id: "breaker-svc",
        machine: "breaker",
        state: "active",
        status: "active",
        context: { service: "svc", state: breakerState },
        children: [],
      },
    ],
    ...over,
  };
}

function fakeNode() {
  const events = new PawlEventEmitter();
  const state = {
    tree: null as ActorTree | null,
    running: false,
    counts: [] as JobCount[] | Error,
    cluster: null as ClusterSnapshot | null,
  };
  const counts = vi.fn(async (_maxTypes?: number) => {
    if (state.counts instanceof Error) throw state.counts;
    return state.counts;
  });
  const cluster = vi.fn(async () => {
    if (!state.cluster) throw new Error("no cluster");
    return state.cluster;
  });
  const source: MetricsSource = {
    nodeId: "n1",
    get running() {
      return state.running;
    },
    on: (name, listener) => events.on(name, listener),
    inspect: () => state.tree,
    store: { counts },
    cluster,
  };
  return { events, state, counts, cluster, source };
}

let open: PawlMetrics[] = [];
afterEach(() => {
  for (const m of open) m.close();
  open = [];
});

function metricsOf(source: MetricsSource, options: Parameters<typeof createMetrics>[1] = {}): PawlMetrics {
  const m = createMetrics(source, { queueDepthCacheMs: 0, clusterCacheMs: 0, ...options });
  open.push(m);
  return m;
}

const scrape = async (m: PawlMetrics) => parse(await m.metrics());

describe("counting the runtime's events", () => {
  it("claims, boosts, polls and wakeups", async () => {
    const { events, source } = fakeNode();
    const m = metricsOf(source);
    events.emit("claim", { jobs: [job("a"), job("a"), job("b")], limit: 10, durationMs: 3, boosts: [1, 5] });
    events.emit("poll", { mode: "burst", delayMs: 500, claimed: 3, limit: 10, durationMs: 3 });
    events.emit("poll", { mode: "normal", delayMs: 2000, claimed: 0, limit: 10, durationMs: 7 });
    events.emit("poll", { mode: "normal", delayMs: 2000, claimed: 0, limit: 0, durationMs: 0 });
    events.emit("wakeup", { source: "local" });
    events.emit("wakeup", { source: "coordinator", hint: { priority: 30, source: "other" } });
    events.emit("wakeup", { source: "coordinator" });
    const s = await scrape(m);
    expect(s.get(key("pawl_jobs_claimed_total", { type: "a" }))).toBe(2);
    expect(s.get(key("pawl_jobs_claimed_total", { type: "b" }))).toBe(1);
    expect(s.get("pawl_claim_batch_size_count")).toBe(1);
    expect(s.get("pawl_claim_batch_size_sum")).toBe(3);
    expect(s.get("pawl_jobs_boosted_total")).toBe(2);
    expect(s.get("pawl_boost_levels_sum")).toBe(6);
    expect(s.get(key("pawl_boost_levels_bucket", { le: "4" }))).toBe(1);
    expect(s.get("pawl_polls_total")).toBe(2);
    expect(s.get("pawl_empty_polls_total")).toBe(1);
    expect(s.get("pawl_claim_duration_seconds_count")).toBe(2);
    expect(s.get("pawl_claim_duration_seconds_sum")).toBeCloseTo(0.01);
    expect(s.get(key("pawl_wakeups_total", { source: "local" }))).toBe(1);
    expect(s.get(key("pawl_wakeups_total", { source: "coordinator" }))).toBe(2);
    // No tree (node not started): the last poll tells the mode and delay.
    expect(s.get(key("pawl_polling_mode", { mode: "normal" }))).toBe(1);
    expect(s.get(key("pawl_polling_mode", { mode: "burst" }))).toBe(0);
    expect(s.get("pawl_poll_delay_seconds")).toBe(2);
    expect(s.get("pawl_last_poll_timestamp_seconds")).toBeGreaterThan(Date.now() / 1000 - 60);
  });

  it("durable steps by kind and outcome, and durable parks by reason, with bounded labels", async () => {
    const { events, source } = fakeNode();
    const m = metricsOf(source);
    const t = job("d");
    const step = { jobId: "1", type: "d", step: "send-42" } as const;
    events.emit("durable:step", { ...step, kind: "step", outcome: "run" });
    events.emit("durable:step", { ...step, kind: "step", outcome: "replayed" });
    events.emit("durable:step", { ...step, step: "send-43", kind: "step", outcome: "replayed" });
    events.emit("durable:step", { ...step, kind: "sleep", outcome: "failed" });
    events.emit("job:waiting", { job: t, timeoutMs: 10, durable: { step: "nap", reason: "sleep" } });
    events.emit("job:waiting", { job: t, timeoutMs: null }); // the unnamed wait: not a durable park
    const s = await scrape(m);
    expect(s.get(key("pawl_durable_steps_total", { type: "d", kind: "step", outcome: "run" }))).toBe(1);
    expect(s.get(key("pawl_durable_steps_total", { type: "d", kind: "step", outcome: "replayed" }))).toBe(2);
    expect(s.get(key("pawl_durable_steps_total", { type: "d", kind: "sleep", outcome: "failed" }))).toBe(1);
    expect(s.get(key("pawl_durable_parks_total", { type: "d", reason: "sleep" }))).toBe(1);
    expect([...s.keys()].filter((k) => k.includes("send-4"))).toEqual([]);
  });

  it("claim statements: time per kind, and timeouts per kind, every kind from 0", async () => {
    const { events, source } = fakeNode();
    const m = metricsOf(source);
    const before = await scrape(m);
    for (const kind of ["keyed", "unkeyed", "floored", "full"]) {
      expect(before.get(key("pawl_claim_statement_seconds_count", { kind }))).toBe(0);
      expect(before.get(key("pawl_claim_statement_timeouts_total", { kind }))).toBe(0);
    }
    events.emit("claim-statement", {
      kind: "keyed",
      durationMs: 300,
      outcome: "timeout",
      claimed: 0,
      budgetMs: 300,
    });
    events.emit("claim-statement", {
      kind: "keyed",
      durationMs: 20,
      outcome: "ok",
      claimed: 4,
      budgetMs: 600,
    });
    events.emit("claim-statement", { kind: "full", durationMs: 2, outcome: "ok", claimed: 0, budgetMs: 500 });
    const s = await scrape(m);
    expect(s.get(key("pawl_claim_statement_seconds_count", { kind: "keyed" }))).toBe(2);
    expect(s.get(key("pawl_claim_statement_seconds_sum", { kind: "keyed" }))).toBeCloseTo(0.32);
    expect(s.get(key("pawl_claim_statement_seconds_bucket", { kind: "keyed", le: "0.25" }))).toBe(1);
    expect(s.get(key("pawl_claim_statement_seconds_count", { kind: "full" }))).toBe(1);
    expect(s.get(key("pawl_claim_statement_timeouts_total", { kind: "keyed" }))).toBe(1);
    expect(s.get(key("pawl_claim_statement_timeouts_total", { kind: "full" }))).toBe(0);
  });

  it("one outcome per finished attempt, timeouts, durations, pickup latency and the watchdog", async () => {
    const { events, source } = fakeNode();
    const m = metricsOf(source);
    const t = job("t");
    const error = new Error("x");
    events.emit("job:started", { job: t, pickupLatencyMs: 1500 });
    events.emit("job:started", { job: t, pickupLatencyMs: -5 }); // clock skew: clamped to 0
    events.emit("job:succeeded", { job: t, durationMs: 250 });
    events.emit("job:retried", { job: t, error, delayMs: 1, timedOut: false });
    events.emit("job:retried", { job: t, error, delayMs: 1, timedOut: true });
    events.emit("job:dead", { job: t, error, reason: "exhausted", timedOut: true });
    events.emit("job:dead", { job: t, error, reason: "non-retryable", timedOut: false });
    events.emit("job:snoozed", { job: t, delayMs: 5 });
    events.emit("job:canceled", { job: t });
    events.emit("job:rescheduled", { job: t, reason: "breaker", delayMs: 5 });
    events.emit("job:rescheduled", { job: t, reason: "permit", delayMs: 5 });
    events.emit("job:rescheduled", { job: t, reason: "rate-limit", delayMs: 5 });
    events.emit("job:rescheduled", { job: t, reason: "shutdown", delayMs: 0 });
    events.emit("job:waiting", { job: t, timeoutMs: null });
    events.emit("job:lost", { job: t, outcome: "success" });
    events.emit("watchdog:soft-warning", { job: t, deadline: 1 });
    events.emit("watchdog:cancel-request", { job: t, deadline: 1 });
    events.emit("watchdog:hard-timeout", { job: t, deadline: 1 });
    events.emit("watchdog:hard-timeout", { job: t, deadline: 1 });
    const s = await scrape(m);
    const outcomes = Object.fromEntries(
      [...s]
        .filter(([k]) => k.startsWith("pawl_job_outcomes_total{"))
        .map(([k, v]) => [/outcome="(\w+)"/.exec(k)![1], v]),
    );
    expect(outcomes).toEqual({
      succeeded: 1,
      retried: 1,
      timed_out: 1,
      dead: 2,
      snoozed: 1,
      canceled: 1,
      rescheduled_breaker: 1,
      rescheduled_permit: 1,
      rescheduled_rate_limit: 1,
      rescheduled_shutdown: 1,
      waiting: 1,
      lost: 1,
    });
    expect(s.get(key("pawl_job_timeouts_total", { type: "t" }))).toBe(2);
    expect(s.get(key("pawl_jobs_started_total", { type: "t" }))).toBe(2);
    expect(s.get(key("pawl_job_duration_seconds_sum", { type: "t" }))).toBe(0.25);
    expect(s.get(key("pawl_job_pickup_latency_seconds_sum", { type: "t" }))).toBe(1.5);
    expect(s.get(key("pawl_job_pickup_latency_seconds_bucket", { type: "t", le: "0.005" }))).toBe(1);
    expect(s.get(key("pawl_watchdog_soft_warnings_total", { type: "t" }))).toBe(1);
    expect(s.get(key("pawl_watchdog_cancel_requests_total", { type: "t" }))).toBe(1);
    expect(s.get(key("pawl_watchdog_hard_timeouts_total", { type: "t" }))).toBe(2);
  });

  it("rate limits: refusals by type and full key (payload keys as one value), window usage", async () => {
    const { events, source } = fakeNode();
    const m = metricsOf(source);
    const t = job("api.call");
    events.emit("job:rate-limited", { job: t, keys: ["type:api.call"], retryInMs: 5, local: false });
    events.emit("job:rate-limited", {
      job: t,
      keys: ["type:api.call", "queue:q"],
      retryInMs: 5,
      local: true,
    });
    events.emit("job:rate-limited", { job: t, keys: ["key:tenant-1"], retryInMs: 5, local: true });
    events.emit("job:rate-limited", { job: t, keys: ["key:tenant-2"], retryInMs: 5, local: false });
    const w = { type: "api.call", full: false, openInMs: 0 };
    events.emit("rate-limit:window", { ...w, key: "type:api.call", used: 7, limit: 50 });
    events.emit("rate-limit:window", { ...w, key: "type:api.call", used: 9, limit: 50 });
    events.emit("rate-limit:window", { ...w, key: "key:tenant-1", used: 1, limit: 2 });
    const s = await scrape(m);
    expect(s.get(key("pawl_rate_limited_total", { type: "api.call", key: "type:api.call" }))).toBe(2);
    expect(s.get(key("pawl_rate_limited_total", { type: "api.call", key: "queue:q" }))).toBe(1);
    expect(s.get(key("pawl_rate_limited_total", { type: "api.call", key: "key:*" }))).toBe(2);
    expect(s.get(key("pawl_rate_limit_window_used", { key: "type:api.call" }))).toBe(9);
    expect(s.get(key("pawl_rate_limit_window_limit", { key: "type:api.call" }))).toBe(50);
    expect([...s.keys()].some((k) => k.includes("tenant"))).toBe(false);
  });

  it("breakers, the coordinator's link, cluster events and runtime errors", async () => {
    const { events, source } = fakeNode();
    const m = metricsOf(source);
    events.emit("breaker:change", { service: "svc", from: "CLOSED", to: "OPEN" });
    events.emit("breaker:change", { service: "svc", from: "OPEN", to: "HALF_OPEN" });
    events.emit("coordinator:disconnected", { transport: "postgres", error: "gone" });
    const at = new Date("2030-01-01T00:00:00Z");
    events.emit("cluster:heartbeat", {
      nodeId: "n1",
      heartbeatAt: at,
      startedAt: at,
      lagMs: 40,
      durationMs: 3,
      nextDelayMs: 5000,
      wasDeclaredDead: false,
    });
    events.emit("cluster:node-dead", { nodeId: "n2", lastHeartbeat: at, detectedBy: "n1" });
    events.emit("cluster:orphans-recovered", {
      sweeper: "n1",
      startup: false,
      jobs: [
        { id: "1", type: "a", nodeId: "n2", attempt: 1, status: "PENDING" },
        { id: "2", type: "a", nodeId: "n2", attempt: 5, status: "DEAD" },
        { id: "3", type: "a", nodeId: "n2", attempt: 1, status: "PENDING" },
      ],
    });
    events.emit("cluster:lease-audit", {
      nodeId: "n1",
      leased: 5,
      released: [
        { id: "7", type: "a" },
        { id: "8", type: "a" },
      ],
      durationMs: 3,
    });
    events.emit("cluster:lease-acquired", { name: "pawl:prune", nodeId: "n1", expiresAt: at });
    events.emit("cluster:lease-lost", { name: "pawl:prune", nodeId: "n1", reason: "expired" });
    events.emit("cluster:clock-skew", { skewMs: -1500, roundTripMs: 2, exceeded: true });
    events.emit("recurring:fired", { name: "nightly", fireAt: at, jobId: "9", type: "report" });
    events.emit("prune:done", { succeeded: 10, canceled: 0, dead: 2, batches: 1, durationMs: 5 });
    events.emit("error", { where: "claim", error: new Error("db down") });
    const s = await scrape(m);
    expect(s.get(key("pawl_breaker_transitions_total", { service: "svc", from: "closed", to: "open" }))).toBe(
      1,
    );
    expect(
      s.get(key("pawl_breaker_transitions_total", { service: "svc", from: "open", to: "half_open" })),
    ).toBe(1);
    expect(s.get(key("pawl_breaker_state", { service: "svc", state: "half_open" }))).toBe(1);
    expect(s.get(key("pawl_breaker_state", { service: "svc", state: "open" }))).toBe(0);
    expect(s.get(key("pawl_coordinator_connected", { transport: "postgres" }))).toBe(0);
    expect(s.get("pawl_cluster_heartbeats_total")).toBe(1);
    expect(s.get("pawl_cluster_heartbeat_timestamp_seconds")).toBe(at.getTime() / 1000);
    expect(s.get("pawl_event_loop_lag_max_seconds")).toBe(0.04);
    expect(s.get("pawl_cluster_nodes_declared_dead_total")).toBe(1);
    expect(s.get(key("pawl_cluster_orphans_recovered_total", { type: "a", status: "pending" }))).toBe(2);
    expect(s.get(key("pawl_cluster_orphans_recovered_total", { type: "a", status: "dead" }))).toBe(1);
    expect(s.get(key("pawl_cluster_lease_audit_released_total", { type: "a" }))).toBe(2);
    expect(s.get(key("pawl_cluster_leases_acquired_total", { lease: "pawl:prune" }))).toBe(1);
    expect(s.get(key("pawl_cluster_leases_lost_total", { lease: "pawl:prune" }))).toBe(1);
    expect(s.get("pawl_cluster_clock_skew_seconds")).toBe(-1.5);
    expect(s.get("pawl_cluster_clock_skew_exceeded")).toBe(1);
    expect(s.get(key("pawl_recurring_fires_total", { schedule: "nightly" }))).toBe(1);
    expect(s.get(key("pawl_pruned_jobs_total", { status: "succeeded" }))).toBe(10);
    expect(s.get(key("pawl_pruned_jobs_total", { status: "dead" }))).toBe(2);
    expect(s.has(key("pawl_pruned_jobs_total", { status: "canceled" }))).toBe(false);
    expect(s.get(key("pawl_errors_total", { where: "claim" }))).toBe(1);
  });
});

describe("gauges read from the actor tree at scrape time", () => {
  it("slots, polling mode, breaker states and the coordinator's counters as deltas", async () => {
    const { state, source } = fakeNode();
    state.tree = tree();
    state.running = true;
    const m = metricsOf(source);
    let s = await scrape(m);
    expect(s.get("pawl_node_running")).toBe(1);
    expect(s.get(key("pawl_node_info", { node_id: "n1" }))).toBe(1);
    expect(s.get("pawl_jobs_in_flight")).toBe(1);
    expect(s.get("pawl_slots_free")).toBe(3);
    expect(s.get("pawl_jobs_buffered")).toBe(5);
    expect(s.get(key("pawl_polling_mode", { mode: "deep-idle" }))).toBe(1);
    expect(s.get(key("pawl_polling_mode", { mode: "normal" }))).toBe(0);
    expect(s.get("pawl_poll_delay_seconds")).toBe(60);
    expect(s.get(key("pawl_breaker_state", { service: "svc", state: "open" }))).toBe(1);
    expect(s.get(key("pawl_breaker_state", { service: "svc", state: "closed" }))).toBe(0);
    expect(s.get(key("pawl_coordinator_connected", { transport: "amqp" }))).toBe(1);
    expect(s.get("pawl_coordinator_hints_published_total")).toBe(3);
    expect(s.get("pawl_coordinator_hints_received_total")).toBe(2);
    expect(s.get("pawl_coordinator_hints_suppressed_total")).toBe(1);

    const c = tree().coordinator!;
    state.tree = tree(
      { coordinator: { ...c, published: 10, received: 2, connected: false, reconnects: 1 } },
      "CLOSED",
      "burst",
    );
    s = await scrape(m);
    expect(s.get("pawl_coordinator_hints_published_total")).toBe(10);
    expect(s.get("pawl_coordinator_hints_received_total")).toBe(2);
    expect(s.get("pawl_coordinator_reconnects_total")).toBe(1);
    expect(s.get(key("pawl_coordinator_connected", { transport: "amqp" }))).toBe(0);
    expect(s.get(key("pawl_breaker_state", { service: "svc", state: "closed" }))).toBe(1);
    expect(s.get(key("pawl_polling_mode", { mode: "burst" }))).toBe(1);

    // A new coordinator starts its totals from zero: the counter keeps going up.
    state.tree = tree({ coordinator: { ...c, published: 4 } });
    s = await scrape(m);
    expect(s.get("pawl_coordinator_hints_published_total")).toBe(14);
  });

  it("reads the tree once per scrape, and survives an inspect() that throws", async () => {
    const { state, source } = fakeNode();
    state.tree = tree();
    const inspect = vi.fn(() => state.tree);
    const m = metricsOf({ ...source, inspect, on: source.on, store: source.store });
    await m.metrics();
    expect(inspect).toHaveBeenCalledTimes(1);
    await m.metrics();
    expect(inspect).toHaveBeenCalledTimes(2);
    inspect.mockImplementation(() => {
      throw new Error("broken snapshot");
    });
    const s = await scrape(m);
    expect(s.get(key("pawl_errors_total", { where: "metrics inspect" }))).toBe(1);
  });
});

describe("queue depth and cluster view: cached, bounded, never failing a scrape", () => {
  it("reports depth by status and type and the DLQ size, drops series that are gone", async () => {
    const { state, source, counts } = fakeNode();
    state.counts = [
      { status: "PENDING", type: "a", count: 7 },
      { status: "RUNNING", type: "a", count: 2 },
      { status: "DEAD", type: "a", count: 3 },
      { status: "DEAD", type: "b", count: 1 },
    ];
    const m = metricsOf(source, { queueDepthMaxTypes: 50 });
    let s = await scrape(m);
    expect(counts).toHaveBeenCalledTimes(1);
    expect(counts).toHaveBeenCalledWith(50);
    expect(s.get(key("pawl_queue_depth", { status: "pending", type: "a" }))).toBe(7);
    expect(s.get(key("pawl_queue_depth", { status: "running", type: "a" }))).toBe(2);
    expect(s.get(key("pawl_queue_depth", { status: "dead", type: "b" }))).toBe(1);
    expect(s.get("pawl_dlq_size")).toBe(4);
    state.counts = [{ status: "PENDING", type: "a", count: 1 }];
    s = await scrape(m);
    expect(counts).toHaveBeenCalledTimes(2);
    expect([...s.keys()].filter((k) => k.startsWith("pawl_queue_depth{"))).toEqual([
      key("pawl_queue_depth", { status: "pending", type: "a" }),
    ]);
    expect(s.get("pawl_dlq_size")).toBe(0);
  });

  it("reuses one count within the cache window", async () => {
    const { state, source, counts } = fakeNode();
    state.counts = [{ status: "PENDING", type: "a", count: 7 }];
    const m = metricsOf(source, { queueDepthCacheMs: 60_000 });
    await m.metrics();
    state.counts = [{ status: "PENDING", type: "a", count: 8 }];
    const s = await scrape(m);
    expect(counts).toHaveBeenCalledTimes(1);
    expect(s.get(key("pawl_queue_depth", { status: "pending", type: "a" }))).toBe(7);
  });

  it("keeps the last values and counts the error when the count fails", async () => {
    const { state, source } = fakeNode();
    state.counts = [{ status: "DEAD", type: "a", count: 3 }];
    const m = metricsOf(source);
    await m.metrics();
    state.counts = new Error("connection refused");
    const s = await scrape(m);
    expect(s.get(key("pawl_queue_depth", { status: "dead", type: "a" }))).toBe(3);
    expect(s.get("pawl_dlq_size")).toBe(3);
    expect(s.get(key("pawl_scrape_read_errors_total", { read: "queue_depth", reason: "failed" }))).toBe(1);
  });

  it("answers within the timeout when the count hangs, counting it once", async () => {
    const { source } = fakeNode();
    let release!: (rows: JobCount[]) => void;
    const hanging = vi.fn(() => new Promise<JobCount[]>((resolve) => (release = resolve)));
    const m = metricsOf(
      { ...source, on: source.on, inspect: source.inspect, store: { counts: hanging } },
      { readTimeoutMs: 20 },
    );
    let s = await scrape(m);
    expect(s.has("pawl_dlq_size")).toBe(true);
    expect([...s.keys()].filter((k) => k.startsWith("pawl_queue_depth{"))).toEqual([]);
    expect(s.get(key("pawl_scrape_read_errors_total", { read: "queue_depth", reason: "timeout" }))).toBe(1);
    // A second scrape waits for the same count (no new query) and does not count it again.
    s = await scrape(m);
    expect(hanging).toHaveBeenCalledTimes(1);
    expect(s.get(key("pawl_scrape_read_errors_total", { read: "queue_depth", reason: "timeout" }))).toBe(1);
    release([{ status: "PENDING", type: "late", count: 4 }]);
    await vi.waitFor(async () => {
      expect((await scrape(m)).get(key("pawl_queue_depth", { status: "pending", type: "late" }))).toBe(4);
    });
  });

  it("reports nodes alive and dead, heartbeat ages and the leases this node holds", async () => {
    const { state, source, cluster } = fakeNode();
    state.cluster = {
      nodes: [
        { nodeId: "n1", ageMs: 1200, alive: true },
        { nodeId: "n2", ageMs: 3000, alive: true },
        { nodeId: "n3", ageMs: 90_000, alive: false },
      ],
      leases: [
        { name: "pawl:orphan-sweep", owner: "n1", held: true },
        { name: "pawl:prune", owner: "n2", held: true },
        { name: "pawl:recurring", owner: "n1", held: false },
      ],
    };
    const m = metricsOf(source);
    let s = await scrape(m);
    expect(cluster).toHaveBeenCalledTimes(1);
    expect(s.get(key("pawl_cluster_nodes", { state: "alive" }))).toBe(2);
    expect(s.get(key("pawl_cluster_nodes", { state: "dead" }))).toBe(1);
    expect(s.get(key("pawl_cluster_node_heartbeat_age_seconds", { node_id: "n3" }))).toBe(90);
    expect(s.get(key("pawl_cluster_lease_held", { lease: "pawl:orphan-sweep" }))).toBe(1);
    expect(s.get(key("pawl_cluster_lease_held", { lease: "pawl:prune" }))).toBe(0);
    expect(s.get(key("pawl_cluster_lease_held", { lease: "pawl:recurring" }))).toBe(0);
    state.cluster = { nodes: [{ nodeId: "n1", ageMs: 100, alive: true }], leases: [] };
    s = await scrape(m);
    expect([...s.keys()].filter((k) => k.startsWith("pawl_cluster_node_heartbeat_age_seconds"))).toEqual([
      key("pawl_cluster_node_heartbeat_age_seconds", { node_id: "n1" }),
    ]);
    expect([...s.keys()].filter((k) => k.startsWith("pawl_cluster_lease_held"))).toEqual([]);
    state.cluster = null; // the read fails: last values kept, error counted
    s = await scrape(m);
    expect(s.get(key("pawl_cluster_nodes", { state: "alive" }))).toBe(1);
    expect(s.get(key("pawl_scrape_read_errors_total", { read: "cluster", reason: "failed" }))).toBe(1);
  });
});

describe("registry, options and cleanup", () => {
  it("close() unsubscribes every listener and frees the names on the user's registry", async () => {
    const { events, source } = fakeNode();
    const registry = new Registry();
    const mine = new (await import("prom-client")).Counter({
      name: "app_requests_total",
      help: "h",
      registers: [registry],
    });
    mine.inc();
    const m = createMetrics(source, { registry, prefix: "jobs_" });
    expect(m.registry).toBe(registry);
    expect(events.has("job:succeeded")).toBe(true);
    expect(() => createMetrics(source, { registry, prefix: "jobs_" })).toThrow(/already been registered/);
    const text = await m.metrics();
    expect(text).toContain("jobs_jobs_claimed_total");
    expect(text).toContain("app_requests_total 1");
    m.close();
    m.close();
    for (const name of [
      "claim",
      "poll",
      "job:started",
      "job:succeeded",
      "breaker:change",
      "cluster:heartbeat",
      "error",
    ] as const) {
      expect(events.has(name)).toBe(false);
    }
    expect(await registry.metrics()).not.toContain("jobs_");
    createMetrics(source, { registry, prefix: "jobs_" }).close();
  });

  it("adds Node's default process metrics on request, and validates options", async () => {
    const { source } = fakeNode();
    const m = metricsOf(source, { defaultMetrics: true });
    const text = await m.metrics();
    expect(text).toContain("pawl_process_cpu_user_seconds_total");
    expect(text).toContain("pawl_nodejs_eventloop_lag_seconds");
    expect(() => createMetrics(source, { prefix: "bad-prefix" })).toThrow(TypeError);
    expect(() => createMetrics(source, { queueDepthCacheMs: -1 })).toThrow(TypeError);
  });

  it.skipIf(!promtool)("passes promtool check metrics", async () => {
    const { events, state, source } = fakeNode();
    state.tree = tree();
    state.counts = [{ status: "PENDING", type: "a", count: 7 }];
    state.cluster = { nodes: [{ nodeId: "n1", ageMs: 10, alive: true }], leases: [] };
    const m = metricsOf(source);
    events.emit("claim", { jobs: [job("a")], limit: 10, durationMs: 3, boosts: [1] });
    events.emit("job:started", { job: job("a"), pickupLatencyMs: 3 });
    const r = spawnSync("promtool", ["check", "metrics"], { input: await m.metrics(), encoding: "utf8" });
    expect(r.stdout + r.stderr).toBe("");
    expect(r.status).toBe(0);
  });
});

describe("TypeHistogram", () => {
  it("counts bounds inclusively, cumulates buckets, and resets with the registry", async () => {
    const registry = new Registry();
    const h = new TypeHistogram("t_seconds", "help", [1, 0.1]).register(registry);
    h.observe("a", 0.1);
    h.observe("a", 0.5);
    h.observe("a", 5);
    h.zero("b");
    const s = parse(await registry.metrics());
    expect(s.get(key("t_seconds_bucket", { type: "a", le: "0.1" }))).toBe(1);
    expect(s.get(key("t_seconds_bucket", { type: "a", le: "1" }))).toBe(2);
    expect(s.get(key("t_seconds_bucket", { type: "a", le: "+Inf" }))).toBe(3);
    expect(s.get(key("t_seconds_sum", { type: "a" }))).toBe(5.6);
    expect(s.get(key("t_seconds_count", { type: "a" }))).toBe(3);
    expect(s.get(key("t_seconds_count", { type: "b" }))).toBe(0);
    expect(await registry.getMetricsAsJSON()).toMatchObject([
      { name: "t_seconds", type: "histogram", help: "help" },
    ]);
    registry.resetMetrics();
    expect(await registry.metrics()).not.toContain("t_seconds_bucket");
  });
});

describe("metricsHandler", () => {
  it("serves its path, passes others to next, and answers a failing collector with a 500 that logs the cause", async () => {
    const ok = { contentType: "text/plain; version=0.0.4; charset=utf-8", metrics: async () => "x 1\n" };
    const failing = { ...ok, metrics: async () => Promise.reject(new Error("user collector broke")) };
    const a = metricsHandler(ok, { path: "/metrics" });
    const logged: string[] = [];
    const logger = { ...console, error: (m: string, f?: object) => logged.push(`${m} ${JSON.stringify(f)}`) };
    const b = metricsHandler(failing, { logger });
    const server = createServer((req, res) => {
      // An Express-style mount strips the prefix from url and keeps it in originalUrl.
      if (req.url?.startsWith("/mounted")) {
        Object.assign(req, { originalUrl: req.url, url: req.url.slice("/mounted".length) || "/" });
        return a(req, res, () => res.writeHead(418).end());
      }
      if (req.url === "/broken") return b(req, res);
      a(req, res, () => res.writeHead(418).end());
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const res = await fetch(`${base}/metrics/`);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe(ok.contentType);
      expect(await res.text()).toBe("x 1\n");
      expect((await fetch(`${base}/other`)).status).toBe(418);
      expect((await fetch(`${base}/mounted/metrics`)).status).toBe(418);
      expect((await fetch(`${base}/metrics`, { method: "HEAD" })).status).toBe(200);
      const broken = await fetch(`${base}/broken`);
      expect(broken.status).toBe(500);
      // The cause goes to the log, never to the client: a collector's or database's text can name secrets.
      expect(await broken.text()).not.toContain("user collector broke");
      expect(logged.join("\n")).toContain("user collector broke");
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
