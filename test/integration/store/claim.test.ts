import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import type { PostgresJobStore } from "../../../src/store/postgres-job-store.js";
import { JobStore } from "../../../src/store/postgres-job-store.js";
import { setupSchema } from "../../helpers/pawl.js";
import { databaseUrl, testPool } from "../../helpers/db.js";
import { buildNewJob } from "../../../src/input/enqueue-input.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let store: PostgresJobStore;

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("claim"));
  store = new JobStore(pool, schema);
});
afterAll(() => cleanup());

const newJob = (type: string, priority = 10, extra: Record<string, unknown> = {}) =>
  buildNewJob(type, { n: 1 }, { priority, ...extra }, undefined, 1024);

async function reset(): Promise<void> {
  await pool.query(`TRUNCATE "${schema}".scheduler_job_queue, "${schema}".scheduler_job_finished`);
}

describe("claim", () => {
  it("gives two concurrent claimers disjoint batches over 10,000 jobs", async () => {
    await reset();
    const jobs = Array.from({ length: 10_000 }, (_, i) => newJob("bulk", i % 3 === 0 ? 20 : 10));
    await store.enqueue(jobs);
    const poolA = testPool(2);
    const poolB = testPool(2);
    const a = new JobStore(poolA, schema);
    const b = new JobStore(poolB, schema);
    const seen = new Map<string, string>();
    let duplicates = 0;
    const run = async (s: JobStore, node: string) => {
      for (;;) {
        const batch = await s.claim({
          nodeId: node,
          limit: 97,
          types: ["bulk"],
          boostIntervalMs: 0,
          withPayload: false,
        });
        if (batch.length === 0) return;
        for (const j of batch) {
          if (seen.has(j.id)) duplicates++;
          seen.set(j.id, node);
        }
      }
    };
    await Promise.all([run(a, "A"), run(b, "B")]);
    await poolA.end();
    await poolB.end();
    expect(duplicates).toBe(0);
    expect(seen.size).toBe(10_000);
    const byNode = [...seen.values()].reduce(
      (m, n) => m.set(n, (m.get(n) ?? 0) + 1),
      new Map<string, number>(),
    );
    expect(byNode.get("A")).toBeGreaterThan(0);
    expect(byNode.get("B")).toBeGreaterThan(0);
    const counted = await pool.query(
      `SELECT picked_by, count(*)::int AS n FROM "${schema}".scheduler_job_all
       WHERE status = 'RUNNING' AND attempts = 1 GROUP BY picked_by ORDER BY 1`,
    );
    expect(counted.rows).toEqual([
      { picked_by: "A", n: byNode.get("A") },
      { picked_by: "B", n: byNode.get("B") },
    ]);
  }, 60_000);

  it("claims by priority, then scheduled time, then id, and only due rows of known types", async () => {
    await reset();
    const now = (await store.databaseTime()).getTime();
    const at = (ms: number) => new Date(now + ms);
    const rows = await store.enqueue([
      newJob("a", 10, { runAt: at(-3000) }), // 0
      newJob("a", 20, { runAt: at(-1000) }), // 1
      newJob("a", 10, { runAt: at(-5000) }), // 2
      newJob("a", 30, { runAt: at(60_000) }), // 3: not due
      newJob("unknown", 100, { runAt: at(-9000) }), // 4: unknown type
      newJob("b", 20, { runAt: at(-1000) }), // 5
    ]);
    const ids = rows.map((r) => r.id);
    const claimed = await store.claim({
      nodeId: "n",
      limit: 10,
      types: ["a", "b"],
      boostIntervalMs: 0,
      withPayload: true,
    });
    expect(claimed.map((c) => c.id)).toEqual([ids[1], ids[5], ids[2], ids[0]]);
    expect(claimed[0]?.payload).toEqual({ n: 1 });
    expect(claimed.every((c) => c.attempt === 1 && c.boost === 0)).toBe(true);
    const left = await pool.query(
      `SELECT id FROM "${schema}".scheduler_job_all WHERE status = 'PENDING' ORDER BY id`,
    );
    expect(left.rows.map((r) => r.id)).toEqual([ids[3], ids[4]]);
  });

  it("boosts an old low-priority job ahead of a newer higher one exactly at the interval boundary", async () => {
    await reset();
    const interval = 15 * 60_000;
    const t0 = new Date("2026-01-01T12:00:00.000Z");
    // old: priority 10, due exactly one interval before T; fresh: priority 11, due at T.
    const [old, fresh] = await store.enqueue([
      newJob("a", 10, { runAt: new Date(t0.getTime() - interval) }),
      newJob("a", 11, { runAt: t0 }),
    ]);
    const claimAt = async (now: Date) => {
      const c = await store.claim({
        nodeId: "n",
        limit: 1,
        types: ["a"],
        boostIntervalMs: interval,
        withPayload: false,
        now,
      });
      await pool.query(
        `UPDATE "${schema}".scheduler_job_queue SET picked_by = NULL, picked_at = NULL, attempts = 0 WHERE picked_by IS NOT NULL`,
      );
      return c;
    };
    // 1 ms short of one interval: no boost yet, the fresh job's higher raw priority wins.
    await pool.query(`UPDATE "${schema}".scheduler_job_queue SET scheduled_time = $1 WHERE id = $2`, [
      new Date(t0.getTime() - interval + 1),
      old?.id,
    ]);
    const justBefore = await claimAt(t0);
    expect(justBefore.map((j) => [j.id, j.boost])).toEqual([[fresh?.id, 0]]);
    await pool.query(`UPDATE "${schema}".scheduler_job_queue SET scheduled_time = $1 WHERE id = $2`, [
      new Date(t0.getTime() - interval),
      old?.id,
    ]);
    const atBoundary = await claimAt(t0);
    // effective 10 + 1 = 11 ties with fresh's 11, and the older scheduled time wins the tie.
    expect(atBoundary.map((j) => [j.id, j.boost])).toEqual([[old?.id, 1]]);
    // With the boost disabled the raw priority decides.
    const disabled = await store.claim({
      nodeId: "n",
      limit: 1,
      types: ["a"],
      boostIntervalMs: 0,
      withPayload: false,
      now: t0,
    });
    expect(disabled.map((j) => j.id)).toEqual([fresh?.id]);
    // The persisted priority is never rewritten.
    const prio = await pool.query(`SELECT priority FROM "${schema}".scheduler_job_all WHERE id = $1`, [
      old?.id,
    ]);
    expect(prio.rows[0].priority).toBe(10);
  });

  it("uses the claim index for a 500-job claim (EXPLAIN ANALYZE, BUFFERS)", async () => {
    await reset();
    await store.enqueue(Array.from({ length: 20_000 }, (_, i) => newJob("e", (i % 4) * 10)));
    await pool.query(`ANALYZE "${schema}".scheduler_job_queue`);
    const { claimSql } = await import("../../../src/store/claim/claim-jobs.js");
    const client = await pool.connect();
    try {
      await client.query("BEGIN");
      const plan = await client.query(
        `EXPLAIN (ANALYZE, BUFFERS, FORMAT TEXT) ${claimSql(store.tables, false)}`,
        [500, "explain", ["e"], 15 * 60_000, null],
      );
      await client.query("ROLLBACK");
      const text = plan.rows.map((r) => r["QUERY PLAN"]).join("\n");
      expect(text).toContain("scheduler_job_queue_claim_idx");
      expect(text).not.toMatch(/Seq Scan on scheduler_job_queue/);
      const updated = /Update on scheduler_job_queue.*actual time=[\d.]+\.\.[\d.]+ rows=(\d+)/.exec(text);
      expect(Number(updated?.[1])).toBe(500);
      if (process.env.PAWL_PRINT_PLANS) console.log(text);
    } finally {
      client.release();
    }
  }, 60_000);
});

describe("claim rows' times", () => {
  it("are epoch ms equal to the row's own Dates (getJob), in any session time zone", async () => {
    await reset();
    const now = (await store.databaseTime()).getTime();
    const [row] = await store.enqueue([newJob("times", 10, { runAt: new Date(now - 1234) })]);
    // Microseconds in scheduled_time, which ms truncate exactly as a Date does.
    await pool.query(
      `UPDATE "${schema}".scheduler_job_queue SET scheduled_time = scheduled_time + interval '789 microseconds' WHERE id = $1`,
      [row!.id],
    );
    const zoned = new pg.Pool({ connectionString: databaseUrl, max: 1, options: "-c timezone=Asia/Kolkata" });
    try {
      const claimed = await new JobStore(zoned, schema).claim({
        nodeId: "n",
        limit: 1,
        types: ["times"],
        boostIntervalMs: 0,
        withPayload: false,
      });
      const job = await store.get(row!.id);
      expect(typeof claimed[0]?.scheduledAtMs).toBe("number");
      expect(claimed[0]?.scheduledAtMs).toBe(job!.scheduledTime.getTime());
      expect(job!.scheduledTime).toBeInstanceOf(Date); // the public Job keeps its Dates
    } finally {
      await zoned.end();
    }
  });
});
