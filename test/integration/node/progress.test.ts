/**
 * ctx.progress: validated, emitted as `job:progress` on every call, stored throttled (a tight loop of a
 * hundred values costs a couple of writes), readable while the job runs, and the last value always lands
 * before the outcome, so the finished row keeps it.
 */
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { Pawl, PawlConfig } from "../../../src/index.js";
import { jobDetail } from "../../../src/cli/format.js";
import { databaseUrl } from "../../helpers/db.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";
import { gate } from "../../helpers/gate.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
const closers: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("prog"));
}, 60_000);
afterAll(async () => {
  await cleanup();
});
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c.close();
});

/** A node on a pool that counts (and announces) its progress writes. */
function countingNode(config: PawlConfig = {}): {
  node: Pawl;
  writes: () => number;
  onWrite: (fn: () => void) => void;
} {
  const p = new pg.Pool({ connectionString: databaseUrl, max: 4 });
  p.on("error", () => {});
  let writes = 0;
  const listeners: (() => void)[] = [];
  const query = p.query.bind(p) as (...args: unknown[]) => Promise<unknown>;
  (p as unknown as { query: (...args: unknown[]) => Promise<unknown> }).query = (...args: unknown[]) => {
    const result = query(...args);
    const name = (args[0] as { name?: string }).name;
    if (name === `pawl_${schema}_progress`) {
      writes++;
      void result.then(() => listeners.forEach((l) => l()));
    }
    return result;
  };
  const node = testPawl(schema, { pool: p, ...config });
  closers.push({ close: () => p.end() }, node);
  return { node, writes: () => writes, onWrite: (fn) => listeners.push(fn) };
}

describe("ctx.progress", () => {
  it("stores a value readable while the job runs", async () => {
    const { node, onWrite } = countingNode();
    const release = gate();
    node.register("pg.running", async (_p, ctx) => {
      ctx.progress({ step: "download", done: 3, total: 10 });
      await release.promise;
    });
    const written = new Promise<void>((resolve) => onWrite(resolve));
    await node.start();
    const job = await node.enqueue("pg.running");
    await written;
    const running = await node.getJob(job.id);
    expect(running).toMatchObject({ status: "RUNNING", progress: { step: "download", done: 3, total: 10 } });
    release.open();
    const done = await node.waitFor(job);
    expect(done.progress).toEqual({ step: "download", done: 3, total: 10 });
    expect(jobDetail(done)).toMatch(/progress:\n {2}\{\n {4}"done": 3,/); // jsonb orders the keys
  });

  it("throttles a tight loop, emits every call, and lands the last value before the outcome", async () => {
    const { node, writes } = countingNode();
    node.register("pg.loop", async (_p, ctx) => {
      for (let i = 0; i <= 100; i++) ctx.progress(i);
      return "ok";
    });
    const events: unknown[] = [];
    node.on("job:progress", (e) => events.push(e.progress));
    await node.start();
    const job = await node.enqueue("pg.loop");
    const done = await node.waitFor(job, { timeoutMs: 10_000 });
    expect(done).toMatchObject({ status: "SUCCEEDED", result: "ok", progress: 100 });
    expect(events).toHaveLength(101);
    expect(events.at(-1)).toBe(100);
    // The first value at once, the newest held one with the outcome: never a write per call.
    expect(writes()).toBeGreaterThanOrEqual(1);
    expect(writes()).toBeLessThanOrEqual(2);
    // It is in the finished table's row (the move carried the column), and the view shows it.
    const row = await pool.query(`SELECT progress FROM "${schema}".scheduler_job_finished WHERE id = $1`, [
      job.id,
    ]);
    expect(row.rows[0]?.progress).toBe(100);
    // What `pawl job <id>` prints.
    expect(jobDetail(done)).toContain("progress: 100%");
  });

  it("keeps the last value of a job that goes DEAD", async () => {
    const { node } = countingNode();
    node.register(
      "pg.dead",
      async (_p, ctx) => {
        ctx.progress(10);
        ctx.progress(55);
        throw new Error("broke at 55%");
      },
      { maxAttempts: 1 },
    );
    await node.start();
    const job = await node.enqueue("pg.dead");
    expect(await node.waitFor(job, { timeoutMs: 10_000 })).toMatchObject({ status: "DEAD", progress: 55 });
  });

  it("refuses a bad value with INVALID_PROGRESS and stores nothing", async () => {
    const { node, writes } = countingNode();
    node.register("pg.bad", async (_p, ctx) => {
      const codes: unknown[] = [];
      for (const bad of [101, -5, Number.NaN, undefined, { big: "x".repeat(5_000) }]) {
        try {
          ctx.progress(bad);
        } catch (e) {
          codes.push((e as { code?: unknown }).code);
        }
      }
      return codes;
    });
    await node.start();
    const job = await node.enqueue("pg.bad");
    const done = await node.waitFor(job, { timeoutMs: 10_000 });
    expect(done.result).toEqual(Array(5).fill("INVALID_PROGRESS"));
    expect(done.progress).toBeNull();
    expect(writes()).toBe(0);
  });
});
