import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { ValidationError, type Pawl } from "../../../src/index.js";
import { closeAll, setupSchema, startNodes, testPawl } from "../../helpers/pawl.js";
import { jobEvent, onAny } from "../../helpers/events.js";
import { claimSql } from "../../../src/store/claim/claim-jobs.js";
import { tablesFor } from "../../../src/db/sql.js";

let schema: string;
let cleanup: () => Promise<void>;
let pool: pg.Pool;
let nodes: Pawl[] = [];

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("cqueue"));
});
afterAll(() => cleanup());
afterEach(async () => {
  await closeAll(nodes);
  nodes = [];
});

/** In-flight handlers per node and queue, with the maximum each reached. */
class InFlight {
  private readonly now = new Map<string, number>();
  readonly max = new Map<string, number>();

  enter(node: string, queue: string): void {
    const k = `${node}/${queue}`;
    const n = (this.now.get(k) ?? 0) + 1;
    this.now.set(k, n);
    this.max.set(k, Math.max(this.max.get(k) ?? 0, n));
  }

  leave(node: string, queue: string): void {
    const k = `${node}/${queue}`;
    this.now.set(k, (this.now.get(k) ?? 1) - 1);
  }
}

const tick = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("per-queue concurrency", () => {
  it("never runs more than each queue's limit on a node, and a full queue never starves another", async () => {
    const inFlight = new InFlight();
    let unblock: () => void = () => {};
    const blocked = new Promise<void>((resolve) => {
      unblock = resolve;
    });
    nodes = await startNodes(
      schema,
      2,
      (node) => {
        // "slow" jobs hold their slot until the test lets them go: the queue is full the whole time.
        node.register(
          "q.slow",
          async (_p, ctx) => {
            inFlight.enter(ctx.nodeId, "slow");
            await blocked;
            inFlight.leave(ctx.nodeId, "slow");
          },
          { queue: "slow" },
        );
        node.register(
          "q.fast",
          async (_p, ctx) => {
            inFlight.enter(ctx.nodeId, "fast");
            await tick(5); // some work, so jobs overlap
            inFlight.leave(ctx.nodeId, "fast");
          },
          { queue: "fast" },
        );
        node.register("q.elsewhere", async () => "never here", { queue: "elsewhere" });
      },
      // No prefetch: a node claims no more than it can start, so the slow jobs spread over both nodes.
      { queues: { fast: 3, slow: 2 }, prefetch: 0, concurrency: undefined },
    );
    expect(nodes[0]!.config.concurrency).toBe(5);
    const client = testPawl(schema);
    try {
      // Both nodes fill their slow lanes before the fast work arrives. Listen before enqueuing: on a
      // loaded machine the nodes may start all four before the enqueue calls return.
      let slowStarted = 0;
      const slowLanesFull = onAny(nodes, "job:started", (e) => e.job.queue === "slow" && ++slowStarted === 4);
      // A plain client does not know the types' queues: it names them.
      const slow = await client.enqueueMany(
        Array.from({ length: 12 }, () => ({ type: "q.slow", queue: "slow" })),
      );
      const elsewhere = await client.enqueue("q.elsewhere", {}, { queue: "elsewhere" });
      await slowLanesFull;
      const fastSucceeded = jobEvent(nodes, "job:succeeded", (e) => e.job.type === "q.fast", 30_000);
      const fast = await client.enqueueMany(
        Array.from({ length: 60 }, () => ({ type: "q.fast", queue: "fast" })),
      );
      await fastSucceeded.forAll(fast.map((j) => j.id));

      // The slow lanes stayed full all along: 2 per node, never more; the other 8 still wait.
      const statuses = await pool.query<{ status: string; n: number }>(
        `SELECT status, count(*)::int AS n FROM "${schema}".scheduler_job_all
         WHERE id = ANY($1::bigint[]) GROUP BY status ORDER BY status`,
        [slow.map((j) => j.id)],
      );
      expect(statuses.rows).toEqual([
        { status: "PENDING", n: 8 },
        { status: "RUNNING", n: 4 },
      ]);
      for (const n of nodes) {
        expect(inFlight.max.get(`${n.nodeId}/slow`)).toBe(2);
        expect(inFlight.max.get(`${n.nodeId}/fast`) ?? 0).toBeLessThanOrEqual(3);
        const lanes = (n.inspect()?.context as { queues?: unknown }).queues;
        expect(lanes).toEqual([
          { queue: "fast", limit: 3, running: 0, buffered: 0 },
          { queue: "slow", limit: 2, running: 2, buffered: 0 },
        ]);
      }
      // At least one node ran three fast jobs at once: the limit is a cap, not a throttle.
      expect(Math.max(...nodes.map((n) => inFlight.max.get(`${n.nodeId}/fast`) ?? 0))).toBe(3);
      // A job of a queue the nodes do not serve is never claimed.
      expect((await client.getJob(elsewhere.id))?.status).toBe("PENDING");

      unblock();
      const slowIds = new Set(slow.map((j) => j.id));
      let slowDone = 0;
      await onAny(nodes, "job:succeeded", (e) => slowIds.has(e.job.id) && ++slowDone === slow.length, 30_000);
      for (const n of nodes) expect(inFlight.max.get(`${n.nodeId}/slow`)).toBe(2);
    } finally {
      unblock();
      await client.close();
    }
  });

  it("keeps the limits with the default prefetch (claimed jobs wait in their lane's buffer)", async () => {
    const inFlight = new InFlight();
    nodes = await startNodes(
      schema,
      2,
      (node) => {
        for (const queue of ["pa", "pb"]) {
          node.register(
            `p.${queue}`,
            async (_p, ctx) => {
              inFlight.enter(ctx.nodeId, queue);
              await tick(2);
              inFlight.leave(ctx.nodeId, queue);
            },
            { queue },
          );
        }
      },
      { queues: { pa: 4, pb: 1 }, concurrency: undefined },
    );
    const succeeded = jobEvent(nodes, "job:succeeded", undefined, 30_000);
    const jobs = await nodes[0]!.enqueueMany(
      Array.from({ length: 80 }, (_, i) => ({ type: i % 2 === 0 ? "p.pa" : "p.pb" })),
    );
    await succeeded.forAll(jobs.map((j) => j.id));
    for (const n of nodes) {
      expect(inFlight.max.get(`${n.nodeId}/pa`) ?? 0).toBeLessThanOrEqual(4);
      expect(inFlight.max.get(`${n.nodeId}/pb`) ?? 0).toBeLessThanOrEqual(1);
    }
    expect(Math.max(...nodes.map((n) => inFlight.max.get(`${n.nodeId}/pa`) ?? 0))).toBe(4);
  });

  it("hands back the jobs waiting in the lanes when the node is told to drop its buffer", async () => {
    let unblock: () => void = () => {};
    const blocked = new Promise<void>((resolve) => (unblock = resolve));
    nodes = await startNodes(
      schema,
      1,
      (node) => node.register("hold.work", async () => blocked, { queue: "hold" }),
      { queues: { hold: 1 }, prefetch: 4, concurrency: undefined },
    );
    const [n] = nodes as [Pawl];
    const lane = () =>
      ((n.inspect()?.context as { queues?: { buffered: number }[] }).queues ?? [])[0]?.buffered ?? 0;
    try {
      const started = onAny(nodes, "job:started", (e) => e.job.type === "hold.work");
      const claimedMore = onAny(nodes, "claim", (e) => e.jobs.length > 1);
      await n.enqueueMany(Array.from({ length: 6 }, () => ({ type: "hold.work", queue: "hold" })));
      await Promise.all([started, claimedMore]);
      const waiting = lane();
      expect(waiting).toBeGreaterThan(0);
      // What the cluster's "declared dead" path calls: every buffered job goes back, lanes included.
      expect(n.nodeRuntime!.dropBuffered("test")).toBe(waiting);
      expect(lane()).toBe(0);
    } finally {
      unblock();
    }
  });

  it("claims one queue through the per-queue index, never walking another queue's rows", async () => {
    const t = tablesFor(schema);
    await pool.query(
      `INSERT INTO ${t.jobs} (type, queue, payload, priority)
       SELECT 'ix.t', CASE WHEN g % 50 = 0 THEN 'ix-small' ELSE 'ix-big' END, '{}', (g % 3) * 10
       FROM generate_series(1, 20000) g`,
    );
    await pool.query(`ANALYZE ${t.jobs}`);
    const client = await pool.connect();
    try {
      await client.query("BEGIN");
      const plan = await client.query<{ "QUERY PLAN": string }>(
        `EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${claimSql(t, true, true)}`,
        [100, "ix-node", ["ix.t"], 0, null, "ix-small"],
      );
      const text = plan.rows.map((r) => r["QUERY PLAN"]).join("\n");
      expect(text).toContain("scheduler_job_queue_queue_claim_idx");
      expect(text).not.toMatch(/Seq Scan on scheduler_job_queue/);
      // 100 rows of the small queue claimed: the scans stay near 100 rows, not the 19,600 of the big one.
      expect(text).toMatch(/Update on scheduler_job_queue j \(actual time=[\d.]+\.\.[\d.]+ rows=100 /);
      const scanned = [
        ...text.matchAll(/Index Scan using scheduler_job_queue_queue_claim_idx .* rows=(\d+) loops=(\d+)/g),
      ];
      for (const [, rows, loops] of scanned) expect(Number(rows) * Number(loops)).toBeLessThanOrEqual(300);
    } finally {
      await client.query("ROLLBACK");
      client.release();
    }
  });

  it("validates the queues option", async () => {
    expect(() => testPawl(schema, { queues: { default: 0 } })).toThrowError(ValidationError);
    expect(() => testPawl(schema, { queues: {} })).toThrowError(/at least one queue/);
    expect(() => testPawl(schema, { queues: { "a b": 1 } })).toThrowError(/queues: invalid queue/);
    expect(() => testPawl(schema, { queues: { a: 2, b: 3 }, concurrency: 4 })).toThrowError(/add up to 5/);
    const ok = testPawl(schema, { queues: { a: 2, b: 3 }, concurrency: 5 });
    expect(ok.config.concurrency).toBe(5);
    expect([...ok.config.queues!]).toEqual([
      ["a", 2],
      ["b", 3],
    ]);
    await ok.close();
  });
});
