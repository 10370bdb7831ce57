/**
 * One slow claim never stalls the node (issue 44, docs/fairness.md#one-slow-claim-never-stalls-the-node):
 * with the keyed claim made slow on purpose (another session holds an exclusive lock on the table of live
 * keys, which only the keyed claim reads), unkeyed jobs keep starting, the keyed claim gives up at its
 * time budget and says so (`claim-statement`, outcome `timeout`), and the keyed job runs once the lock goes.
 */
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Pawl } from "../../../src/index.js";
import { jobEvent, onAny, record } from "../../helpers/events.js";
import { closeAll, setupSchema, testPawl } from "../../helpers/pawl.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
const nodes: Pawl[] = [];

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("slow_claim"));
});
afterAll(async () => {
  await closeAll(nodes);
  await cleanup();
});

describe("a keyed claim held up by a lock", () => {
  it("does not stop unkeyed jobs, times out at its budget, and its job runs once the lock is gone", async () => {
    const node = testPawl(schema, { claimStatementTimeoutMs: 200 });
    nodes.push(node);
    node.register("work", () => {});
    await node.start();
    const statements = record(node.events, "claim-statement");
    const locker = await pool.connect();
    try {
      await locker.query("BEGIN");
      await locker.query(`LOCK TABLE "${schema}".scheduler_keyed_live IN ACCESS EXCLUSIVE MODE`);
      // A keyed job, inserted by the session that holds the lock (its trigger adds its key there) and
      // committed when the lock goes.
      const keyed = await locker.query<{ id: string }>(
        `INSERT INTO "${schema}".scheduler_job_queue (type, concurrency_key, concurrency_limit)
         VALUES ('work', 'tenant-1', 1) RETURNING id`,
      );
      const timedOut = onAny(
        node.events,
        "claim-statement",
        (e) => e.kind === "keyed" && e.outcome === "timeout",
      );
      const done = jobEvent(node.events, "job:succeeded");
      const jobs = await node.enqueueMany(
        Array.from({ length: 20 }, (_, i) => ({ type: "work", payload: { i } })),
      );
      // Every unkeyed job runs while the lock is held.
      await done.forAll(jobs.map((j) => j.id));
      const t = await timedOut;
      expect(t.budgetMs).toBeGreaterThanOrEqual(200);
      expect(t.claimed).toBe(0);
      const keyedDone = jobEvent(node.events, "job:succeeded");
      await locker.query("COMMIT");
      await keyedDone.for(keyed.rows[0]!.id);
    } finally {
      locker.release();
    }
    // Unkeyed statements answered throughout; every statement was reported with a kind.
    expect(statements.seen.some((e) => e.kind !== "keyed" && e.outcome === "ok" && e.claimed > 0)).toBe(true);
    statements.stop();
  });
});
