/**
 * Pruning against the real database: retentions per status, batched deletes, live rows untouched.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { setupSchema } from "../../helpers/pawl.js";
import { pruneSql } from "../../../src/store/cluster/prune-sql.js";
import { Pruner } from "../../../src/cluster/pruner.js";
import { systemClock } from "../../../src/core/clock.js";
import { silentLogger } from "../../../src/core/logger.js";
import { tablesFor } from "../../../src/db/sql.js";
import { clusterNode, insertFinished, insertRunning } from "../../helpers/cluster.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
const ends: (() => Promise<void>)[] = [];

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("prune"));
});
afterAll(() => cleanup());
afterEach(async () => {
  for (const end of ends.splice(0).reverse()) await end();
  await pool.query(
    `TRUNCATE "${schema}".scheduler_job_queue, "${schema}".scheduler_job_finished, "${schema}".scheduler_lock`,
  );
});

const hour = 3_600_000;
const day = 24 * hour;

async function counts(): Promise<Record<string, number>> {
  const { rows } = await pool.query<{ status: string; n: number }>(
    `SELECT status, count(*)::int AS n FROM "${schema}".scheduler_job_all GROUP BY status`,
  );
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

describe("pruner", () => {
  it("deletes the durable steps and signals of jobs whose history is gone, and keeps a live job's", async () => {
    const n = clusterNode(schema, "pruner-durable", { pruneBatchSize: 100 });
    ends.push(n.end);
    await insertFinished(pool, schema, "SUCCEEDED", 3, 2 * day); // pruned by this pass
    await insertFinished(pool, schema, "SUCCEEDED", 2, hour); // kept
    await pool.query(`INSERT INTO "${schema}".scheduler_job_queue (type) VALUES ('live')`);
    // One step and one signal for every job, whatever its state.
    await pool.query(
      `INSERT INTO "${schema}".scheduler_job_step (job_id, name, kind, status, attempt)
       SELECT id, 's', 'step', 'succeeded', 1 FROM "${schema}".scheduler_job_all`,
    );
    await pool.query(
      `INSERT INTO "${schema}".scheduler_job_signal (job_id, name) SELECT id, 'x' FROM "${schema}".scheduler_job_all`,
    );
    const r = await n.services.pruner.runOnce();
    expect(r).toMatchObject({ succeeded: 3, durable: 6 });
    const left = await pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM "${schema}".scheduler_job_step s
       WHERE EXISTS (SELECT 1 FROM "${schema}".scheduler_job_all j WHERE j.id = s.job_id)`,
    );
    const all = await pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM "${schema}".scheduler_job_step`,
    );
    expect(all.rows[0]!.n).toBe(3);
    expect(left.rows[0]!.n).toBe(3);
    await pool.query(`TRUNCATE "${schema}".scheduler_job_step, "${schema}".scheduler_job_signal`);
  });

  it("deletes finished rows past their retention in batches and keeps the rest", async () => {
    const n = clusterNode(schema, "pruner", { pruneBatchSize: 100 });
    ends.push(n.end);
    await insertFinished(pool, schema, "SUCCEEDED", 450, 2 * day);
    await insertFinished(pool, schema, "SUCCEEDED", 30, hour); // recent
    await insertFinished(pool, schema, "CANCELED", 120, 2 * day);
    await insertFinished(pool, schema, "DEAD", 70, 2 * day); // within the 14-day DLQ retention
    await insertFinished(pool, schema, "DEAD", 40, 15 * day);
    await insertRunning(pool, schema, "someone", 10);
    await pool.query(
      `INSERT INTO "${schema}".scheduler_job_queue (type) SELECT 'new' FROM generate_series(1, 10)`,
    );
    const done = n.events.next("prune:done");

    const r = await n.services.pruner.runOnce();

    expect(r).toMatchObject({ ran: true, succeeded: 450, canceled: 120, dead: 40, more: false });
    // 5 SUCCEEDED batches (the last short), 2 CANCELED, 1 DEAD.
    expect(r.batches).toBe(8);
    expect(await done).toMatchObject({ succeeded: 450, canceled: 120, dead: 40, batches: 8 });
    expect(await counts()).toEqual({ SUCCEEDED: 30, DEAD: 70, RUNNING: 10, PENDING: 10 });

    // Controlled time: 15 days later everything finished is past its retention.
    const later = await n.services.pruner.runOnce(new Date(Date.now() + 15 * day));
    expect(later).toMatchObject({ succeeded: 30, dead: 70 });
    expect(await counts()).toEqual({ RUNNING: 10, PENDING: 10 });
  });

  it("stops at its batch budget and says there is more", async () => {
    const n = clusterNode(schema, "budget", { pruneBatchSize: 10 });
    ends.push(n.end);
    const pruner = new Pruner({
      store: n.store,
      leases: n.services.leases,
      clock: systemClock,
      events: n.events,
      logger: silentLogger,
      succeededRetentionMs: day,
      canceledRetentionMs: day,
      deadRetentionMs: 14 * day,
      batchSize: 10,
      maxBatches: 3,
    });
    await insertFinished(pool, schema, "SUCCEEDED", 100, 2 * day);
    const r = await pruner.runOnce();
    expect(r).toMatchObject({ succeeded: 30, batches: 3, more: true });
  });

  it("honours configured retentions, and skips while another node holds the lease", async () => {
    const a = clusterNode(schema, "prune-a", {
      succeededRetentionMs: 0,
      canceledRetentionMs: 10 * day,
      deadRetentionMs: 0,
    });
    const b = clusterNode(schema, "prune-b");
    ends.push(a.end, b.end);
    await insertFinished(pool, schema, "SUCCEEDED", 5, 1000);
    await insertFinished(pool, schema, "CANCELED", 5, 2 * day);
    await insertFinished(pool, schema, "DEAD", 5, 1000);
    const lease = await b.services.leases.acquire("pawl:prune");
    expect((await a.services.pruner.runOnce()).ran).toBe(false);
    await lease!.release();
    expect(await a.services.pruner.runOnce()).toMatchObject({
      ran: true,
      succeeded: 5,
      canceled: 0,
      dead: 5,
    });
  });

  it("can walk the partial indexes by finished_at (the status literal matches their predicates)", async () => {
    const t = tablesFor(schema);
    const db = await pool.connect();
    try {
      await db.query("BEGIN");
      // On a tiny table the planner rightly prefers a scan; forbid it to see that the index qualifies.
      await db.query("SET LOCAL enable_seqscan = off");
      // Both partitions pruned row by row (migration 0016): the rows partition keeps 0005's index names.
      for (const [part, status, index] of [
        ["rows", "SUCCEEDED", "scheduler_job_finished_pruned_idx"],
        ["rows", "CANCELED", "scheduler_job_finished_pruned_idx"],
        ["rows", "DEAD", "scheduler_job_finished_dead_idx"],
        ["default", "SUCCEEDED", "scheduler_job_finished_succeeded_default_pruned_idx"],
        ["default", "CANCELED", "scheduler_job_finished_succeeded_default_pruned_idx"],
        ["default", "DEAD", "scheduler_job_finished_succeeded_default_finished_at_id_idx"],
      ] as const) {
        const text = pruneSql(t, status, part)
          .replaceAll("$1::bigint", "86400000::bigint")
          .replaceAll("$2", "100")
          .replaceAll("$3::timestamptz", "NULL::timestamptz");
        const { rows } = await db.query(`EXPLAIN ${text}`);
        const plan = rows.map((r: Record<string, string>) => r["QUERY PLAN"]).join("\n");
        expect(plan, plan).toContain(index);
        expect(plan, plan).not.toMatch(/Sort Key/);
      }
    } finally {
      await db.query("ROLLBACK");
      db.release();
    }
  });
});
