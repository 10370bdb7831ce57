/**
 * The durable store statements (migration 0018) against the real database: steps recorded once (the
 * first success wins), waits written once, signals kept before the wait and consumed exactly once, the
 * park and its re-check, the child trigger that wakes a parent parked on its children, and the pruner's
 * pass over steps, signals and machine rows (with their events) of jobs that are gone.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { PostgresJobStore } from "../../../src/store/postgres-job-store.js";
import { setupSchema } from "../../helpers/pawl.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let store: PostgresJobStore;

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("dstore"));
  store = new PostgresJobStore(pool, schema);
});
afterAll(() => cleanup());

/** A live job leased by `node` (RUNNING), as a claim leaves it. */
async function runningJob(node = "n1", extra: { parent?: string } = {}): Promise<string> {
  const res = await pool.query<{ id: string }>(
    `INSERT INTO "${schema}".scheduler_job_queue (type, status, picked_by, picked_at, attempts, parent_job_id)
     VALUES ('durable.test', 'PENDING', $1, now(), 1, $2) RETURNING id`,
    [node, extra.parent ?? null],
  );
  return res.rows[0]!.id;
}

async function row(id: string) {
  const res = await pool.query<{
    status: string;
    signal_state: string | null;
    attempts: number;
    picked_by: string | null;
  }>(`SELECT status, signal_state, attempts, picked_by FROM "${schema}".scheduler_job_all WHERE id = $1`, [
    id,
  ]);
  return res.rows[0];
}

/** Ends a job the way a node's completion does: the live row moves to the finished table. */
async function finish(id: string, status = "SUCCEEDED"): Promise<void> {
  await pool.query(
    `WITH gone AS (DELETE FROM "${schema}".scheduler_job_queue WHERE id = $1 RETURNING *)
     INSERT INTO "${schema}".scheduler_job_finished (id, type, queue, payload, status, result, finished_at)
     SELECT id, type, queue, payload, $2, '"done"'::jsonb, now() FROM gone`,
    [id, status],
  );
}

describe("durable store", () => {
  it("records a step once: a later success or failure does not replace the first success", async () => {
    const id = await runningJob();
    const d = store.durable;
    const base = { jobId: id, name: "charge", kind: "step" as const, startedAt: new Date(), error: null };
    const failed = await d.recordStep({
      ...base,
      attempt: 1,
      status: "failed",
      resultJson: null,
      error: { name: "Error", message: "card declined" },
    });
    expect(failed).toMatchObject({ status: "failed", error: { message: "card declined" } });
    const first = await d.recordStep({ ...base, attempt: 2, status: "succeeded", resultJson: '{"n":1}' });
    expect(first).toMatchObject({ status: "succeeded", attempt: 2, result: { n: 1 } });
    const second = await d.recordStep({ ...base, attempt: 3, status: "succeeded", resultJson: '{"n":2}' });
    expect(second).toMatchObject({ status: "succeeded", attempt: 2, result: { n: 1 } });
    const loaded = await d.loadSteps(id);
    expect(loaded.steps.map((s) => [s.name, s.status])).toEqual([["charge", "succeeded"]]);
    expect(loaded.now).toBeInstanceOf(Date);
  });

  it("writes a wait once: its due time is the first run's", async () => {
    const id = await runningJob();
    const d = store.durable;
    const a = await d.beginWait({
      jobId: id,
      name: "nap",
      kind: "sleep",
      attempt: 1,
      at: null,
      afterMs: 60_000,
    });
    const b = await d.beginWait({ jobId: id, name: "nap", kind: "sleep", attempt: 2, at: null, afterMs: 1 });
    expect(a.step.status).toBe("waiting");
    expect(b.step.wakeAt?.getTime()).toBe(a.step.wakeAt?.getTime());
    expect(a.step.wakeAt!.getTime() - a.now.getTime()).toBeGreaterThan(59_000);
  });

  it("keeps a signal sent before the wait and consumes it exactly once", async () => {
    const id = await runningJob();
    const sent = await store.transaction((tx) => tx.durable.sendNamedSignal(id, "approved", '{"ok":true}'));
    expect(sent).toMatchObject({ stored: { woken: null } });
    expect(await store.durable.pendingSignals(id)).toHaveLength(1);
    const got = await store.durable.consumeSignal(id, "approved", 1);
    expect(got).toMatchObject({ status: "succeeded", kind: "signal", result: { payload: { ok: true } } });
    expect(await store.durable.consumeSignal(id, "approved", 2)).toBeNull();
    expect(await store.durable.pendingSignals(id)).toHaveLength(0);
  });

  it("refuses a signal for a finished job and for no job, storing nothing", async () => {
    const id = await runningJob();
    await finish(id);
    expect(await store.transaction((tx) => tx.durable.sendNamedSignal(id, "x", "1"))).toEqual({
      refused: "SUCCEEDED",
    });
    expect(await store.transaction((tx) => tx.durable.sendNamedSignal("999999999", "x", "1"))).toEqual({
      refused: null,
    });
    expect(await store.durable.pendingSignals(id)).toHaveLength(0);
  });

  it("parks with the attempt given back; a signal of the wait's name wakes it, another name does not", async () => {
    const id = await runningJob();
    const d = store.durable;
    await d.beginWait({ jobId: id, name: "approval", kind: "signal", attempt: 1, at: null, afterMs: null });
    expect(await d.park("other-node", { id, deadline: null })).toBe(false);
    expect(await d.park("n1", { id, deadline: null })).toBe(true);
    expect(await d.recheck(id)).toBe(false);
    expect(await row(id)).toMatchObject({
      status: "WAITING",
      signal_state: "waiting",
      attempts: 0,
      picked_by: null,
    });
    const other = await store.transaction((tx) => tx.durable.sendNamedSignal(id, "unrelated", "1"));
    expect(other).toMatchObject({ stored: { woken: null } });
    expect((await row(id))?.status).toBe("WAITING");
    // The unnamed form does not wake a durable wait.
    await expect(store.deliverSignal(id, "1")).resolves.toMatchObject({
      refused: "WAITING (on a durable wait)",
    });
    const sent = await store.transaction((tx) => tx.durable.sendNamedSignal(id, "approval", "2"));
    expect(sent).toMatchObject({ stored: { woken: { id, status: "PENDING" } } });
    expect(await row(id)).toMatchObject({ status: "PENDING", signal_state: "delivered" });
  });

  it("the re-check after a park wakes a job whose signal came while it parked, or whose due time passed", async () => {
    const a = await runningJob();
    await store.durable.beginWait({
      jobId: a,
      name: "s",
      kind: "signal",
      attempt: 1,
      at: null,
      afterMs: null,
    });
    await store.transaction((tx) => tx.durable.sendNamedSignal(a, "s", "1"));
    expect(await store.durable.park("n1", { id: a, deadline: null })).toBe(true);
    expect(await store.durable.recheck(a)).toBe(true);
    expect((await row(a))?.status).toBe("PENDING");

    const b = await runningJob();
    const past = new Date(Date.now() - 60_000);
    await store.durable.beginWait({
      jobId: b,
      name: "nap",
      kind: "sleep",
      attempt: 1,
      at: past,
      afterMs: null,
    });
    expect(await store.durable.park("n1", { id: b, deadline: past })).toBe(true);
    expect(await store.durable.recheck(b)).toBe(true);
    expect((await row(b))?.status).toBe("PENDING");
  });

  it("wakes a parent parked on its children when the last awaited child ends, on whatever writes it", async () => {
    const parent = await runningJob();
    const c1 = await runningJob("n2", { parent });
    const c2 = await runningJob("n2", { parent });
    await store.durable.beginWait({
      jobId: parent,
      name: "kids",
      kind: "wait",
      attempt: 1,
      at: null,
      afterMs: null,
      children: [c1, c2],
    });
    expect(await store.durable.park("n1", { id: parent, deadline: null })).toBe(true);
    expect(await store.durable.recheck(parent)).toBe(false);
    await finish(c1);
    expect((await row(parent))?.status).toBe("WAITING");
    await finish(c2, "DEAD");
    expect((await row(parent))?.status).toBe("PENDING");
    const states = await store.durable.childStates([c1, c2]);
    expect(states.map((s) => s.status).sort()).toEqual(["DEAD", "SUCCEEDED"]);
  });

  it("a spawn is claimed once per name", async () => {
    const parent = await runningJob();
    const child = await runningJob("n2");
    const first = await store.transaction(async (tx) => {
      const mine = await tx.durable.claimSpawn(parent, "kid", 1);
      if (mine) await tx.durable.recordSpawn(parent, "kid", child);
      return mine;
    });
    expect(first).toBe(true);
    expect(await store.transaction((tx) => tx.durable.claimSpawn(parent, "kid", 2))).toBe(false);
    expect(await store.durable.readStep(parent, "kid")).toMatchObject({
      children: [child],
      result: { jobId: child },
    });
  });

  it("the pruner's pass deletes steps and signals of jobs that are gone, and keeps the others", async () => {
    const live = await runningJob();
    const gone = await runningJob();
    for (const id of [live, gone]) {
      await store.durable.recordStep({
        jobId: id,
        name: "s",
        kind: "step",
        attempt: 1,
        startedAt: new Date(),
        status: "succeeded",
        resultJson: "1",
        error: null,
      });
      await store.transaction((tx) => tx.durable.sendNamedSignal(id, "later", "1"));
    }
    await pool.query(`DELETE FROM "${schema}".scheduler_job_queue WHERE id = $1`, [gone]);
    let deleted = 0;
    for (const table of ["steps", "signals"] as const) {
      let cursor = "0";
      for (;;) {
        const batch = await store.durable.pruneOrphans(table, cursor, 2);
        deleted += batch.deleted;
        if (batch.lastJobId === null) break;
        cursor = batch.lastJobId;
      }
    }
    expect(deleted).toBe(2);
    expect(await store.durable.readStep(live, "s")).not.toBeNull();
    expect(await store.durable.readStep(gone, "s")).toBeNull();
  });

  it("the pruner's pass deletes machine rows and their events of jobs that are gone, and keeps the others", async () => {
    const live = await runningJob();
    const gone = await runningJob();
    for (const id of [live, gone]) {
      await pool.query(
        `INSERT INTO "${schema}".scheduler_machine (job_id, type, version, last_seq) VALUES ($1, 'm', '1', 2)`,
        [id],
      );
      await pool.query(
        `INSERT INTO "${schema}".scheduler_machine_event (job_id, seq, event)
         VALUES ($1, 1, '{"type":"A"}'), ($1, 2, '{"type":"B"}')`,
        [id],
      );
    }
    await pool.query(`DELETE FROM "${schema}".scheduler_job_queue WHERE id = $1`, [gone]);
    let deleted = 0;
    let cursor = "0";
    for (;;) {
      const batch = await store.durable.pruneOrphans("machines", cursor, 1);
      deleted += batch.deleted;
      if (batch.lastJobId === null) break;
      cursor = batch.lastJobId;
    }
    // The gone job's machine row and both its events; nothing of the live one.
    expect(deleted).toBe(3);
    const left = await pool.query<{ job_id: string; n: number }>(
      `SELECT job_id::text, count(*)::int AS n FROM (
         SELECT job_id FROM "${schema}".scheduler_machine WHERE job_id = ANY($1::bigint[])
         UNION ALL SELECT job_id FROM "${schema}".scheduler_machine_event WHERE job_id = ANY($1::bigint[])
       ) x GROUP BY job_id`,
      [[live, gone]],
    );
    expect(left.rows).toEqual([{ job_id: live, n: 3 }]);
  });
});
