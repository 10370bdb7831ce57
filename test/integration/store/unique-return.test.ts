/**
 * The unique-key rule for jobs returning to PENDING (src/store/jobs/return-to-pending.ts): the live job wins.
 * A DEAD, PAUSED or parked job does not hold its key, so a duplicate can be enqueued meanwhile; when the
 * old job comes back (dlq.retry, a resume, a signal, a timed-out wait) it is CANCELED as a duplicate,
 * and every other job of the same call still moves.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import type { Pawl } from "../../../src/index.js";
import { SignalSweeper } from "../../../src/cluster/signal-sweeper.js";
import { parkJobs } from "../../../src/store/composition/signal-sql.js";
import { systemClock } from "../../../src/core/clock.js";
import { closeAll, setupSchema, startNodes, testPawl } from "../../helpers/pawl.js";
import { onAny, record } from "../../helpers/events.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let client: Pawl;
let nodes: Pawl[] = [];
const hour = 3_600_000;

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("uret"));
  client = testPawl(schema);
});
afterAll(async () => {
  await client.close();
  await cleanup();
});
afterEach(async () => {
  await closeAll(nodes);
  nodes = [];
});

const reason = (liveId: string) => `duplicate: unique key held by live job ${liveId}`;

/** Enqueues a job and takes it to RUNNING through the store's own claim (no node runs it). */
async function claimed(type: string, uniqueKey?: string): Promise<string> {
  const job = await client.enqueue(type, {}, uniqueKey === undefined ? {} : { uniqueKey });
  const [c] = await client.store.claim({
    nodeId: "n1",
    limit: 1,
    types: [type],
    boostIntervalMs: 0,
    withPayload: false,
  });
  expect(c?.id).toBe(job.id);
  return job.id;
}

/** A DEAD job, killed by the store's outcome statement. */
async function dead(type: string, uniqueKey?: string): Promise<string> {
  const id = await claimed(type, uniqueKey);
  await client.store.kill("n1", [{ id, error: { attempt: 1, name: "Error", message: "boom" } }]);
  return id;
}

/** A job parked for a signal by the store's park statement, due to time out after `timeoutMs`. */
async function parked(
  type: string,
  uniqueKey: string | undefined,
  timeoutMs: number | null,
): Promise<string> {
  const id = await claimed(type, uniqueKey);
  const held = await parkJobs(client.store.pool, client.store.tables, "n1", [{ id, timeoutMs }]);
  expect(held.has(id)).toBe(true);
  return id;
}

/** A live duplicate: PENDING, due in an hour, holding `uniqueKey`. */
async function live(type: string, uniqueKey: string, queue?: string): Promise<string> {
  const job = await client.enqueue(type, {}, { uniqueKey, delayMs: hour, ...(queue ? { queue } : {}) });
  expect(job.inserted).toBe(true);
  return job.id;
}

async function statusOf(id: string): Promise<{ status: string; cancelReason: string | null }> {
  const job = await client.getJob(id);
  return { status: job!.status, cancelReason: job!.cancelReason };
}

describe("dlq.retry", () => {
  it("retries the clean job and cancels the one whose key a live job holds, without throwing", async () => {
    const conflicting = await dead("ur.dlq", "dlq-1");
    const clean = await dead("ur.dlq", "dlq-2");
    const holder = await live("ur.dlq", "dlq-1");
    const events = record(client, "job:duplicate-canceled");

    const retried = await client.dlq.retry([conflicting, clean]);
    events.stop();

    expect(retried.map((j) => j.id)).toEqual([clean]);
    expect(retried[0]).toMatchObject({ status: "PENDING", attempts: 0 });
    expect(retried.duplicates).toEqual([
      { jobId: conflicting, type: "ur.dlq", queue: "default", uniqueKey: "dlq-1", liveJobId: holder },
    ]);
    // Existing callers see the plain array they always saw.
    expect(JSON.parse(JSON.stringify(retried))).toHaveLength(1);
    expect(await statusOf(conflicting)).toEqual({ status: "CANCELED", cancelReason: reason(holder) });
    expect(await statusOf(holder)).toMatchObject({ status: "PENDING" });
    expect(events.seen).toEqual([{ ...retried.duplicates[0], via: "dlq.retry" }]);
  });

  it("lets exactly one of two DEAD jobs with the same key come back: the lowest id", async () => {
    const first = await dead("ur.dlq2", "dlq-same");
    const second = await dead("ur.dlq2", "dlq-same");
    const retried = await client.dlq.retry([second, first]);
    expect(retried.map((j) => j.id)).toEqual([first]);
    expect(retried.duplicates.map((d) => [d.jobId, d.liveJobId])).toEqual([[second, first]]);
    expect(await statusOf(second)).toEqual({ status: "CANCELED", cancelReason: reason(first) });
  });
});

describe("resuming", () => {
  it("resumeJob of a paused job whose key is held returns it CANCELED, naming the live job", async () => {
    const paused = await client.enqueue("ur.job", {}, { uniqueKey: "rj-1" });
    await client.pauseJob(paused.id);
    const holder = await live("ur.job", "rj-1");
    const events = record(client, "job:duplicate-canceled");

    const job = await client.resumeJob(paused.id);
    events.stop();

    expect(job).toMatchObject({ id: paused.id, status: "CANCELED", cancelReason: reason(holder) });
    expect(events.seen).toMatchObject([{ jobId: paused.id, liveJobId: holder, via: "resume" }]);
    expect(await statusOf(holder)).toMatchObject({ status: "PENDING" });
  });

  for (const kind of ["queue", "type"] as const) {
    it(`resumes a ${kind} with one conflicting job among several: the others run`, async () => {
      const type = `ur.rule-${kind}`;
      const queue = `urq-${kind}`;
      nodes = await startNodes(schema, 1, (node) => node.register(type, async () => "ok", { queue }));
      const [node] = nodes as [Pawl];
      if (kind === "queue") await node.pauseQueue(queue);
      else await node.pauseJobType(type);
      // Enqueued into the pause: held PAUSED from the insert on, so none holds its key.
      const conflicting = await node.enqueue(type, {}, { uniqueKey: `rq-${kind}` });
      const others = [
        await node.enqueue(type, {}, { uniqueKey: `rq-${kind}-other` }),
        await node.enqueue(type, {}),
      ];
      expect((await node.getJob(conflicting.id))?.status).toBe("PAUSED");
      // The live holder is of another type and queue, due in an hour: no pause holds it, nothing runs it.
      const holder = await live("ur.holder", `rq-${kind}`);

      const ran = Promise.all(others.map((j) => onAny(nodes, "job:succeeded", (e) => e.job.id === j.id)));
      const result = kind === "queue" ? await node.resumeQueue(queue) : await node.resumeJobType(type);
      expect(result).toMatchObject({ changed: true, jobs: 2 });
      expect(result.duplicates).toMatchObject([{ jobId: conflicting.id, liveJobId: holder }]);
      await ran;
      expect(await statusOf(conflicting.id)).toEqual({ status: "CANCELED", cancelReason: reason(holder) });
      expect(await node.listPaused()).toEqual([]);
    });
  }

  it("resumes two paused jobs with the same key together: exactly one becomes live", async () => {
    await client.pauseQueue("urq-same");
    const a = await client.enqueue("ur.same", {}, { uniqueKey: "same-1", queue: "urq-same", delayMs: hour });
    const b = await client.enqueue("ur.same", {}, { uniqueKey: "same-1", queue: "urq-same", delayMs: hour });
    expect([a.inserted, b.inserted]).toEqual([true, true]);

    const result = await client.resumeQueue("urq-same");

    expect(result.jobs).toBe(1);
    expect(result.duplicates).toMatchObject([{ jobId: b.id, liveJobId: a.id }]);
    expect(await statusOf(a.id)).toMatchObject({ status: "PENDING" });
    expect(await statusOf(b.id)).toEqual({ status: "CANCELED", cancelReason: reason(a.id) });
    const liveRows = await pool.query(
      `SELECT id FROM "${schema}".scheduler_job_all WHERE unique_key = 'same-1' AND status IN ('PENDING', 'RUNNING')`,
    );
    expect(liveRows.rows).toEqual([{ id: a.id }]);
  });
});

describe("signals", () => {
  it("a signal to a parked job whose key is held cancels it and says so", async () => {
    const waiting = await parked("ur.sig", "sig-1", null);
    const holder = await live("ur.sig", "sig-1");
    const events = record(client, "job:duplicate-canceled");

    const result = await client.signal(waiting, { approved: true });
    events.stop();

    expect(result).toEqual({ jobId: waiting, status: "CANCELED", liveJobId: holder });
    expect(events.seen).toMatchObject([{ jobId: waiting, liveJobId: holder, via: "signal" }]);
    expect(await statusOf(waiting)).toEqual({ status: "CANCELED", cancelReason: reason(holder) });
  });

  it("the timeout sweep cancels a conflicting parked job and still times out the one due after it", async () => {
    const conflicting = await parked("ur.sweep", "sweep-1", 0);
    const after = await parked("ur.sweep", undefined, 1);
    const holder = await live("ur.sweep", "sweep-1");
    const sweeper = new SignalSweeper({
      deps: { store: client.store, config: client.config, hooks: undefined, events: client.events },
      clock: systemClock,
    });
    const events = record(client, "job:duplicate-canceled");

    const r = await sweeper.runOnce();
    events.stop();

    expect(r.timedOut.map((j) => j.id)).toContain(after);
    expect(r.timedOut.map((j) => j.id)).not.toContain(conflicting);
    expect(r.duplicates).toMatchObject([{ jobId: conflicting, liveJobId: holder }]);
    expect(events.seen).toMatchObject([{ jobId: conflicting, via: "signal-timeout" }]);
    expect(await statusOf(after)).toMatchObject({ status: "PENDING" });
    expect(await statusOf(conflicting)).toEqual({ status: "CANCELED", cancelReason: reason(holder) });
    // Nothing is left for the next pass to trip on.
    expect((await sweeper.runOnce()).duplicates).toEqual([]);
  });
});
