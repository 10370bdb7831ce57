/**
 * Migration 0005 on a database that already has jobs: finished rows (of every terminal status, a flow
 * member among them) move to scheduler_job_finished under their ids, live rows stay, flows keep their
 * counts, and everything reads back through the store.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { JobStore } from "../../../src/store/postgres-job-store.js";
import { migrate, migrationScript } from "../../../src/store/migrations/migrate.js";
import { migrations } from "../../../src/store/migrations/migrations.generated.js";
import { dropSchema, testPool, uniqueSchema } from "../../helpers/db.js";
import { newJob } from "../../helpers/new-job.js";

let pool: pg.Pool;
const schema = uniqueSchema("fmig");

beforeAll(() => {
  pool = testPool(4);
});
afterAll(async () => {
  await dropSchema(pool, schema);
  await pool.end();
});

describe("migration 0005", () => {
  it("moves existing finished rows out of the live table and keeps their ids, results and flows", async () => {
    await pool.query(
      migrationScript(
        schema,
        migrations.filter((m) => m.version <= 4),
      ),
    );
    const s = `"${schema}"`;
    const flow = await pool.query<{ id: string }>(
      `INSERT INTO ${s}.scheduler_flow (kind, failure_policy, total, succeeded) VALUES ('batch', 'stop', 2, 1)
       RETURNING id`,
    );
    const flowId = flow.rows[0]!.id;
    const { rows } = await pool.query<{ id: string; status: string }>(
      `INSERT INTO ${s}.scheduler_job_queue
         (type, status, attempts, result, errors, cancel_reason, finished_at, picked_by, flow_id, flow_step)
       VALUES ('old', 'SUCCEEDED', 1, '{"r":1}', '[]', NULL, now() - interval '1 hour', 'n0', NULL, NULL),
              ('old', 'DEAD', 3, NULL, '[{"attempt":3,"name":"Error","message":"x","at":"2026-01-01"}]', NULL,
               now() - interval '2 hours', NULL, NULL, NULL),
              ('old', 'CANCELED', 0, NULL, '[]', 'why', now(), NULL, NULL, NULL),
              ('old', 'SUCCEEDED', 1, '2', '[]', NULL, now(), NULL, $1, '0'),
              ('old', 'PENDING', 0, NULL, '[]', NULL, NULL, NULL, $1, '1'),
              ('old', 'RUNNING', 1, NULL, '[]', NULL, NULL, 'n1', NULL, NULL)
       RETURNING id, status`,
      [flowId],
    );
    const ids = rows.map((r) => r.id);

    // Later migrations (0006 onwards) apply in the same run; 0005 is the one under test.
    expect((await migrate(pool, schema)).applied[0]).toBe(5);

    const placed = await pool.query<{ id: string; status: string; t: string }>(
      // The live side as users see it: 0008 (applied in the same run) keeps a RUNNING row PENDING, leased.
      `SELECT id, CASE WHEN status = 'PENDING' AND picked_by IS NOT NULL THEN 'RUNNING' ELSE status END AS status,
              'live' AS t FROM ${s}.scheduler_job_queue
       UNION ALL SELECT id, status, 'finished' FROM ${s}.scheduler_job_finished ORDER BY id`,
    );
    expect(placed.rows.map((r) => [r.id, r.status, r.t])).toEqual([
      [ids[0], "SUCCEEDED", "finished"],
      [ids[1], "DEAD", "finished"],
      [ids[2], "CANCELED", "finished"],
      [ids[3], "SUCCEEDED", "finished"],
      [ids[4], "PENDING", "live"],
      [ids[5], "RUNNING", "live"],
    ]);
    // The flow's counters were not touched by the move (its member was counted when it finished).
    const f = await pool.query(`SELECT succeeded, dead, canceled FROM ${s}.scheduler_flow WHERE id = $1`, [
      flowId,
    ]);
    expect(f.rows[0]).toEqual({ succeeded: 1, dead: 0, canceled: 0 });
    // The indexes only finished rows needed are gone from the live table.
    const idx = await pool.query<{ indexname: string }>(
      `SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = 'scheduler_job_queue'`,
      [schema],
    );
    const names = idx.rows.map((r) => r.indexname);
    expect(names).not.toContain("scheduler_job_queue_dead_idx");
    expect(names).not.toContain("scheduler_job_queue_finished_idx");
    // (The running index stayed in 0005; 0008, applied in the same run, drops it for the lease claim.)
    expect(names).not.toContain("scheduler_job_queue_running_idx");

    const store = new JobStore(pool, schema);
    expect(await store.get(ids[0]!)).toMatchObject({ status: "SUCCEEDED", result: { r: 1 }, pickedBy: "n0" });
    expect((await store.listDead()).map((j) => [j.id, j.lastError])).toEqual([[ids[1], "x"]]);
    expect(await store.get(ids[2]!)).toMatchObject({ status: "CANCELED", cancelReason: "why" });
    expect((await store.flowMembers(flowId, 10)).map((j) => [j.id, j.status])).toEqual([
      [ids[3], "SUCCEEDED"],
      [ids[4], "PENDING"],
    ]);
    // New ids keep coming from the one sequence, above every moved id.
    const [fresh] = await store.enqueue([newJob({ type: "new" })]);
    expect(BigInt(fresh!.id)).toBeGreaterThan(BigInt(ids[5]!));
  });
});
