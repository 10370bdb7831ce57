/**
 * Finished rows leave the live table (issue 16, migration 0005): where a job that ended is, that every
 * read still finds it, that dlq.retry brings it back under its id, that pruning deletes from the finished
 * table, and the `keepSucceeded: false` mode.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { JobStore, type JobStatus, type Pawl, type PawlClient } from "../../../src/index.js";
import { jobTableColumns } from "../../../src/store/jobs/finished-sql.js";
import { pruneBatch } from "../../../src/store/cluster/prune-sql.js";
import { tablesFor } from "../../../src/db/sql.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let pawl: PawlClient;
let store: JobStore;
let node: Pawl | null = null;

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("fjobs"));
  pawl = testPawl(schema);
  store = new JobStore(pool, schema);
});
afterEach(async () => {
  await node?.close();
  node = null;
});
afterAll(async () => {
  await pawl.close();
  await cleanup();
});

/** Which table holds each id: `live`, `finished`, or null (neither). */
async function where(ids: readonly string[]): Promise<Record<string, "live" | "finished" | null>> {
  const { rows } = await pool.query<{ id: string; live: boolean; finished: boolean }>(
    `SELECT i::text AS id,
            EXISTS (SELECT 1 FROM "${schema}".scheduler_job_queue WHERE id = i) AS live,
            EXISTS (SELECT 1 FROM "${schema}".scheduler_job_finished WHERE id = i) AS finished
     FROM unnest($1::bigint[]) AS i`,
    [ids],
  );
  return Object.fromEntries(
    rows.map((r) => {
      if (r.live && r.finished) throw new Error(`job ${r.id} is in both tables`);
      return [r.id, r.live ? "live" : r.finished ? "finished" : null];
    }),
  );
}

async function claim(type: string, limit = 10) {
  return store.claim({ nodeId: "n1", limit, types: [type], boostIntervalMs: 0, withPayload: true });
}

describe("finished rows", () => {
  it("both job tables have the columns the moves list, in the same order", async () => {
    const cols = async (table: string) =>
      (
        await pool.query<{ attname: string }>(
          `SELECT attname FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped
           ORDER BY attnum`,
          [`"${schema}".${table}`],
        )
      ).rows.map((r) => r.attname);
    expect(await cols("scheduler_job_queue")).toEqual([...jobTableColumns]);
    // The finished table has one more: which partition a row goes to (migration 0016). Columns added to
    // both tables after it (0018's parent_job_id) come after it there; the moves name every column.
    const since0016 = ["parent_job_id"];
    expect(await cols("scheduler_job_finished")).toEqual([
      ...jobTableColumns.filter((c) => !since0016.includes(c)),
      "time_partitioned",
      ...since0016,
    ]);
  });

  it("a completed or killed job moves to the finished table and reads back with its result and errors", async () => {
    const [a, b] = await pawl.enqueueMany([{ type: "fin.a" }, { type: "fin.a" }]);
    const claimed = await claim("fin.a");
    expect(claimed.map((j) => j.id).sort()).toEqual([a!.id, b!.id].sort());
    expect(await store.complete("n1", [{ id: a!.id, resultJson: '{"ok":1}' }])).toEqual(new Set([a!.id]));
    expect(
      await store.kill("n1", [{ id: b!.id, error: { attempt: 1, name: "Error", message: "boom" } }]),
    ).toEqual(new Set([b!.id]));
    expect(await where([a!.id, b!.id])).toEqual({ [a!.id]: "finished", [b!.id]: "finished" });

    expect(await pawl.getJob(a!.id)).toMatchObject({ status: "SUCCEEDED", result: { ok: 1 } });
    expect(await pawl.getJob(b!.id)).toMatchObject({ status: "DEAD", lastError: "boom" });
    const listed = await pawl.listJobs({ type: "fin.a" });
    expect(listed.map((j) => [j.id, j.status])).toEqual([
      [b!.id, "DEAD"],
      [a!.id, "SUCCEEDED"],
    ]);
    // A status filter reads the table that holds the status, or both for a mix.
    const c = await pawl.enqueue("fin.a", {});
    const ids = async (status: JobStatus | JobStatus[]) =>
      (await pawl.listJobs({ type: "fin.a", status })).map((j) => j.id);
    expect(await ids("DEAD")).toEqual([b!.id]);
    expect(await ids(["SUCCEEDED", "DEAD"])).toEqual([b!.id, a!.id]);
    expect(await ids("PENDING")).toEqual([c.id]);
    expect(await ids(["PENDING", "SUCCEEDED"])).toEqual([c.id, a!.id]);
    await pawl.cancel(c.id);
    expect((await pawl.dlq.list({ type: "fin.a" })).map((j) => j.id)).toEqual([b!.id]);
    expect(await store.counts()).toContainEqual({ status: "DEAD", type: "fin.a", count: 1 });

    // A second outcome for the same attempt is refused: the row is no longer RUNNING under n1.
    expect(await store.complete("n1", [{ id: b!.id, resultJson: null }])).toEqual(new Set());
    expect(await pawl.getJob(b!.id)).toMatchObject({ status: "DEAD" });
  });

  it("cancel moves a PENDING job; canceling it again finds it final", async () => {
    const job = await pawl.enqueue("fin.cancel", { x: 1 });
    expect(await pawl.cancel(job.id, "not needed")).toMatchObject({
      outcome: "canceled",
      previousStatus: "PENDING",
      job: { id: job.id, status: "CANCELED", cancelReason: "not needed", payload: { x: 1 } },
    });
    expect(await where([job.id])).toEqual({ [job.id]: "finished" });
    expect(await pawl.cancel(job.id)).toMatchObject({
      outcome: "already-final",
      previousStatus: "CANCELED",
      job: { status: "CANCELED" },
    });
    expect(await store.canceledAmong([job.id])).toEqual(new Set([job.id]));
  });

  it("dlq.retry brings a DEAD job back under its id; a duplicate of a live key stays finished, CANCELED", async () => {
    const [a, b] = await pawl.enqueueMany([
      { type: "fin.dlq", uniqueKey: "fin-k1" },
      { type: "fin.dlq", uniqueKey: "fin-k2" },
    ]);
    await claim("fin.dlq");
    const error = { attempt: 1, name: "Error", message: "no" };
    await store.kill("n1", [
      { id: a!.id, error },
      { id: b!.id, error },
    ]);
    // A live job takes b's key meanwhile: b cannot come back.
    const live = await pawl.enqueue("fin.dlq", {}, { uniqueKey: "fin-k2" });
    expect(live.id).not.toBe(b!.id);

    const retried = await pawl.dlq.retry([a!.id, b!.id]);
    expect(retried.map((j) => [j.id, j.status, j.attempts])).toEqual([[a!.id, "PENDING", 0]]);
    expect(retried.duplicates).toEqual([
      { jobId: b!.id, type: "fin.dlq", queue: "default", uniqueKey: "fin-k2", liveJobId: live.id },
    ]);
    expect(await where([a!.id, b!.id, live.id])).toEqual({
      [a!.id]: "live",
      [b!.id]: "finished",
      [live.id]: "live",
    });
    expect(await pawl.getJob(a!.id)).toMatchObject({ status: "PENDING", errors: [{ message: "no" }] });
    expect(await pawl.getJob(b!.id)).toMatchObject({
      status: "CANCELED",
      cancelReason: `duplicate: unique key held by live job ${live.id}`,
    });
    // The returned job holds its key again: an enqueue with it gets that job back.
    expect(await pawl.enqueue("fin.dlq", {}, { uniqueKey: "fin-k1" })).toMatchObject({
      id: a!.id,
      inserted: false,
    });
    // And it runs again like any other.
    expect((await claim("fin.dlq")).map((j) => j.id).sort()).toEqual([a!.id, live.id].sort());
  });

  it("pruning deletes finished rows from the finished table only", async () => {
    const t = tablesFor(schema);
    const [done, pending] = await pawl.enqueueMany([{ type: "fin.prune" }, { type: "fin.prune.later" }]);
    await claim("fin.prune");
    await store.complete("n1", [{ id: done!.id, resultJson: null }]);
    const later = new Date(Date.now() + 3_600_000);
    expect(await pruneBatch(pool, t, "SUCCEEDED", 60_000, 100, later)).toBeGreaterThanOrEqual(1);
    expect(await where([done!.id, pending!.id])).toEqual({ [done!.id]: null, [pending!.id]: "live" });
    expect(await pawl.getJob(done!.id)).toBeNull();
  });
});

describe("keepSucceeded: false", () => {
  it("is validated", () => {
    expect(() => testPawl(schema, { keepSucceeded: "no" as unknown as boolean })).toThrowError(
      /invalid keepSucceeded/,
    );
  });

  it("deletes a succeeded job's row, keeps DEAD ones, and a flow still counts its members and completes", async () => {
    const ran: string[] = [];
    node = testPawl(schema, { keepSucceeded: false, concurrency: 4 });
    node.register("del.ok", async () => "kept nowhere");
    node.register("del.fail", async () => {
      throw new Error("always");
    });
    node.register("del.row", async (p: { n: number }) => p.n);
    node.register("del.done", async (p: { succeeded: number; total: number }) => {
      ran.push(`${p.succeeded}/${p.total}`);
    });
    const ok = await node.enqueue("del.ok");
    const fail = await node.enqueue("del.fail", {}, { maxAttempts: 1 });
    const okDone = node.events.next("job:succeeded", (e) => e.job.id === ok.id);
    const failDone = node.events.next("job:dead", (e) => e.job.id === fail.id);
    const batch = await node.batch({
      type: "del.row",
      items: [{ n: 1 }, { n: 2 }, { n: 3 }],
      onComplete: { type: "del.done" },
    });
    const flowDone = node.events.next("job:succeeded", (e) => e.job.id === batch.completionJobId);
    await node.start();
    await Promise.all([okDone, failDone, flowDone]);

    expect(await where([ok.id, fail.id])).toEqual({ [ok.id]: null, [fail.id]: "finished" });
    expect(await node.getJob(ok.id)).toBeNull();
    expect(await node.getJob(fail.id)).toMatchObject({ status: "DEAD" });
    expect(ran).toEqual(["3/3"]);
    expect(await node.getFlow(batch.flowId)).toMatchObject({ succeeded: 3, total: 3, state: "succeeded" });
    // Flow rows are kept (the flow's members and its completion job), so getFlow can list them.
    expect(await node.getJob(batch.completionJobId!)).toMatchObject({ status: "SUCCEEDED" });
  });
});
