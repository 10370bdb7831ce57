import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import {
  FlowNotFoundError,
  NonRetryableError,
  ValidationError,
  type FlowCompletion,
  type Pawl,
} from "../../../src/index.js";
import { closeAll, setupSchema, startNodes } from "../../helpers/pawl.js";
import { jobEvent, onAny } from "../../helpers/events.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let nodes: Pawl[] = [];

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("cflow"));
});
afterAll(() => cleanup());
afterEach(async () => {
  await closeAll(nodes);
  nodes = [];
});

const fast = { retry: { baseMs: 1, factor: 1, maxMs: 1, jitter: 0 } };

async function jobCount(flowId: string): Promise<number> {
  const r = await pool.query(
    `SELECT count(*)::int AS n FROM "${schema}".scheduler_job_all WHERE flow_id = $1`,
    [flowId],
  );
  return r.rows[0].n as number;
}

describe("chains", () => {
  it("runs steps in order across two nodes, each reading its predecessor's result", async () => {
    const order: string[] = [];
    const seen: unknown[] = [];
    // The first step waits until the test has read the chain's initial state (it is picked up in
    // milliseconds, before the reads below would otherwise run).
    let readDone: () => void = () => {};
    const statesRead = new Promise<void>((resolve) => (readDone = resolve));
    nodes = await startNodes(schema, 2, (node) => {
      node.register("chain.step", async (payload: { label: string }, ctx) => {
        if (payload.label === "a") await statesRead;
        const flow = await ctx.flow();
        seen.push(flow?.previous);
        order.push(payload.label);
        return { label: payload.label, n: order.length };
      });
      node.register("chain.done", async (p: FlowCompletion) => p);
    });
    const chain = await nodes[0]!.chain(
      [
        { type: "chain.step", payload: { label: "a" } },
        { type: "chain.step", payload: { label: "b" }, name: "second" },
        { type: "chain.step", payload: { label: "c" } },
      ],
      { name: "abc", onComplete: { type: "chain.done", payload: { tag: 7 } } },
    );
    expect(chain.kind).toBe("chain");
    expect(chain.jobIds).toHaveLength(3);
    const finished = onAny(nodes, "job:succeeded", (e) => e.job.id === chain.completionJobId);
    const [first, second, third] = await Promise.all(chain.jobIds.map((id) => nodes[0]!.getJob(id)));
    readDone();
    // Runnable: claimed already, or about to be.
    expect(["PENDING", "RUNNING"]).toContain(first?.status);
    expect(first).toMatchObject({ flowId: chain.flowId, flowStep: "0" });
    expect(second).toMatchObject({ status: "WAITING", waitingFor: "dependencies", flowStep: "second" });
    expect(third).toMatchObject({ status: "WAITING", flowStep: "2" });

    const done = await finished;
    expect(done.job.type).toBe("chain.done");
    expect(order).toEqual(["a", "b", "c"]);
    expect(seen).toEqual([undefined, { label: "a", n: 1 }, { label: "b", n: 2 }]);
    const completion = await nodes[0]!.getJob(chain.completionJobId!);
    expect(completion?.payload).toEqual({
      flowId: chain.flowId,
      kind: "chain",
      name: "abc",
      total: 3,
      succeeded: 3,
      dead: 0,
      canceled: 0,
      payload: { tag: 7 },
    });
    const flow = await nodes[1]!.getFlow(chain.flowId);
    expect(flow).toMatchObject({ kind: "chain", state: "succeeded", total: 3, succeeded: 3, remaining: 0 });
    expect(flow?.completedAt).toBeInstanceOf(Date);
    expect(flow?.members.map((m) => m.status)).toEqual(["SUCCEEDED", "SUCCEEDED", "SUCCEEDED"]);
  });

  it("stops at a step that ends DEAD: the rest is CANCELED with the reason, and the completion counts it", async () => {
    const ran: string[] = [];
    nodes = await startNodes(schema, 2, (node) => {
      node.register(
        "stop.step",
        async (p: { label: string; fail?: boolean }) => {
          ran.push(p.label);
          if (p.fail) throw new NonRetryableError("step b is broken");
          return p.label;
        },
        fast,
      );
      node.register("stop.done", async () => "ok");
    });
    const completed = jobEvent(nodes, "job:succeeded");
    const chain = await nodes[1]!.chain(
      [
        { type: "stop.step", payload: { label: "a" } },
        { type: "stop.step", payload: { label: "b", fail: true } },
        { type: "stop.step", payload: { label: "c" } },
        { type: "stop.step", payload: { label: "d" } },
      ],
      { onComplete: { type: "stop.done" } },
    );
    await completed.for(chain.completionJobId!);
    expect(ran).toEqual(["a", "b"]);
    const jobs = await Promise.all(chain.jobIds.map((id) => nodes[0]!.getJob(id)));
    expect(jobs.map((j) => j?.status)).toEqual(["SUCCEEDED", "DEAD", "CANCELED", "CANCELED"]);
    expect(jobs[2]?.cancelReason).toBe(`flow ${chain.flowId} stopped: step 1 ended DEAD`);
    const completion = await nodes[0]!.getJob(chain.completionJobId!);
    expect(completion?.payload).toMatchObject({ total: 4, succeeded: 1, dead: 1, canceled: 2 });
    expect(await nodes[0]!.getFlow(chain.flowId)).toMatchObject({
      state: "failed",
      succeeded: 1,
      dead: 1,
      canceled: 2,
    });
  });

  it("stops when a waiting step is canceled by hand", async () => {
    nodes = await startNodes(schema, 1, (node) => {
      node.register("hand.step", async () => "ok");
    });
    // Not started: the first step stays PENDING while the second is canceled.
    const chain = await nodes[0]!.chain([
      { type: "hand.other" },
      { type: "hand.step" },
      { type: "hand.step" },
    ]);
    const canceled = await nodes[0]!.cancel(chain.jobIds[1]!, "not needed");
    expect(canceled).toMatchObject({ outcome: "canceled", previousStatus: "WAITING" });
    expect((await nodes[0]!.getJob(chain.jobIds[2]!))?.status).toBe("CANCELED");
    expect(await nodes[0]!.getFlow(chain.flowId)).toMatchObject({
      canceled: 2,
      remaining: 1,
      state: "running",
    });
  });
});

describe("workflows", () => {
  it("runs a diamond A -> (B, C) -> D: D runs once, after both, with both results", async () => {
    const runs: Record<string, number> = {};
    let dInputs: unknown = null;
    let bothDoneBeforeD = false;
    const finished = new Set<string>();
    nodes = await startNodes(schema, 2, (node) => {
      node.register("dia.step", async (p: { name: string }, ctx) => {
        runs[p.name] = (runs[p.name] ?? 0) + 1;
        if (p.name === "D") {
          bothDoneBeforeD = finished.has("B") && finished.has("C");
          dInputs = (await ctx.flow())?.results;
        }
        finished.add(p.name);
        return `${p.name}!`;
      });
    });
    const succeeded = jobEvent(nodes, "job:succeeded");
    const wf = await nodes[0]!.workflow({
      name: "diamond",
      jobs: [
        { name: "D", type: "dia.step", payload: { name: "D" }, dependsOn: ["B", "C"] },
        { name: "B", type: "dia.step", payload: { name: "B" }, dependsOn: ["A"] },
        { name: "C", type: "dia.step", payload: { name: "C" }, dependsOn: ["A"] },
        { name: "A", type: "dia.step", payload: { name: "A" } },
      ],
    });
    const d = wf.jobIds[0]!;
    const dDone = succeeded.for(d);
    // D waits until B and C have run. The started nodes may already have got that far by this read, so the
    // check is the invariant, not a moment: D reads WAITING, or both of its dependencies have finished.
    const dStatus = (await nodes[0]!.getJob(d))?.status;
    if (dStatus !== "WAITING") expect([...finished].sort()).toEqual(expect.arrayContaining(["B", "C"]));
    await dDone;
    expect(runs).toEqual({ A: 1, B: 1, C: 1, D: 1 });
    expect(bothDoneBeforeD).toBe(true);
    expect(dInputs).toEqual({ B: "B!", C: "C!" });
    expect(await nodes[0]!.getFlow(wf.flowId)).toMatchObject({
      kind: "workflow",
      state: "succeeded",
      succeeded: 4,
    });
  });

  it("rejects a cycle, an unknown dependency and a duplicate name, writing nothing", async () => {
    nodes = await startNodes(schema, 1, () => {});
    const before = await pool.query(`SELECT (SELECT count(*) FROM "${schema}".scheduler_flow)::int AS f,
      (SELECT count(*) FROM "${schema}".scheduler_job_all)::int AS j`);
    const cycle = nodes[0]!.workflow({
      jobs: [
        { name: "a", type: "x", dependsOn: ["c"] },
        { name: "b", type: "x", dependsOn: ["a"] },
        { name: "c", type: "x", dependsOn: ["b"] },
        { name: "d", type: "x" },
      ],
    });
    await expect(cycle).rejects.toThrowError(ValidationError);
    await expect(cycle).rejects.toMatchObject({
      code: "INVALID_FLOW",
      message: expect.stringMatching(/cycle: a -> c -> b -> a|cycle: /),
    });
    await expect(
      nodes[0]!.workflow({ jobs: [{ name: "a", type: "x", dependsOn: ["zz"] }] }),
    ).rejects.toMatchObject({
      code: "INVALID_FLOW",
      message: 'workflow job "a" depends on "zz", which is not a job of this workflow',
    });
    await expect(
      nodes[0]!.workflow({
        jobs: [
          { name: "a", type: "x" },
          { name: "a", type: "y" },
        ],
      }),
    ).rejects.toMatchObject({ code: "INVALID_FLOW" });
    await expect(
      nodes[0]!.workflow({ jobs: [{ name: "a", type: "x", dependsOn: ["a"] }] }),
    ).rejects.toMatchObject({
      message: 'workflow job "a" depends on itself',
    });
    const after = await pool.query(`SELECT (SELECT count(*) FROM "${schema}".scheduler_flow)::int AS f,
      (SELECT count(*) FROM "${schema}".scheduler_job_all)::int AS j`);
    expect(after.rows[0]).toEqual(before.rows[0]);
  });

  it("with failurePolicy continue, runs the dependents of a failed job with the failure recorded", async () => {
    let seen: unknown = null;
    nodes = await startNodes(schema, 1, (node) => {
      node.register("cont.fail", async () => {
        throw new NonRetryableError("nope");
      });
      node.register("cont.ok", async () => "fine");
      node.register("cont.last", async (_p, ctx) => {
        const f = await ctx.flow();
        seen = { results: f?.results, failed: f?.failed };
        return "last";
      });
    });
    const succeeded = jobEvent(nodes, "job:succeeded");
    const wf = await nodes[0]!.workflow({
      failurePolicy: "continue",
      jobs: [
        { name: "bad", type: "cont.fail" },
        { name: "good", type: "cont.ok" },
        { name: "last", type: "cont.last", dependsOn: ["bad", "good"] },
      ],
    });
    await succeeded.for(wf.jobIds[2]!);
    expect(seen).toEqual({ results: { good: "fine" }, failed: { bad: "DEAD" } });
    expect(await nodes[0]!.getFlow(wf.flowId)).toMatchObject({
      failurePolicy: "continue",
      state: "failed",
      dead: 1,
      succeeded: 2,
    });
  });
});

describe("batches", () => {
  it("counts children by outcome and enqueues the completion job once, with the counts", async () => {
    const completions: FlowCompletion<{ file: string }>[] = [];
    nodes = await startNodes(schema, 2, (node) => {
      node.register(
        "small.row",
        async (p: { n: number }) => {
          if (p.n % 5 === 0) throw new NonRetryableError("bad row");
          return p.n;
        },
        fast,
      );
      node.register("small.done", async (p: FlowCompletion<{ file: string }>) => {
        completions.push(p);
      });
    });
    const items = Array.from({ length: 50 }, (_, n) => ({ n }));
    const succeeded = jobEvent(nodes, "job:succeeded");
    const batch = await nodes[0]!.batch({
      type: "small.row",
      items,
      onComplete: { type: "small.done", payload: { file: "f.csv" } },
    });
    expect(batch).toMatchObject({ kind: "batch", total: 50, jobIds: [] });
    const completed = succeeded.for(batch.completionJobId!);
    expect(await jobCount(batch.flowId)).toBe(51);
    await completed;
    expect(completions).toEqual([
      {
        flowId: batch.flowId,
        kind: "batch",
        name: null,
        total: 50,
        succeeded: 40,
        dead: 10,
        canceled: 0,
        payload: { file: "f.csv" },
      },
    ]);
    const flow = await nodes[0]!.getFlow(batch.flowId, 3);
    expect(flow).toMatchObject({ state: "failed", succeeded: 40, dead: 10, remaining: 0 });
    expect(flow?.members.map((m) => m.flowStep)).toEqual(["0", "1", "2"]);
  });

  it("validates every item before writing anything", async () => {
    nodes = await startNodes(schema, 1, () => {});
    const before = await pool.query(`SELECT count(*)::int AS n FROM "${schema}".scheduler_flow`);
    await expect(
      nodes[0]!.batch({ type: "v.row", items: [{ a: 1 }, { a: Number.NaN }] }),
    ).rejects.toMatchObject({
      code: "INVALID_PAYLOAD",
      message: expect.stringContaining("batch item 1"),
    });
    await expect(nodes[0]!.batch({ type: "v.row", items: [] })).rejects.toMatchObject({
      code: "INVALID_FLOW",
    });
    const after = await pool.query(`SELECT count(*)::int AS n FROM "${schema}".scheduler_flow`);
    expect(after.rows[0].n).toBe(before.rows[0].n);
  });

  it("cancels a flow's pending members and lists flows", async () => {
    nodes = await startNodes(schema, 1, () => {});
    const batch = await nodes[0]!.batch({
      type: "never.registered",
      items: [1, 2, 3],
      name: "to-cancel",
      onComplete: { type: "x.done" },
    });
    expect(await nodes[0]!.cancelFlow(batch.flowId)).toBe(4);
    expect(await nodes[0]!.getFlow(batch.flowId)).toMatchObject({ canceled: 3, state: "failed" });
    expect((await nodes[0]!.getJob(batch.completionJobId!))?.status).toBe("CANCELED");
    const listed = await nodes[0]!.listFlows({ kind: "batch", limit: 5 });
    expect(listed[0]).toMatchObject({ id: batch.flowId, name: "to-cancel" });
    await expect(nodes[0]!.cancelFlow("999999999")).rejects.toThrowError(FlowNotFoundError);
  });
});
