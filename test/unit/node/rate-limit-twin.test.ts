/**
 * A rate-limited backlog on one node, on the in-memory twin and a ManualClock: every job runs once with one
 * attempt, no window of the twin's log holds more than the limit, most of the backlog is refused from the
 * node's memory (no admission call), and each job is refused a bounded number of times: the spread sends
 * refused jobs to distinct later slots instead of back to the claim at once.
 */
import { afterEach, expect, it } from "vitest";
import { NoneCoordinator } from "../../../coordinators/none/none-coordinator.js";
import { ManualClock } from "../../../src/core/clock.js";
import { buildNewJob } from "../../../src/input/enqueue-input.js";
import { PawlEventEmitter } from "../../../src/core/events.js";
import { silentLogger } from "../../../src/core/logger.js";
import { NodeRuntime } from "../../../src/node/node-runtime.js";
import { resolveJobType } from "../../../src/node/registry.js";
import { resolveRuntimeOptions } from "../../../src/input/runtime-config.js";
import { ClassicClaimer } from "../../../src/store/claim/claimer.js";
import { InMemoryJobStore } from "../../helpers/in-memory-store.js";

const clock = new ManualClock(Date.parse("2030-01-01T00:00:00Z"));
let runtime: NodeRuntime | null = null;
afterEach(async () => {
  await runtime?.stop(0);
  runtime = null;
});

it("a backlog of 60 jobs under 5 per second: at most 5 per window, one attempt each, few refusals", async () => {
  const store = new InMemoryJobStore(clock);
  const admitRate = store.admitRate.bind(store);
  let admissions = 0;
  store.admitRate = (...args) => {
    admissions++;
    return admitRate(...args);
  };
  const events = new PawlEventEmitter();
  const type = resolveJobType("t", async () => "ok", { rateLimit: { limit: 5, perMs: 1000 } });
  runtime = new NodeRuntime({
    nodeId: "n1",
    concurrency: 4,
    prefetch: 20,
    claimMode: "full",
    boostIntervalMs: 0,
    completionFlushMs: 2,
    options: resolveRuntimeOptions({}, 50),
    store,
    types: new Map([["t", type]]),
    events,
    logger: silentLogger,
    clock,
    coordinator: new NoneCoordinator(),
    createClaimer: (options) => new ClassicClaimer(options),
    queues: null,
  });
  const jobs = Array.from({ length: 60 }, (_, i) =>
    buildNewJob("t", { i }, { runAt: new Date(clock.now() - 1) }, undefined, 1 << 20),
  );
  const ids = (await store.enqueue(jobs)).map((j) => j.id);
  let succeeded = 0;
  let local = 0;
  let refusals = 0;
  events.on("job:succeeded", () => succeeded++);
  events.on("job:rate-limited", (e) => {
    refusals++;
    if (e.local) local++;
  });
  runtime.start();
  for (let i = 0; i < 4000 && succeeded < 60; i++) {
    await new Promise((r) => setImmediate(r));
    clock.advance(5);
  }
  expect(succeeded).toBe(60);
  expect(ids.every((id) => store.jobs.get(id)?.attempts === 1)).toBe(true);
  const log = (store.rateLogs.get("type:t") ?? []).slice().sort((a, b) => a - b);
  for (let i = 0; i < log.length; i++) {
    expect(
      log.filter((t) => t > (log[i] as number) - 1000 && t <= (log[i] as number)).length,
    ).toBeLessThanOrEqual(5);
  }
  // 60 jobs at 5 a second take 11 windows after the first; the spread keeps the limit nearly full.
  expect((log[log.length - 1] as number) - (log[0] as number)).toBeLessThan(14_000);
  // The spread: each job is refused about once (not once per poll), and mostly without a round trip.
  expect(refusals).toBeLessThan(2 * 60);
  expect(local).toBeGreaterThan(refusals / 2);
  expect(admissions).toBeLessThan(60 + refusals - local + 1);
});
