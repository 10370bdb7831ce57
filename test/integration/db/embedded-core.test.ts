/**
 * The core behaviours on the embedded database (PGlite in this process, no server): the same runtime and
 * SQL as the integration suite, through pawl/testing's fixture. One database for the file, one schema and
 * one node per test. Every path that holds the single connection runs here (held transactions: enqueue in
 * the caller's transaction, permits, cron fires, flows, pauses), so a statement that waited for a second
 * connection would show up as a timeout.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createMetrics } from "../../../observability/index.js";
import type { Pawl } from "../../../src/index.js";
import type { PawlConfig } from "../../../src/input/config.js";
import { embeddedDatabase, embeddedPawl, type EmbeddedPawl } from "../../../src/testing/index.js";
import type { EmbeddedDatabase } from "../../../src/db/embedded/embedded-database.js";
import { uniqueSchema } from "../../helpers/db.js";
import { jobEvent } from "../../helpers/events.js";
import { gate } from "../../helpers/gate.js";

const fastRetry = { retry: { baseMs: 10, factor: 1, maxMs: 10, jitter: 0 } };

let db: EmbeddedDatabase;
let current: EmbeddedPawl | undefined;

// Booting PGlite is CPU-bound (WebAssembly compile, initdb): seconds here, far more on a loaded runner.
beforeAll(async () => {
  db = await embeddedDatabase();
}, 180_000);
afterAll(() => db?.close());
afterEach(async () => {
  await current?.close();
  current = undefined;
});

/** A migrated node in a schema of its own on the file's database. */
async function node(config: Omit<PawlConfig, "connectionString" | "pool"> = {}): Promise<Pawl> {
  current = await embeddedPawl({ schema: uniqueSchema("emb"), nodeId: "emb-node", ...config }, db);
  return current.pawl;
}

describe("enqueue", () => {
  it("runs a job, and defaults to the in-memory coordinator", async () => {
    const pawl = await node();
    expect(pawl.config.coordinator).toBe("in-memory");
    pawl.register("echo", async (p: { n: number }) => ({ twice: p.n * 2 }));
    await pawl.start();
    const jobSucceeded = jobEvent(pawl.events, "job:succeeded");
    const job = await pawl.enqueue("echo", { n: 21 });
    await jobSucceeded.for(job.id);
    expect(await pawl.getJob(job.id)).toMatchObject({ status: "SUCCEEDED", result: { twice: 42 } });
  });

  it("enqueues in the caller's transaction on the one connection: run after COMMIT, never after ROLLBACK", async () => {
    const pawl = await node();
    const ran: string[] = [];
    pawl.register("tx", async (p: { tag: string }) => ran.push(p.tag));
    await pawl.start();
    const { schema } = pawl.config;
    await db.pool.query(`CREATE TABLE "${schema}".orders (id int PRIMARY KEY)`);

    let succeeded = 0;
    const bothRan = new Promise<void>((resolve) =>
      pawl.events.on("job:succeeded", () => {
        if (++succeeded === 2) resolve();
      }),
    );
    const client = await db.pool.connect();
    try {
      await client.query("BEGIN");
      await client.query(`INSERT INTO "${schema}".orders VALUES (1)`);
      await pawl.enqueue("tx", { tag: "kept" }, { client });
      await pawl.enqueueMany([{ type: "tx", payload: { tag: "kept-too" } }], { client });
      await client.query("COMMIT");
      await client.query("BEGIN");
      await pawl.enqueue("tx", { tag: "rolled-back" }, { client });
      await client.query("ROLLBACK");
    } finally {
      client.release();
    }
    await bothRan;
    const all = await pawl.listJobs();
    expect(all.map((j) => (j.payload as { tag: string }).tag).sort()).toEqual(["kept", "kept-too"]);
    expect(ran.sort()).toEqual(["kept", "kept-too"]);
    const orders = await db.pool.query(`SELECT count(*)::int AS n FROM "${schema}".orders`);
    expect(orders.rows[0].n).toBe(1);
  });
});

describe("a failed statement", () => {
  it("costs only itself: the next statement and the next enqueue run on a fresh connection", async () => {
    const pawl = await node();
    // pool.query drops a connection whose statement failed and opens another at once; the socket server
    // holds one connection and notices the old one's close a tick later (the new one was turned away).
    await expect(db.pool.query("SELECT 1/0")).rejects.toThrow(/division by zero/);
    expect((await db.pool.query("SELECT 1 AS n")).rows).toEqual([{ n: 1 }]);
    await expect(db.pool.query("SELECT 1/0")).rejects.toThrow(/division by zero/);
    const job = await pawl.enqueue("after.failure", {});
    expect((await pawl.getJob(job.id))?.status).toBe("PENDING");
  });
});

describe("claim order", () => {
  it("orders by priority plus the age boost, then time", async () => {
    const pawl = await node();
    const interval = 15 * 60_000;
    const t0 = new Date("2030-01-01T12:00:00.000Z");
    const [old, fresh, urgent] = await pawl.enqueueMany([
      { type: "a", priority: 10, runAt: new Date(t0.getTime() - 2 * interval) },
      { type: "a", priority: 11, runAt: t0 },
      { type: "a", priority: 30, runAt: t0 },
    ]);
    const claim = (boostIntervalMs: number) =>
      pawl.store.claim({ nodeId: "n", limit: 3, types: ["a"], boostIntervalMs, withPayload: false, now: t0 });
    const boosted = await claim(interval);
    // old: 10 + 2 boost levels = 12, ahead of fresh's 11; urgent's 30 first.
    expect(boosted.map((j) => [j.id, j.boost])).toEqual([
      [urgent!.id, 0],
      [old!.id, 2],
      [fresh!.id, 0],
    ]);
    await db.pool.query(
      `UPDATE "${pawl.config.schema}".scheduler_job_queue SET picked_by = NULL, attempts = 0`,
    );
    expect((await claim(0)).map((j) => j.id)).toEqual([urgent!.id, fresh!.id, old!.id]);
  });
});

describe("failures", () => {
  it("retries with backoff, then DEAD with every error kept", async () => {
    const pawl = await node();
    pawl.register(
      "flaky",
      async () => {
        throw new Error("boom");
      },
      { maxAttempts: 3, ...fastRetry },
    );
    await pawl.start();
    const jobDead = jobEvent(pawl.events, "job:dead");
    const job = await pawl.enqueue("flaky", {});
    const dead = await jobDead.for(job.id);
    expect(dead.reason).toBe("exhausted");
    const read = await pawl.getJob(job.id);
    expect(read).toMatchObject({ status: "DEAD", attempts: 3 });
    expect(read!.errors.map((e) => e.message)).toEqual(["boom", "boom", "boom"]);
    expect((await pawl.dlq.list()).map((j) => j.id)).toEqual([job.id]);
  });

  it("times out a handler that never settles (the watchdog), retried then DEAD", async () => {
    const pawl = await node();
    const signals: AbortSignal[] = [];
    pawl.register(
      "stuck",
      (_p, ctx) => {
        signals.push(ctx.signal);
        return new Promise(() => {});
      },
      { timeoutMs: 150, maxAttempts: 2, ...fastRetry },
    );
    await pawl.start();
    const jobRetried = jobEvent(pawl.events, "job:retried");
    const jobDead = jobEvent(pawl.events, "job:dead");
    const job = await pawl.enqueue("stuck", {});
    expect((await jobRetried.for(job.id)).timedOut).toBe(true);
    expect(await jobDead.for(job.id)).toMatchObject({
      reason: "exhausted",
      timedOut: true,
    });
    expect(signals.every((s) => s.aborted)).toBe(true);
  });

  it("cancels a running job: its handler sees the request and its result is discarded", async () => {
    const pawl = await node();
    pawl.register("long", async (_p, ctx) => {
      await new Promise<void>((resolve) => ctx.signal.addEventListener("abort", () => resolve()));
      return "ignored";
    });
    await pawl.start();
    const jobStarted = jobEvent(pawl.events, "job:started");
    const job = await pawl.enqueue("long", {});
    await jobStarted.for(job.id);
    const canceled = pawl.events.next("job:canceled", (e) => e.job.id === job.id);
    expect((await pawl.cancel(job.id, "no longer needed")).outcome).toBe("running-canceled");
    await canceled;
    expect(await pawl.getJob(job.id)).toMatchObject({ status: "CANCELED", result: null });
  });
});

describe("protection", () => {
  it("opens a service's breaker after failures and hands jobs back without using an attempt", async () => {
    const pawl = await node({
      concurrency: 1,
      breakers: { svc: { failureThreshold: 2, minimumCalls: 100, openMs: 60_000, halfOpenTrials: 1 } },
    });
    pawl.register(
      "call",
      async () => {
        throw new Error("503");
      },
      { service: "svc", maxAttempts: 10, retry: { baseMs: 60_000, factor: 1, maxMs: 60_000, jitter: 0 } },
    );
    await pawl.start();
    const opened = pawl.events.next("breaker:change", (e) => e.to === "OPEN");
    await pawl.enqueueMany([{ type: "call" }, { type: "call" }]);
    await opened;
    const jobRescheduled = jobEvent(pawl.events, "job:rescheduled");
    const c = await pawl.enqueue("call", {});
    const handed = await jobRescheduled.for(c.id);
    expect(handed.reason).toBe("breaker");
    expect(await pawl.getJob(c.id)).toMatchObject({ status: "PENDING", attempts: 0 });
  });

  it("holds a resource's permits in a held transaction on the one connection", async () => {
    const pawl = await node({ concurrency: 2, resources: { smtp: 1 }, permitRetryDelayMs: 50 });
    const release = gate();
    pawl.register(
      "mail",
      async (p: { first: boolean }) => {
        if (p.first) await release.promise;
        return "sent";
      },
      { resource: "smtp" },
    );
    await pawl.start();
    const jobStarted = jobEvent(pawl.events, "job:started");
    const first = await pawl.enqueue("mail", { first: true });
    await jobStarted.for(first.id);
    const jobRescheduled = jobEvent(pawl.events, "job:rescheduled");
    const second = await pawl.enqueue("mail", { first: false });
    expect(await jobRescheduled.for(second.id)).toMatchObject({
      reason: "permit",
    });
    release.open();
    await pawl.events.next("job:succeeded", (e) => e.job.id === second.id, 15_000);
    await pawl.stop({ graceMs: 1000 });
    const left = await db.pool.query(
      `SELECT count(*)::int AS n FROM "${pawl.config.schema}".scheduler_resource_permit`,
    );
    expect(left.rows[0].n).toBe(0);
  });
});

describe("scheduling and composition", () => {
  it("fires a cron schedule once and runs its job", async () => {
    const pawl = await node();
    pawl.register("tick", async (p: { n: number }) => p.n);
    await pawl.start();
    await pawl.schedule("every-minute", "* * * * *", { n: 1 }, { type: "tick" });
    // As if it had been registered a minute ago: its fire is due now, and the fire runs in one held
    // transaction. fireBatch is the fire without the lease, which the node's own scheduler may hold.
    const fired = pawl.events.next("recurring:fired", (e) => e.name === "every-minute");
    const tickSucceeded = jobEvent(pawl.events, "job:succeeded");
    await db.pool.query(
      `UPDATE "${pawl.config.schema}".scheduler_recurring SET next_fire_at = date_trunc('minute', now())`,
    );
    await pawl.clusterServices!.recurring.fireBatch();
    const { jobId } = await fired;
    await tickSucceeded.for(jobId);
    expect(await pawl.getJob(jobId)).toMatchObject({ type: "tick", status: "SUCCEEDED", result: 1 });
  });

  it("runs a chain in order and a workflow after its dependencies", async () => {
    const pawl = await node({ concurrency: 4 });
    const order: string[] = [];
    pawl.register("step", async (p: { label: string }, ctx) => {
      order.push(p.label);
      const flow = await ctx.flow();
      return { label: p.label, previous: flow?.previous ?? null, results: flow?.results ?? null };
    });
    await pawl.start();
    const chainSucceeded = jobEvent(pawl.events, "job:succeeded");
    const chain = await pawl.chain([
      { type: "step", payload: { label: "a" } },
      { type: "step", payload: { label: "b" } },
    ]);
    await chainSucceeded.for(chain.jobIds[1]!);
    expect(order).toEqual(["a", "b"]);
    expect((await pawl.getJob(chain.jobIds[1]!))?.result).toMatchObject({
      previous: { label: "a", previous: null },
    });

    order.length = 0;
    const workflowSucceeded = jobEvent(pawl.events, "job:succeeded");
    const wf = await pawl.workflow({
      jobs: [
        { name: "D", type: "step", payload: { label: "D" }, dependsOn: ["B", "C"] },
        { name: "B", type: "step", payload: { label: "B" }, dependsOn: ["A"] },
        { name: "C", type: "step", payload: { label: "C" }, dependsOn: ["A"] },
        { name: "A", type: "step", payload: { label: "A" } },
      ],
    });
    await workflowSucceeded.for(wf.jobIds[0]!);
    expect(order[0]).toBe("A");
    expect(order[3]).toBe("D");
    expect((await pawl.getJob(wf.jobIds[0]!))?.result).toMatchObject({
      results: { B: { label: "B" }, C: { label: "C" } },
    });
    expect(await pawl.getFlow(wf.flowId)).toMatchObject({ state: "succeeded", succeeded: 4 });
  });

  it("pauses a queue (its jobs stay PAUSED) and resumes it", async () => {
    const pawl = await node();
    pawl.register("q", async () => "done", { queue: "slow" });
    await pawl.start();
    await pawl.pauseQueue("slow");
    const jobSucceeded = jobEvent(pawl.events, "job:succeeded");
    const job = await pawl.enqueue("q", {});
    expect((await pawl.getJob(job.id))?.status).toBe("PAUSED");
    expect((await pawl.listPaused()).map((p) => p.name)).toEqual(["slow"]);
    const done = jobSucceeded.for(job.id);
    await pawl.resumeQueue("slow");
    await done;
    expect(await pawl.listPaused()).toEqual([]);
  });

  it("delivers a signal to a parked job", async () => {
    const pawl = await node();
    pawl.register("approve", async (_p, ctx) => {
      const answer = await ctx.waitForSignal<{ ok: boolean }>({ timeoutMs: 60_000 });
      return answer.timedOut ? "expired" : answer.payload.ok;
    });
    await pawl.start();
    const jobWaiting = jobEvent(pawl.events, "job:waiting");
    const job = await pawl.enqueue("approve", {});
    await jobWaiting.for(job.id);
    const done = pawl.events.next("job:succeeded", (e) => e.job.id === job.id);
    await pawl.signal(job.id, { ok: true });
    await done;
    expect((await pawl.getJob(job.id))?.result).toBe(true);
  });
});

describe("observability", () => {
  it("serves the inspector's actor tree and the Prometheus metrics", async () => {
    const pawl = await node({ nodeId: "emb-obs" });
    pawl.register("m", async () => 1);
    const metrics = createMetrics(pawl, { queueDepthCacheMs: 0 });
    try {
      await pawl.start();
      const jobSucceeded = jobEvent(pawl.events, "job:succeeded");
      const job = await pawl.enqueue("m", {});
      await jobSucceeded.for(job.id);
      expect(pawl.inspect()?.children.map((c) => c.id)).toContain("poller");
      const text = await metrics.metrics();
      expect(text).toMatch(/pawl_node_info\{[^}]*node_id="emb-obs"[^}]*\} 1/);
      expect(text).toContain("pawl_jobs_");
    } finally {
      metrics.close();
    }
  });
});
