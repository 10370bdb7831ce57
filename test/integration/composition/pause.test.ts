import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { JobNotFoundError, JobStateError, type Pawl, type PawlEvents } from "../../../src/index.js";
import { closeAll, setupSchema, startNodes, testPawl } from "../../helpers/pawl.js";
import { jobEvent, onAny, record } from "../../helpers/events.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let nodes: Pawl[] = [];

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("cpause"));
});
afterAll(() => cleanup());
afterEach(async () => {
  await closeAll(nodes);
  nodes = [];
});

/** Resolves after every node has polled `n` more times (the claim statements ran and saw what they saw). */
async function polls(ns: readonly Pawl[], n = 3): Promise<void> {
  await Promise.all(
    ns.map(async (node) => {
      for (let i = 0; i < n; i++) await node.events.next("poll");
    }),
  );
}

async function statuses(ids: readonly string[]): Promise<string[]> {
  const r = await pool.query<{ status: string }>(
    `SELECT status FROM "${schema}".scheduler_job_all WHERE id = ANY($1::bigint[]) ORDER BY id`,
    [ids],
  );
  return r.rows.map((x) => x.status);
}

async function holdTriggers(): Promise<number> {
  const r = await pool.query(
    `SELECT count(*)::int AS n FROM pg_trigger WHERE tgrelid = $1::regclass AND tgname LIKE 'pawl_hold_paused%'`,
    [`"${schema}".scheduler_job_queue`],
  );
  return r.rows[0].n as number;
}

describe("pausing one job", () => {
  it("keeps a paused job from being claimed by any node until it is resumed", async () => {
    // Enqueued and paused before any node runs, so no node can claim it first.
    const client = testPawl(schema);
    try {
      const job = await client.enqueue("pj.work", {});
      expect(await client.pauseJob(job.id)).toMatchObject({ status: "PAUSED", pausedBy: "job" });
      nodes = await startNodes(schema, 2, (node) => node.register("pj.work", async () => "done"));
      const started = record(nodes, "job:started", (e) => e.job.id === job.id);
      await polls(nodes);
      expect(started.n).toBe(0);
      expect((await client.getJob(job.id))?.status).toBe("PAUSED");
      const resumed = onAny(nodes, "job:succeeded", (e) => e.job.id === job.id);
      // Resumed through a node: it wakes its own poller (a client alone would wait for the nodes' polls).
      expect((await nodes[1]!.resumeJob(job.id)).status).toBe("PENDING");
      await resumed;
      started.stop();
    } finally {
      await client.close();
    }
  });

  it("refuses to pause a job that is not PENDING, or to resume one that is not paused", async () => {
    nodes = await startNodes(schema, 1, (node) => node.register("pj.quick", async () => 1));
    const jobSucceeded = jobEvent(nodes[0]!.events, "job:succeeded");
    const done = await nodes[0]!.enqueue("pj.quick", {});
    await jobSucceeded.for(done.id);
    const err = await nodes[0]!.pauseJob(done.id).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(JobStateError);
    expect(err).toMatchObject({ code: "INVALID_STATE", status: "SUCCEEDED" });
    await expect(nodes[0]!.resumeJob(done.id)).rejects.toMatchObject({
      code: "INVALID_STATE",
      status: "SUCCEEDED",
    });
    await expect(nodes[0]!.pauseJob("123456789")).rejects.toThrowError(JobNotFoundError);
  });
});

describe("pausing a queue or a job type", () => {
  it("holds every job of a paused queue on every node, including ones that become PENDING later", async () => {
    const events: PawlEvents["queue:paused"][] = [];
    let releaseFlaky: () => void = () => {};
    const flakyRunning = new Promise<void>((resolve) => {
      releaseFlaky = resolve;
    });
    let flakyStarted: () => void = () => {};
    const flakyIsRunning = new Promise<void>((resolve) => {
      flakyStarted = resolve;
    });
    let flakyCalls = 0;
    nodes = await startNodes(schema, 2, (node) => {
      node.register("pq.work", async () => "ok", { queue: "reports" });
      node.register("pq.other", async () => "ok");
      node.register(
        "pq.flaky",
        async () => {
          flakyCalls++;
          if (flakyCalls === 1) {
            flakyStarted();
            await flakyRunning;
            throw new Error("fails once, after the pause");
          }
          return "second time";
        },
        { queue: "reports", retry: { baseMs: 1, factor: 1, maxMs: 1, jitter: 0 } },
      );
      node.on("queue:paused", (e) => events.push(e));
    });
    const [a, b] = nodes as [Pawl, Pawl];
    const flaky = await a.enqueue("pq.flaky", {});
    await flakyIsRunning;

    const result = await a.pauseQueue("reports");
    expect(result).toEqual({ kind: "queue", name: "reports", changed: true, jobs: 0 });
    expect(events).toEqual([result]);
    expect(await holdTriggers()).toBe(2);
    expect(await b.pauseQueue("reports")).toMatchObject({ changed: false });

    const started = record(nodes, "job:started", (e) => e.job.queue === "reports");
    const held = await b.enqueueMany(Array.from({ length: 20 }, () => ({ type: "pq.work" })));
    // Counted from before the enqueue: the other queue's jobs may finish before the call returns.
    let othersDone = 0;
    const othersSucceeded = onAny(
      nodes,
      "job:succeeded",
      (e) => e.job.type === "pq.other" && ++othersDone === 5,
    );
    await b.enqueueMany(Array.from({ length: 5 }, () => ({ type: "pq.other" })));
    // The running job fails after the pause: its retry is held too.
    const retried = onAny(nodes, "job:retried", (e) => e.job.id === flaky.id);
    releaseFlaky();
    await retried;
    await othersSucceeded;
    await polls(nodes);
    expect(started.n).toBe(0);
    expect(new Set(await statuses(held.map((j) => j.id)))).toEqual(new Set(["PAUSED"]));
    expect(await b.getJob(flaky.id)).toMatchObject({ status: "PAUSED", pausedBy: "queue" });
    expect(await a.listPaused()).toEqual([
      { kind: "queue", name: "reports", pausedAt: expect.any(Date), pausedBy: `${schema}-n0`, jobs: 21 },
    ]);

    const resumedEvent = onAny(nodes, "queue:resumed");
    // Listen before resuming: the released jobs run within milliseconds.
    const allSucceeded = Promise.all(
      [...held, flaky].map((j) => onAny(nodes, "job:succeeded", (e) => e.job.id === j.id)),
    );
    const resumed = await b.resumeQueue("reports");
    expect(resumed).toEqual({ kind: "queue", name: "reports", changed: true, jobs: 21 });
    expect(await resumedEvent).toEqual(resumed);
    expect(await holdTriggers()).toBe(0);
    await allSucceeded;
    expect(await a.listPaused()).toEqual([]);
    started.stop();
  });

  it("pauses a job type; a job also held by its queue's pause stays PAUSED until both are resumed", async () => {
    nodes = await startNodes(schema, 1, (node) => {
      node.register("pt.work", async () => "ok", { queue: "pt" });
    });
    const [n] = nodes as [Pawl];
    await n.pauseJobType("pt.work");
    await n.pauseQueue("pt");
    const job = await n.enqueue("pt.work", {});
    expect(await n.getJob(job.id)).toMatchObject({ status: "PAUSED" });
    expect(await n.resumeJobType("pt.work")).toMatchObject({ changed: true, jobs: 0 });
    expect(await n.getJob(job.id)).toMatchObject({ status: "PAUSED", pausedBy: "queue" });
    expect(await holdTriggers()).toBe(2);
    await n.resumeQueue("pt");
    await n.events.next("job:succeeded", (e) => e.job.id === job.id);
    expect(await holdTriggers()).toBe(0);
  });

  it("releases a flow step into a paused queue as PAUSED", async () => {
    nodes = await startNodes(schema, 1, (node) => {
      node.register("pf.first", async () => "one");
      node.register("pf.second", async () => "two", { queue: "pf" });
    });
    const [n] = nodes as [Pawl];
    await n.pauseQueue("pf");
    const firstSucceeded = jobEvent(n.events, "job:succeeded");
    const secondSucceeded = jobEvent(n.events, "job:succeeded");
    const chain = await n.chain([{ type: "pf.first" }, { type: "pf.second" }]);
    await firstSucceeded.for(chain.jobIds[0]!);
    expect(await n.getJob(chain.jobIds[1]!)).toMatchObject({ status: "PAUSED", pausedBy: "queue" });
    await n.resumeQueue("pf");
    await secondSucceeded.for(chain.jobIds[1]!);
  });

  it("validates names", async () => {
    nodes = await startNodes(schema, 1, () => {});
    await expect(nodes[0]!.pauseQueue("bad name")).rejects.toMatchObject({ code: "INVALID_OPTION" });
    await expect(nodes[0]!.pauseJobType("")).rejects.toMatchObject({ code: "INVALID_JOB_TYPE" });
  });
});
