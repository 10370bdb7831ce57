/**
 * Concurrency keys on running nodes (issue 27, docs/fairness.md): a key's limit holds across two nodes at
 * every sample (handlers in flight, and leased rows read from the database), a key's backlog does not hold
 * back another key, and 1,000 dynamic keys all finish within their limits.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import type { Pawl } from "../../../src/index.js";
import { closeAll, setupSchema, startNodes } from "../../helpers/pawl.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let nodes: Pawl[] = [];

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("ckeys"));
});
afterAll(() => cleanup());
afterEach(async () => {
  await closeAll(nodes);
  nodes = [];
  await pool.query(`TRUNCATE "${schema}".scheduler_job_queue, "${schema}".scheduler_job_finished`);
});

/** Counts handlers in flight per key and remembers the most seen at once. */
function inFlight() {
  const now = new Map<string, number>();
  const most = new Map<string, number>();
  return {
    most,
    async run(key: string, ms: number): Promise<void> {
      const n = (now.get(key) ?? 0) + 1;
      now.set(key, n);
      most.set(key, Math.max(most.get(key) ?? 0, n));
      await new Promise((r) => setTimeout(r, ms));
      now.set(key, (now.get(key) ?? 1) - 1);
    },
  };
}

/** The most leased rows of any key right now, read from the rows. */
async function leasedMost(): Promise<number> {
  const r = await pool.query<{ n: number }>(
    `SELECT coalesce(max(n), 0)::int AS n FROM (SELECT count(*) AS n FROM "${schema}".scheduler_job_queue
     WHERE status = 'PENDING' AND picked_by IS NOT NULL AND concurrency_key IS NOT NULL GROUP BY concurrency_key) s`,
  );
  return r.rows[0]?.n ?? 0;
}

describe("concurrency keys on nodes", () => {
  it("holds a type's default limit of 3 across two nodes at every sample", async () => {
    const f = inFlight();
    nodes = await startNodes(
      schema,
      2,
      (node) => node.register("work", (p: { key: string }) => f.run(p.key, 20), { concurrencyLimit: 3 }),
      { concurrency: 8 },
    );
    const jobs = await nodes[0]!.enqueueMany(
      Array.from({ length: 90 }, (_, i) => ({
        type: "work",
        payload: { key: `tenant-${i % 3}` },
        concurrencyKey: `tenant-${i % 3}`,
      })),
    );
    const done = Promise.all(jobs.map((j) => nodes[0]!.waitFor(j.id, { timeoutMs: 60_000 })));
    let finished = false;
    void done.then(() => (finished = true));
    let sampled = 0;
    while (!finished) {
      expect(await leasedMost()).toBeLessThanOrEqual(3);
      sampled++;
    }
    await done;
    expect(sampled).toBeGreaterThan(0);
    for (const [key, most] of f.most) expect(most, key).toBeLessThanOrEqual(3);
    // The slots were used: each key reached its limit at some point.
    expect([...f.most.values()]).toEqual([3, 3, 3]);
  });

  it("starts a small key's jobs while a large key's backlog waits", async () => {
    const started = new Map<string, number>();
    nodes = await startNodes(
      schema,
      1,
      (node) =>
        node.register("t", async (p: { key: string; i: number }) => {
          started.set(`${p.key}${p.i}`, Date.now());
          await new Promise((r) => setTimeout(r, 5));
        }),
      { concurrency: 10 },
    );
    const node = nodes[0]!;
    const a = await node.enqueueMany(
      Array.from({ length: 3000 }, (_, i) => ({
        type: "t",
        payload: { key: "A", i },
        concurrencyKey: "A",
      })),
    );
    const t0 = Date.now();
    const b = await node.enqueueMany(
      Array.from({ length: 20 }, (_, i) => ({
        type: "t",
        payload: { key: "B", i },
        concurrencyKey: "B",
      })),
    );
    await Promise.all(b.map((j) => node.waitFor(j.id, { timeoutMs: 30_000 })));
    const bLast = Math.max(...Array.from({ length: 20 }, (_, i) => started.get(`B${i}`) ?? Infinity));
    const aLeft = await pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM "${schema}".scheduler_job_queue WHERE concurrency_key = 'A'`,
    );
    // B's 20 jobs all started long before A's backlog drained.
    expect(aLeft.rows[0]?.n).toBeGreaterThan(1000);
    expect(bLast - t0).toBeLessThan(2000);
    expect(a).toHaveLength(3000);
  });

  it("runs 1,000 dynamic keys x 5 jobs with a limit of 2 on two nodes: all finish, none over", async () => {
    const f = inFlight();
    nodes = await startNodes(
      schema,
      2,
      (node) => node.register("k", (p: { key: string }) => f.run(p.key, 2)),
      {
        concurrency: 10,
      },
    );
    const jobs = await nodes[0]!.enqueueMany(
      Array.from({ length: 5000 }, (_, i) => ({
        type: "k",
        payload: { key: `key-${i % 1000}` },
        concurrencyKey: `key-${i % 1000}`,
        concurrencyLimit: 2,
      })),
    );
    await Promise.all(jobs.map((j) => nodes[0]!.waitFor(j.id, { timeoutMs: 120_000 })));
    expect(f.most.size).toBe(1000);
    expect(Math.max(...f.most.values())).toBeLessThanOrEqual(2);
    const left = await pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM "${schema}".scheduler_job_queue`,
    );
    expect(left.rows[0]?.n).toBe(0);
  }, 180_000);
});
