/**
 * `pawl.explain(id)` on a real database, one test per reason: each builds the situation with real nodes
 * (and their published registries), then checks the answer names it. Every node is stopped after its
 * test, which deletes its row, so the tests do not see each other's nodes.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { NonRetryableError, type Pawl, type PawlClient } from "../../../src/index.js";
import { upsertHeartbeat } from "../../../src/store/cluster/node-sql.js";
import { tablesFor } from "../../../src/db/sql.js";
import type { ExplainReason } from "../../../src/logic/explain.js";
import { describeReason } from "../../../src/logic/explain-text.js";
import { main } from "../../../src/cli/main.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";
import { databaseUrl } from "../../helpers/db.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let client: PawlClient;
const nodes: Pawl[] = [];
const releases: (() => void)[] = [];

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("explain"));
  client = testPawl(schema);
});
afterEach(async () => {
  for (const r of releases.splice(0)) r();
  await Promise.all(nodes.splice(0).map((n) => n.close()));
});
afterAll(async () => {
  await client.close();
  await cleanup();
});

/** A started node; its heartbeat is beaten once more by {@link beat} when a test needs fresh facts. */
async function node(setup: (n: Pawl) => void, config: Parameters<typeof testPawl>[1] = {}): Promise<Pawl> {
  const n = testPawl(schema, config);
  setup(n);
  nodes.push(n);
  await n.start();
  return n;
}

/** Publishes the node's registry now (the loop would within heartbeatIntervalMs). */
const beat = (n: Pawl) => n.clusterServices!.heartbeat.runOnce();

/** A handler that blocks until the test ends. */
const blocking = () =>
  new Promise<void>((resolve) => {
    releases.push(resolve);
  });

const kinds = (rs: ExplainReason[]) => rs.map((r) => r.kind);

// Each event a test waits for is listened for before its enqueue (by type, its id checked after): a
// running node may handle the job before the enqueue call returns.
describe("pawl.explain on a real database", () => {
  it("a DEAD job: finished, with its outcome and last error", async () => {
    const n = await node((x) =>
      x.register("x.dead", async () => {
        throw new NonRetryableError("card declined");
      }),
    );
    const jobSeen = n.events.next("job:dead", (e) => e.job.type === "x.dead");
    const job = await client.enqueue("x.dead", {});
    expect((await jobSeen).job.id).toBe(job.id);
    const e = await client.explain(job.id);
    expect(e.verdict).toBe("finished");
    expect(e.reasons).toEqual([
      expect.objectContaining({ kind: "finished", outcome: "DEAD", lastError: "card declined" }),
    ]);
  });

  it("a RUNNING job: the node, since when, its heartbeat age and the deadline", async () => {
    const n = await node((x) => x.register("x.run", blocking, { timeoutMs: 60_000 }));
    const jobSeen = n.events.next("job:started", (e) => e.job.type === "x.run");
    const job = await client.enqueue("x.run", {});
    expect((await jobSeen).job.id).toBe(job.id);
    await beat(n);
    const row = await client.getJob(job.id);
    const e = await client.explain(job.id);
    expect(e.verdict).toBe("running");
    const r = e.reasons[0] as Extract<ExplainReason, { kind: "running" }>;
    expect(r).toMatchObject({ kind: "running", nodeId: n.nodeId, since: row!.pickedAt });
    expect(r.deadline!.getTime()).toBe(row!.pickedAt!.getTime() + 60_000);
    expect(r.heartbeatAgeMs).toBeLessThan(5000);
  });

  it("a job held by a dead node: orphaned, with the expected rescue time", async () => {
    const job = await client.enqueue("x.orphan", {});
    const t = tablesFor(schema);
    const old = new Date(Date.now() - 60_000);
    await upsertHeartbeat(
      pool,
      t,
      "dead-node",
      { version: "0", host: "h", pid: 1, concurrency: 1, coordinator: "none", instance: "i" },
      old,
    );
    expect(await client.store.claimById(job.id, "dead-node")).not.toBeNull();
    const e = await client.explain(job.id);
    expect(e.verdict).toBe("orphaned");
    const { deadNodeThresholdMs, orphanSweepIntervalMs } = client.config.runtimeOptions.cluster;
    expect(e.reasons[0]).toMatchObject({ kind: "orphaned", nodeId: "dead-node", heartbeatAt: old });
    expect((e.reasons[0] as { expectedRescueAt: Date }).expectedRescueAt.getTime()).toBe(
      old.getTime() + deadNodeThresholdMs + orphanSweepIntervalMs,
    );
    await pool.query(`DELETE FROM "${schema}".scheduler_node WHERE node_id = 'dead-node'`);
    await client.cancel(job.id);
  });

  it("a paused queue names the pause and since when", async () => {
    await client.pauseQueue("q-paused");
    try {
      const job = await client.enqueue("x.pq", {}, { queue: "q-paused" });
      const e = await client.explain(job.id);
      expect(e.status).toBe("PAUSED");
      expect(e.reasons[0]).toMatchObject({ kind: "paused", by: "queue", name: "q-paused" });
      expect((e.reasons[0] as { since: Date }).since).toBeInstanceOf(Date);
    } finally {
      await client.resumeQueue("q-paused");
    }
  });

  it("a paused job", async () => {
    const job = await client.enqueue("x.pj", {}, { delayMs: 600_000 });
    await client.pauseJob(job.id);
    const e = await client.explain(job.id);
    expect(kinds(e.reasons).slice(0, 2)).toEqual(["paused", "scheduled"]);
    expect(e.reasons[0]).toMatchObject({ by: "job", name: job.id });
    await client.cancel(job.id);
  });

  it("a job waiting for a signal", async () => {
    const n = await node((x) =>
      x.register("x.sig", async (_p, ctx) => {
        await ctx.waitForSignal();
      }),
    );
    const jobSeen = n.events.next("job:waiting", (e) => e.job.type === "x.sig");
    const job = await client.enqueue("x.sig", {});
    expect((await jobSeen).job.id).toBe(job.id);
    const e = await client.explain(job.id);
    expect(e.status).toBe("WAITING");
    expect(kinds(e.reasons)).toEqual(["waiting-signal"]);
  });

  it("a flow member waiting for its dependencies names the unfinished ones", async () => {
    const wf = await client.workflow({
      jobs: [
        { name: "extract", type: "x.flow-a", delayMs: 600_000 },
        { name: "load", type: "x.flow-b", dependsOn: ["extract"] },
      ],
    });
    const [a, b] = wf.jobIds as [string, string];
    const e = await client.explain(b);
    expect(e.reasons[0]).toMatchObject({
      kind: "waiting-dependencies",
      flowId: wf.flowId,
      dependencies: [{ id: a, step: "extract", type: "x.flow-a", status: "PENDING" }],
    });
    await client.cancelFlow(wf.flowId);
  });

  it("a job scheduled in the future", async () => {
    const job = await client.enqueue("x.later", {}, { delayMs: 3_600_000 });
    const e = await client.explain(job.id);
    expect(e.reasons[0]).toMatchObject({ kind: "scheduled", at: job.scheduledTime });
    await client.cancel(job.id);
  });

  it("no live node registers the type: names the live nodes and what they run", async () => {
    const n = await node((x) => x.register("x.other", async () => {}));
    await beat(n);
    const job = await client.enqueue("x.nobody", {});
    const e = await client.explain(job.id);
    expect(e.verdict).toBe("blocked");
    expect(e.reasons).toEqual([
      expect.objectContaining({
        kind: "no-node",
        type: "x.nobody",
        alive: [{ nodeId: n.nodeId, types: ["x.other"], queues: null }],
      }),
    ]);
    await client.cancel(job.id);
  });

  it("its queue is full on every node that serves it", async () => {
    const n = await node((x) => x.register("x.full", blocking, { queue: "q-full" }), {
      concurrency: 1,
      queues: { "q-full": 1 },
      prefetch: 0,
    });
    const firstSeen = n.events.next("job:started", (e) => e.job.type === "x.full");
    const first = await client.enqueue("x.full", {}, { queue: "q-full" });
    expect((await firstSeen).job.id).toBe(first.id);
    await beat(n);
    const second = await client.enqueue("x.full", {}, { queue: "q-full" });
    const e = await client.explain(second.id);
    expect(e.status).toBe("PENDING");
    expect(e.reasons).toEqual([
      expect.objectContaining({
        kind: "queue-full",
        queue: "q-full",
        nodes: [{ nodeId: n.nodeId, running: 1, limit: 1 }],
      }),
    ]);
  });

  it("its service's breaker is open on the nodes that run it, until when", async () => {
    const n = await node(
      (x) =>
        x.register(
          "x.brk",
          async () => {
            throw new Error("503");
          },
          {
            service: "svc-x",
            maxAttempts: 5,
            retry: { baseMs: 600_000, factor: 1, maxMs: 600_000, jitter: 0 },
          },
        ),
      { breakers: { "svc-x": { failureThreshold: 1, openMs: 600_000 } } },
    );
    const opened = n.events.next("breaker:change", (e) => e.to === "OPEN");
    const first = await client.enqueue("x.brk", {});
    await opened;
    await beat(n);
    const secondSeen = n.events.next(
      "job:rescheduled",
      (e) => e.job.type === "x.brk" && e.reason === "breaker",
    );
    const second = await client.enqueue("x.brk", {});
    expect((await secondSeen).job.id).toBe(second.id);
    const e = await client.explain(second.id);
    expect(kinds(e.reasons)).toEqual(["scheduled", "breaker-open"]);
    const r = e.reasons[1] as Extract<ExplainReason, { kind: "breaker-open" }>;
    expect(r.service).toBe("svc-x");
    expect(r.until!.getTime()).toBeGreaterThan(Date.now() + 500_000);
    expect(r.nodes.map((x) => x.nodeId)).toEqual([n.nodeId]);
    await client.cancel(first.id);
    await client.cancel(second.id);
  });

  it("its resource's permits are all held, by which jobs", async () => {
    const n = await node((x) => x.register("x.perm", blocking, { resource: "r-x" }), {
      resources: { "r-x": 1 },
      permitRetryDelayMs: 600_000,
    });
    const holderSeen = n.events.next("job:started", (e) => e.job.type === "x.perm");
    const holder = await client.enqueue("x.perm", {});
    expect((await holderSeen).job.id).toBe(holder.id);
    const waitingSeen = n.events.next(
      "job:rescheduled",
      (e) => e.job.type === "x.perm" && e.reason === "permit",
    );
    const waiting = await client.enqueue("x.perm", {});
    expect((await waitingSeen).job.id).toBe(waiting.id);
    await beat(n);
    const e = await client.explain(waiting.id);
    expect(kinds(e.reasons)).toEqual(["scheduled", "permits-exhausted"]);
    expect(e.reasons[1]).toMatchObject({
      resource: "r-x",
      capacity: 1,
      held: 1,
      holders: [{ jobId: holder.id, nodeId: n.nodeId }],
    });
  });

  it("its type's rate limit window is full: rate limited until the window's next opening", async () => {
    const n = await node((x) =>
      x.register("x.rate", async () => "ok", { rateLimit: { limit: 1, perMs: 600_000 } }),
    );
    const firstSeen = n.events.next("job:succeeded", (e) => e.job.type === "x.rate");
    const first = await client.enqueue("x.rate", {});
    expect((await firstSeen).job.id).toBe(first.id);
    const waitingSeen = n.events.next(
      "job:rescheduled",
      (e) => e.job.type === "x.rate" && e.reason === "rate-limit",
    );
    const waiting = await client.enqueue("x.rate", {});
    expect((await waitingSeen).job.id).toBe(waiting.id);
    await beat(n);
    const e = await client.explain(waiting.id);
    expect(kinds(e.reasons)).toEqual(["scheduled", "rate-limited"]);
    const r = e.reasons[1] as Extract<ExplainReason, { kind: "rate-limited" }>;
    expect(r).toMatchObject({ key: "type:x.rate", limit: 1, perMs: 600_000, used: 1 });
    expect(r.until.getTime()).toBeGreaterThan(Date.now() + 500_000);
    expect(describeReason(r, e.at)).toMatch(
      /^rate limited until .* \(in 9m \d+s\): "type:x.rate" had 1 of 1 starts in the last 10m 0s$/,
    );
    await client.cancel(waiting.id);
  });

  it("a due job a live node runs: runnable, no reason", async () => {
    // A node row that beats now and publishes the type, but never claims: the answer cannot race a poll.
    const registry = {
      types: [{ type: "x.idle", queue: null, service: null, resource: null, timeoutMs: null }],
      queues: null,
      concurrency: 2,
      busy: 0,
      breakers: [],
      resources: {},
      defaultTimeoutMs: 60_000,
    };
    const info = {
      version: "0",
      host: "h",
      pid: 1,
      concurrency: 2,
      coordinator: "none",
      instance: "i",
      registry,
    };
    await upsertHeartbeat(pool, tablesFor(schema), "idle-node", info);
    const job = await client.enqueue("x.idle", {});
    expect(await client.explain(job.id)).toMatchObject({
      status: "PENDING",
      verdict: "runnable",
      reasons: [],
    });
    await pool.query(`DELETE FROM "${schema}".scheduler_node WHERE node_id = 'idle-node'`);
    expect((await client.explain(job.id)).reasons).toMatchObject([{ kind: "no-node", alive: [] }]);
    await client.cancel(job.id);
  });

  it("`pawl explain <id>` prints the verdict and one line per reason; unknown ids fail", async () => {
    const job = await client.enqueue("x.cli", {}, { delayMs: 3_600_000 });
    let out = "";
    const env = { DATABASE_URL: databaseUrl, PAWL_SCHEMA: schema };
    const io = { stdout: (s: string) => void (out += s), stderr: () => {}, env };
    expect(await main(["explain", job.id, "--schema", schema], io)).toBe(0);
    expect(out).toContain(`job ${job.id}: PENDING, blocked`);
    expect(out).toMatch(/- scheduled for .* \(in 59m/);
    out = "";
    expect(await main(["explain", job.id, "--schema", schema, "--json"], io)).toBe(0);
    expect(JSON.parse(out)).toMatchObject({ jobId: job.id, verdict: "blocked" });
    expect(await main(["explain", "999999999", "--schema", schema], { ...io, stderr: () => {} })).not.toBe(0);
    await client.cancel(job.id);
  });
});
