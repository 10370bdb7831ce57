/**
 * The node runtime on the in-memory twin of the store (test/helpers/in-memory-store.ts) and a ManualClock:
 * claim, dispatch, outcomes, stop with a claim in flight, claim ahead, drain, and dropping the buffer, with no
 * database.
 * Time moves only when the test advances the clock; each step waits on the store's rows or on events.
 */
import { afterEach, describe, expect, it } from "vitest";
import { NoneCoordinator } from "../../../coordinators/none/none-coordinator.js";
import { ManualClock } from "../../../src/core/clock.js";
import { buildNewJob } from "../../../src/input/enqueue-input.js";
import { PawlEventEmitter } from "../../../src/core/events.js";
import { silentLogger } from "../../../src/core/logger.js";
import { NodeRuntime, outcomeBacklogLimit } from "../../../src/node/node-runtime.js";
import { resolveJobType, type Handler } from "../../../src/node/registry.js";
import { resolveRuntimeOptions } from "../../../src/input/runtime-config.js";
import type { ClaimArgs, ClaimedJob } from "../../../src/store/claim/claim-jobs.js";
import { ClassicClaimer } from "../../../src/store/claim/claimer.js";
import { InMemoryJobStore } from "../../helpers/in-memory-store.js";

const clock = new ManualClock(Date.parse("2030-01-01T00:00:00Z"));
let runtime: NodeRuntime | null = null;
afterEach(async () => {
  const r = runtime;
  runtime = null;
  if (r) {
    const stopped = r.stop(0);
    await until(async () => settledFlag(stopped));
  }
});

const settled = new WeakMap<Promise<unknown>, boolean>();
function settledFlag(p: Promise<unknown>): boolean {
  if (!settled.has(p)) {
    settled.set(p, false);
    void p.finally(() => settled.set(p, true));
  }
  return settled.get(p) === true;
}

/** Lets promises run and moves the clock in 5 ms steps until `done` holds (at most 60 s of clock time). */
async function until(done: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 12_000; i++) {
    if (await done()) return;
    await new Promise((r) => setImmediate(r));
    clock.advance(5);
  }
  throw new Error("condition not reached");
}

function node(
  store: InMemoryJobStore,
  handler: Handler,
  o: { concurrency?: number; prefetch?: number; queues?: Map<string, number> } = {},
) {
  const events = new PawlEventEmitter();
  runtime = new NodeRuntime({
    nodeId: "n1",
    concurrency: o.concurrency ?? 2,
    prefetch: o.prefetch ?? 4,
    claimMode: "full",
    boostIntervalMs: 0,
    completionFlushMs: 2,
    options: resolveRuntimeOptions({}, undefined),
    store,
    types: new Map([["t", resolveJobType("t", handler)]]),
    events,
    logger: silentLogger,
    clock,
    coordinator: new NoneCoordinator(),
    createClaimer: (options) => new ClassicClaimer(options),
    queues: o.queues ?? null,
  });
  return { runtime, events };
}

async function seed(store: InMemoryJobStore, n: number, queue = "default"): Promise<string[]> {
  const jobs = Array.from({ length: n }, (_, i) =>
    buildNewJob("t", { i }, { queue, runAt: new Date(clock.now() - 1) }, undefined, 1 << 20),
  );
  return (await store.enqueue(jobs)).map((j) => j.id);
}

const statuses = (store: InMemoryJobStore, ids: string[]) => ids.map((id) => store.jobs.get(id)?.status);

describe("NodeRuntime on the in-memory store", () => {
  it("claims, dispatches and completes jobs, emitting job:succeeded for each", async () => {
    const store = new InMemoryJobStore(clock);
    const ids = await seed(store, 5);
    const { runtime, events } = node(store, async (p: unknown) => (p as { i: number }).i * 2);
    const succeeded: string[] = [];
    events.on("job:succeeded", (e) => succeeded.push(e.job.id));
    runtime.start();
    await until(() => succeeded.length === 5);
    expect(statuses(store, ids)).toEqual(Array(5).fill("SUCCEEDED"));
    expect(ids.map((id) => store.jobs.get(id)?.result)).toEqual([0, 2, 4, 6, 8]);
  });

  it("stop() with a claim in flight waits for it and hands its jobs back, attempt not counted", async () => {
    const store = new InMemoryJobStore(clock);
    const ids = await seed(store, 3);
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => (release = r));
    const claim = store.claim.bind(store);
    let calls = 0;
    store.claim = async (args: ClaimArgs): Promise<ClaimedJob[]> => {
      calls++;
      await gate; // the test holds the claim open
      return claim(args);
    };
    let ran = 0;
    const { runtime } = node(store, async () => void ran++);
    runtime.start();
    await until(() => calls === 1);
    const stopped = runtime.stop(1000);
    settledFlag(stopped); // starts watching it (a first call always answers false)
    // Five seconds of clock later (past the grace) the claim still holds stop() open.
    for (let i = 0; i < 100; i++) {
      await new Promise((r) => setImmediate(r));
      clock.advance(50);
    }
    expect(settledFlag(stopped)).toBe(false);
    release();
    await until(() => settledFlag(stopped));
    expect(ran).toBe(0);
    expect(ids.map((id) => [store.jobs.get(id)?.status, store.jobs.get(id)?.attempts])).toEqual(
      Array(3).fill(["PENDING", 0]),
    );
  });

  it("claims ahead: a second claim starts while one is out, never a third, and stop() waits for both", async () => {
    const store = new InMemoryJobStore(clock);
    await seed(store, 100);
    const claim = store.claim.bind(store);
    const held: (() => void)[] = [];
    const limits: number[] = [];
    let out = 0;
    let maxOut = 0;
    store.claim = async (args: ClaimArgs): Promise<ClaimedJob[]> => {
      limits.push(args.limit);
      out++;
      maxOut = Math.max(maxOut, out);
      // The first claim lands at once (and comes back full); the test holds every later one open.
      if (limits.length > 1) await new Promise<void>((r) => held.push(r));
      const jobs = await claim(args);
      out--;
      return jobs;
    };
    let ran = 0;
    // concurrency 2, prefetch 8: room 10, low water 4, claim-ahead mark 2.
    const { runtime } = node(store, async () => void ran++, { concurrency: 2, prefetch: 8 });
    runtime.start();
    await until(() => held.length === 2);
    expect(limits[0]).toBe(10);
    // The second claim asked only for what the first left of the room: the buffer keeps its bound.
    expect((limits[1] as number) + (limits[2] as number)).toBeLessThanOrEqual(10 - 2);
    await until(() => ran === 10);
    for (let i = 0; i < 20; i++) {
      await new Promise((r) => setImmediate(r));
      clock.advance(50);
    }
    expect([held.length, maxOut]).toEqual([2, 2]);
    const stopped = runtime.stop(1000);
    settledFlag(stopped); // starts watching it
    held[0]?.();
    for (let i = 0; i < 20; i++) {
      await new Promise((r) => setImmediate(r));
      clock.advance(50);
    }
    expect(settledFlag(stopped)).toBe(false); // the other claim still holds it open
    held[1]?.();
    await until(() => settledFlag(stopped));
    const rows = [...store.jobs.values()];
    expect(rows.filter((j) => j.status === "SUCCEEDED")).toHaveLength(10);
    expect(rows.filter((j) => j.status === "PENDING" && j.attempts === 0)).toHaveLength(90);
  });

  it("drains: buffered jobs handed back at once, running ones given grace, then aborted and handed back", async () => {
    const store = new InMemoryJobStore(clock);
    const ids = await seed(store, 4);
    const aborted: string[] = [];
    const { runtime, events } = node(
      store,
      (_p, ctx) =>
        new Promise((_, reject) =>
          ctx.signal.addEventListener("abort", () => (aborted.push(ctx.jobId), reject(new Error("aborted")))),
        ),
      { concurrency: 1, prefetch: 3 },
    );
    const started: string[] = [];
    events.on("job:started", (e) => started.push(e.job.id));
    runtime.start();
    await until(() => started.length === 1 && runtime.buffered === 3);
    const running = started[0] as string;
    const stopped = runtime.stop(1000);
    // The buffered three are back before the grace ends; the running one is still held.
    await until(() =>
      ids.filter((id) => id !== running).every((id) => store.jobs.get(id)?.status === "PENDING"),
    );
    expect(clock.now()).toBeLessThan(Date.parse("2030-01-01T00:00:00Z") + 60_000);
    expect(store.jobs.get(running)?.status).toBe("RUNNING");
    expect(aborted).toEqual([]);
    await until(() => settledFlag(stopped));
    expect(await stopped).toBe(1);
    expect(aborted).toEqual([running]);
    expect(ids.map((id) => [store.jobs.get(id)?.status, store.jobs.get(id)?.attempts])).toEqual(
      Array(4).fill(["PENDING", 0]),
    );
  });

  for (const queues of [
    null,
    new Map([
      ["mail", 2],
      ["default", 2],
    ]),
  ]) {
    it(`dropBuffered() hands the buffered jobs back and keeps the running ones (${queues ? "with" : "without"} queues)`, async () => {
      const store = new InMemoryJobStore(clock);
      const ids = [...(await seed(store, 3)), ...(await seed(store, 3, "mail"))];
      const started: string[] = [];
      const { runtime, events } = node(store, () => new Promise(() => {}), {
        concurrency: 2,
        prefetch: 4,
        ...(queues ? { queues } : {}),
      });
      events.on("job:started", (e) => started.push(e.job.id));
      runtime.start();
      await until(() => started.length === 2 && runtime.buffered === 4);
      expect(runtime.dropBuffered("declared dead")).toBe(4);
      expect(runtime.buffered).toBe(0);
      // The buffered four go back to PENDING, attempt not counted; the two running stay held by this node.
      const handedBack = ids.filter((id) => !started.includes(id));
      await until(() => handedBack.every((id) => store.jobs.get(id)?.status === "PENDING"));
      expect(handedBack.map((id) => store.jobs.get(id)?.attempts)).toEqual([0, 0, 0, 0]);
      expect(started.map((id) => store.jobs.get(id)?.status)).toEqual(["RUNNING", "RUNNING"]);
    });
  }

  it("stops claiming while its outcome writes are behind, writes them at most 1,000 per statement, then resumes", async () => {
    const store = new InMemoryJobStore(clock);
    await seed(store, 6000);
    const complete = store.complete.bind(store);
    const batches: number[] = [];
    let letGo: () => void = () => {};
    const gate = new Promise<void>((r) => (letGo = r)); // writes hang until the test lets go
    store.complete = async (nodeId, items) => {
      batches.push(items.length);
      await gate;
      return complete(nodeId, items);
    };
    let ran = 0;
    const { runtime } = node(store, async () => void ran++, { concurrency: 50, prefetch: 200 });
    runtime.start();
    // Handlers end at once, so only the writes hold the node back: it claims until the backlog reaches
    // the limit, then no more, however long the writes take.
    await until(() => ran >= outcomeBacklogLimit);
    for (let i = 0; i < 200; i++) {
      await new Promise((r) => setImmediate(r));
      clock.advance(50);
    }
    const leased = [...store.jobs.values()].filter((j) => j.status === "RUNNING").length;
    expect(leased).toBeLessThan(outcomeBacklogLimit + 250 + 250); // limit + a claim in flight + buffer
    expect(ran).toBe(leased);
    expect(runtime.pendingOutcomes + 1000).toBeGreaterThanOrEqual(outcomeBacklogLimit);
    letGo();
    await until(() => [...store.jobs.values()].every((j) => j.status === "SUCCEEDED"));
    expect(ran).toBe(6000);
    expect(Math.max(...batches)).toBeLessThanOrEqual(1000);
  });
});
