import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { JobNotFoundError, JobNotWaitingError, type Pawl, type SignalDelivery } from "../../../src/index.js";
import { closeAll, setupSchema, startNodes, testPawl } from "../../helpers/pawl.js";
import { jobEvent, onAny } from "../../helpers/events.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let nodes: Pawl[] = [];

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("csig"));
});
afterAll(() => cleanup());
afterEach(async () => {
  await closeAll(nodes);
  nodes = [];
});

describe("signals", () => {
  it("parks a waiting job with no slot held; a signal resumes it on another node with the payload", async () => {
    const deliveries: { node: string; delivery: SignalDelivery }[] = [];
    let runs = 0;
    const register = (node: Pawl) =>
      node.register("approval", async (_p: unknown, ctx) => {
        runs++;
        const delivery = await ctx.waitForSignal<{ approved: boolean }>();
        deliveries.push({ node: ctx.nodeId, delivery });
        return delivery.timedOut ? "timeout" : delivery.payload.approved;
      });
    const [a] = await startNodes(schema, 1, register, { nodeId: `${schema}-a` });
    nodes = [a!];
    const jobWaiting = jobEvent(a!.events, "job:waiting");
    const job = await a!.enqueue("approval", {});
    const waiting = await jobWaiting.for(job.id);
    expect(waiting.timeoutMs).toBeNull();
    expect(await a!.getJob(job.id)).toMatchObject({
      status: "WAITING",
      waitingFor: "signal",
      attempts: 0,
      pickedBy: null,
    });
    expect(a!.inspect()?.context.busy).toBe(0);
    await a!.close();

    // The node that ran it is gone; another one picks it up once signaled from a plain client. A fresh
    // node's claim cursors see a job that returns to PENDING under an old id at their next full pass
    // (docs/composition.md#claim-cursors), shortened here so the test stays short; the cap keeps the idle
    // node's full pass from backing off (docs/claim-cursors.md).
    const [b] = await startNodes(schema, 1, register, {
      nodeId: `${schema}-b`,
      claimCursorFullDiscoveryMs: 1000,
      claimCursorFullDiscoveryMaxMs: 1000,
    });
    nodes = [b!];
    const succeeded = b!.events.next("job:succeeded", (e) => e.job.id === job.id);
    const client = testPawl(schema);
    try {
      const signaled = await client.signal(job.id, { approved: true });
      expect(signaled).toEqual({ jobId: job.id, status: "PENDING" });
    } finally {
      await client.close();
    }
    await succeeded;
    expect(runs).toBe(2);
    expect(deliveries).toHaveLength(1);
    expect(deliveries[0]!.node).toBe(`${schema}-b`);
    expect(deliveries[0]!.delivery).toMatchObject({ timedOut: false, payload: { approved: true } });
    expect(await b!.getJob(job.id)).toMatchObject({ status: "SUCCEEDED", result: true, attempts: 1 });
  });

  it("times a wait out: the job runs again with no payload", async () => {
    const seen: SignalDelivery[] = [];
    nodes = await startNodes(schema, 2, (node) =>
      node.register("timeboxed", async (_p: unknown, ctx) => {
        const d = await ctx.waitForSignal({ timeoutMs: 150 });
        seen.push(d);
        expect(await ctx.receivedSignal()).toEqual(d);
        return d.timedOut;
      }),
    );
    // Listen for every step before enqueuing: the 150 ms timeout leaves little room on a loaded machine.
    const waiting = onAny(nodes, "job:waiting", (e) => e.job.type === "timeboxed" && e.timeoutMs === 150);
    const timedOut = onAny(nodes, "job:signal-timeout", () => true);
    const succeeded = onAny(nodes, "job:succeeded", (e) => e.job.type === "timeboxed");
    const job = await nodes[0]!.enqueue("timeboxed", {});
    expect((await waiting).job.id).toBe(job.id);
    expect((await timedOut).jobId).toBe(job.id);
    expect((await succeeded).job.id).toBe(job.id);
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ timedOut: true });
    expect((await nodes[0]!.getJob(job.id))?.result).toBe(true);
  });

  it("wakes an idle sweep for the deadline of a job its node parks", async () => {
    // With no deadline parked anywhere the sweep waits its idle interval (10 s). Parking a job with a
    // timeout brings this node's next sweep forward to the deadline, so the timeout fires well before
    // the idle interval would end (the wait below gives up at 5 s).
    nodes = await startNodes(schema, 1, (node) =>
      node.register(
        "idle-timebox",
        async (_p: unknown, ctx) => (await ctx.waitForSignal({ timeoutMs: 200 })).timedOut,
      ),
    );
    const timedOut = onAny(nodes, "job:signal-timeout", () => true, 5000);
    const job = await nodes[0]!.enqueue("idle-timebox", {});
    expect((await timedOut).jobId).toBe(job.id);
  });

  it("parks again on a second wait in the same run, and each run gets its own signal", async () => {
    const steps: string[] = [];
    nodes = await startNodes(schema, 1, (node) =>
      node.register("two-step", async (p: { step?: number }, ctx) => {
        const first = await ctx.waitForSignal<string>();
        if (first.timedOut) return "timeout";
        steps.push(first.payload);
        if (first.payload === "one") await ctx.waitForSignal(); // parks again
        return steps.join(",");
      }),
    );
    const jobWaiting = jobEvent(nodes[0]!.events, "job:waiting");
    const jobSucceeded = jobEvent(nodes[0]!.events, "job:succeeded");
    const job = await nodes[0]!.enqueue("two-step", {});
    await jobWaiting.for(job.id);
    const second = nodes[0]!.events.next("job:waiting", (e) => e.job.id === job.id);
    await nodes[0]!.signal(job.id, "one");
    await second;
    await nodes[0]!.signal(job.id, "two");
    await jobSucceeded.for(job.id);
    expect(await nodes[0]!.getJob(job.id)).toMatchObject({ status: "SUCCEEDED", result: "one,two" });
  });

  it("refuses a signal to an unknown, finished, not-yet-waiting or flow-waiting job with a typed error", async () => {
    nodes = await startNodes(schema, 1, (node) => node.register("quick", async () => "done"));
    await expect(nodes[0]!.signal("987654321", {})).rejects.toThrowError(JobNotFoundError);
    const jobSucceeded = jobEvent(nodes[0]!.events, "job:succeeded");
    const finished = await nodes[0]!.enqueue("quick", {});
    await jobSucceeded.for(finished.id);
    const err = await nodes[0]!.signal(finished.id, {}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(JobNotWaitingError);
    expect(err).toMatchObject({ code: "NOT_WAITING", status: "SUCCEEDED", jobId: finished.id });
    const pending = await nodes[0]!.enqueue("nobody.runs.this", {});
    await expect(nodes[0]!.signal(pending.id, {})).rejects.toMatchObject({
      code: "NOT_WAITING",
      status: "PENDING",
    });
    const chain = await nodes[0]!.chain([{ type: "nobody.runs.this" }, { type: "nobody.runs.this" }]);
    await expect(nodes[0]!.signal(chain.jobIds[1]!, {})).rejects.toMatchObject({
      code: "NOT_WAITING",
      status: "WAITING (for its flow dependencies)",
    });
    await expect(nodes[0]!.signal("not-an-id", {})).rejects.toMatchObject({ code: "INVALID_OPTION" });
    const rows = await pool.query(
      `SELECT count(*)::int AS n FROM "${schema}".scheduler_job_all WHERE signal_state IS NOT NULL AND id = ANY($1::bigint[])`,
      [[finished.id, pending.id, ...chain.jobIds]],
    );
    expect(rows.rows[0].n).toBe(0);
  });
});
