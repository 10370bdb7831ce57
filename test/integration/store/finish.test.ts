import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { type PawlClient } from "../../../src/index.js";
import { JobStore } from "../../../src/store/postgres-job-store.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let pawl: PawlClient;
let store: JobStore;

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("fin"));
  pawl = testPawl(schema);
  store = new JobStore(pool, schema);
});
afterAll(async () => {
  await pawl.close();
  await cleanup();
});

async function claimOne(type: string, node = "n1") {
  const [job] = await store.claim({
    nodeId: node,
    limit: 1,
    types: [type],
    boostIntervalMs: 0,
    withPayload: true,
  });
  if (!job) throw new Error(`nothing to claim for ${type}`);
  return job;
}
const err = (attempt: number, message = "boom") => ({ attempt, name: "Error", message });

describe("ending attempts", () => {
  it("completes in a batch and stores results", async () => {
    const jobs = await pawl.enqueueMany([{ type: "ok" }, { type: "ok" }]);
    const claimed = await store.claim({
      nodeId: "n1",
      limit: 2,
      types: ["ok"],
      boostIntervalMs: 0,
      withPayload: false,
    });
    const done = await store.complete(
      "n1",
      claimed.map((c, i) => ({ id: c.id, resultJson: JSON.stringify({ i }) })),
    );
    expect(done.size).toBe(2);
    for (const j of jobs) {
      const read = await pawl.getJob(j.id);
      expect(read?.status).toBe("SUCCEEDED");
      expect(read?.finishedAt).toBeInstanceOf(Date);
    }
  });

  it("retries with backoff, counting the attempt and recording the error", async () => {
    const job = await pawl.enqueue("flaky", {}, { maxAttempts: 3 });
    const c = await claimOne("flaky");
    expect(c.attempt).toBe(1);
    const before = await store.databaseTime();
    expect((await store.retry("n1", [{ id: c.id, delayMs: 30_000, error: err(1) }])).has(c.id)).toBe(true);
    const read = await pawl.getJob(job.id);
    expect(read).toMatchObject({ status: "PENDING", attempts: 1, pickedBy: null, lastError: "boom" });
    expect(read!.errors[0]).toMatchObject({ attempt: 1, name: "Error", message: "boom" });
    expect(typeof read!.errors[0]!.at).toBe("string");
    expect(read!.scheduledTime.getTime() - before.getTime()).toBeGreaterThanOrEqual(29_000);
    // Not due yet: nothing to claim.
    expect(
      await store.claim({ nodeId: "n1", limit: 1, types: ["flaky"], boostIntervalMs: 0, withPayload: false }),
    ).toEqual([]);
    // Once due, the next claim is attempt 2.
    await pool.query(`UPDATE "${schema}".scheduler_job_queue SET scheduled_time = now() WHERE id = $1`, [
      job.id,
    ]);
    expect((await claimOne("flaky")).attempt).toBe(2);
  });

  it("sends a non-retryable failure straight to DEAD, then DLQ retry resets it", async () => {
    const job = await pawl.enqueue("fatal", {}, { maxAttempts: 10 });
    const c = await claimOne("fatal");
    await store.kill("n1", [
      { id: c.id, error: { attempt: 1, name: "NonRetryableError", message: "bad input" } },
    ]);
    expect(await pawl.getJob(job.id)).toMatchObject({ status: "DEAD", attempts: 1, lastError: "bad input" });
    const dead = await pawl.dlq.list({ type: "fatal" });
    expect(dead.map((d) => d.id)).toEqual([job.id]);
    const retried = await pawl.dlq.retry(job.id);
    expect(retried.map((r) => r.id)).toEqual([job.id]);
    expect(await pawl.getJob(job.id)).toMatchObject({
      status: "PENDING",
      attempts: 0,
      lastError: "bad input",
    });
    expect(await pawl.dlq.list({ type: "fatal" })).toEqual([]);
    expect(await pawl.dlq.retry(job.id)).toEqual([]); // not DEAD any more
  });

  it("purges the dead letter queue", async () => {
    const job = await pawl.enqueue("purged", {});
    const c = await claimOne("purged");
    await store.kill("n1", [{ id: c.id, error: err(1) }]);
    expect(await pawl.dlq.purge({ type: "purged" })).toBe(1);
    expect(await pawl.getJob(job.id)).toBeNull();
  });

  it("snoozes without counting the attempt", async () => {
    const job = await pawl.enqueue("snooze", {});
    const c = await claimOne("snooze");
    expect(c.attempt).toBe(1);
    await store.reschedule("n1", [{ id: c.id, delayMs: 0 }]);
    expect(await pawl.getJob(job.id)).toMatchObject({ status: "PENDING", attempts: 0, errors: [] });
    expect((await claimOne("snooze")).attempt).toBe(1);
  });

  it("refuses to complete a job this node no longer holds", async () => {
    const job = await pawl.enqueue("stolen", {});
    const c = await claimOne("stolen", "n1");
    // Another node recovered it (as orphan recovery would) and claimed it again.
    await pool.query(
      `UPDATE "${schema}".scheduler_job_queue SET status = 'PENDING', picked_by = NULL WHERE id = $1`,
      [c.id],
    );
    await claimOne("stolen", "n2");
    expect((await store.complete("n1", [{ id: c.id, resultJson: null }])).size).toBe(0);
    expect((await store.retry("n1", [{ id: c.id, delayMs: 0, error: err(1) }])).size).toBe(0);
    expect((await store.kill("n1", [{ id: c.id, error: err(1) }])).size).toBe(0);
    expect((await store.reschedule("n1", [{ id: c.id, delayMs: 0 }])).size).toBe(0);
    expect(await pawl.getJob(job.id)).toMatchObject({ status: "RUNNING", pickedBy: "n2" });
    // And a running job canceled in the store is not overwritten by its completion.
    const r = await pawl.cancel(job.id);
    expect(r.outcome).toBe("running-canceled");
    expect((await store.complete("n2", [{ id: c.id, resultJson: "1" }])).size).toBe(0);
    expect((await pawl.getJob(job.id))?.status).toBe("CANCELED");
  });

  it("keeps only the newest 20 errors", async () => {
    const job = await pawl.enqueue("many-errors", {}, { maxAttempts: 100 });
    for (let i = 1; i <= 25; i++) {
      const c = await claimOne("many-errors");
      await store.retry("n1", [{ id: c.id, delayMs: 0, error: err(i, `e${i}`) }]);
    }
    const read = await pawl.getJob(job.id);
    expect(read!.errors).toHaveLength(20);
    expect(read!.errors[0]!.message).toBe("e6");
    expect(read!.lastError).toBe("e25");
  });
});
