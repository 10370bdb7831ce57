/**
 * The lease audit on a running node (src/cluster/lease-audit.ts, docs/fault-tolerance.md#lost-replies):
 * rows leased to a live node that it never received (what a claim whose reply was lost leaves) go back to
 * PENDING and run, once, with their concurrency key's count restored; rows the node does run are never
 * released however often the audit looks. The stranded claim is made with the store's own claim statement
 * under the node's id, which is exactly what a claim that committed and lost its reply leaves.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import type { Pawl } from "../../../src/index.js";
import { closeAll, setupSchema, testPawl } from "../../helpers/pawl.js";
import { gate } from "../../helpers/gate.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let nodes: Pawl[] = [];

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("laudit"));
});
afterAll(() => cleanup());
afterEach(async () => {
  await closeAll(nodes);
  nodes = [];
  await pool.query(`TRUNCATE "${schema}".scheduler_job_queue, "${schema}".scheduler_job_finished`);
});

const audit = { leaseAuditIntervalMs: 200, leaseAuditGraceMs: 100 };

async function keyRunning(key: string): Promise<number> {
  const r = await pool.query<{ n: number }>(`SELECT "${schema}".pawl_key_running($1) AS n`, [key]);
  return r.rows[0]?.n ?? -1;
}

describe("lease audit", () => {
  it("releases rows leased to a live node that never received them; each then runs once", async () => {
    // No audit on the interval: the one that releases is brought by the failed claim reported below.
    const node = testPawl(schema, { leaseAuditIntervalMs: 600_000, leaseAuditGraceMs: 100 });
    nodes.push(node);
    const runs = new Map<string, number>();
    node.register("work", (_p: unknown, ctx) => void runs.set(ctx.jobId, (runs.get(ctx.jobId) ?? 0) + 1), {
      concurrencyLimit: 1,
    });
    // Due a minute from now: the node cannot claim them yet; the stranded claim below looks ahead.
    const runAt = new Date(Date.now() + 60_000);
    const jobs = await node.enqueueMany([
      ...Array.from({ length: 5 }, () => ({ type: "work", payload: {}, runAt, concurrencyKey: "k" })),
      ...Array.from({ length: 5 }, () => ({ type: "work", payload: {}, runAt })),
    ]);
    await node.start();
    // Claims under the node's id whose replies the node never got: the keyed claim (one job of key k, its
    // limit) and the plain one.
    const args = {
      nodeId: node.nodeId,
      limit: 100,
      types: ["work"],
      boostIntervalMs: 0,
      withPayload: false,
      now: new Date(runAt.getTime() + 1000),
    };
    const keyed = await node.store.claimKeyed(args);
    const plain = await node.store.claim(args);
    expect([keyed.jobs.length, plain.length]).toEqual([1, 5]);
    const stranded = new Set([...keyed.jobs, ...plain].map((j) => j.id));
    expect(await keyRunning("k")).toBeGreaterThan(0);
    const released = new Set<string>();
    const allReleased = new Promise<void>((resolve) => {
      const off = node.events.on("cluster:lease-audit", (e) => {
        for (const j of e.released) released.add(j.id);
        if (released.size === stranded.size) {
          off();
          resolve();
        }
      });
    });
    // What the claim cycle reports when a claim fails (the statement may have committed): audit soon.
    node.events.emit("error", { where: "claim", error: new Error("Connection terminated unexpectedly") });
    await allReleased;
    expect([...released].sort()).toEqual([...stranded].sort());
    expect(await keyRunning("k")).toBe(0);
    // Released rows keep their scheduled time: make them due now, and they run on this node.
    await pool.query(`UPDATE "${schema}".scheduler_job_queue SET scheduled_time = now()`);
    for (const j of jobs) await node.waitFor(j.id, { timeoutMs: 20_000 });
    const rows = await pool.query<{ status: string; attempts: number }>(
      `SELECT status, attempts FROM "${schema}".scheduler_job_all`,
    );
    // The stranded attempt was not counted: each job's one attempt is the one that ran.
    expect(rows.rows.map((r) => [r.status, r.attempts])).toEqual(jobs.map(() => ["SUCCEEDED", 1]));
    expect([...runs.values()]).toEqual(jobs.map(() => 1));
    expect(await keyRunning("k")).toBe(0);
  });

  it("never releases a lease the node runs, buffers or is writing", async () => {
    const node = testPawl(schema, { ...audit, concurrency: 2, prefetch: 2 });
    nodes.push(node);
    const hold = gate();
    node.register("slow", () => hold.promise);
    const jobs = await node.enqueueMany(Array.from({ length: 4 }, () => ({ type: "slow", payload: {} })));
    let audits = 0;
    const sawFive = new Promise<void>((resolve) => {
      const off = node.events.on("cluster:lease-audit", (e) => {
        // Every audit sees the four leases (two running, two buffered) and releases none.
        expect(e.released).toEqual([]);
        if (e.leased === 4 && ++audits === 5) {
          off();
          resolve();
        }
      });
    });
    await node.start();
    await sawFive;
    hold.open();
    for (const j of jobs) await node.waitFor(j.id, { timeoutMs: 20_000 });
    const attempts = await pool.query<{ attempts: number }>(
      `SELECT attempts FROM "${schema}".scheduler_job_all WHERE status = 'SUCCEEDED'`,
    );
    expect(attempts.rows.map((r) => r.attempts)).toEqual([1, 1, 1, 1]);
  });
});
