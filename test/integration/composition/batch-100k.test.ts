import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { NonRetryableError, type FlowCompletion, type Pawl } from "../../../src/index.js";
import { closeAll, setupSchema, startNodes } from "../../helpers/pawl.js";
import { onAny } from "../../helpers/events.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let nodes: Pawl[] = [];

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("cbig"));
});
afterAll(() => cleanup());
afterEach(async () => {
  await closeAll(nodes);
  nodes = [];
});

const children = 100_000;

describe("a 100,000-child batch", () => {
  it("drains on two competing nodes and runs its completion job exactly once, with the right counts", async () => {
    const completions: FlowCompletion<{ source: string }>[] = [];
    const completionRuns: string[] = [];
    const outcomes = new Map<string, number>(); // child id -> times it ended
    const byNode = new Map<string, number>();
    nodes = await startNodes(
      schema,
      2,
      (node) => {
        node.register("big.row", async (p: { n: number }) => {
          // One child in a hundred is broken for good.
          if (p.n % 100 === 0) throw new NonRetryableError(`row ${p.n} is broken`);
          return p.n;
        });
        node.register("big.done", async (p: FlowCompletion<{ source: string }>, ctx) => {
          completionRuns.push(ctx.nodeId);
          completions.push(p);
        });
        const ended = (id: string) => {
          outcomes.set(id, (outcomes.get(id) ?? 0) + 1);
          byNode.set(node.nodeId, (byNode.get(node.nodeId) ?? 0) + 1);
        };
        node.on("job:succeeded", (e) => e.job.type === "big.row" && ended(e.job.id));
        node.on("job:dead", (e) => e.job.type === "big.row" && ended(e.job.id));
      },
      { concurrency: 50, completionFlushMs: 2 },
    );
    const items = Array.from({ length: children }, (_, n) => ({ n }));

    const t0 = performance.now();
    const batch = await nodes[0]!.batch({
      type: "big.row",
      items,
      name: "import-100k",
      onComplete: { type: "big.done", payload: { source: "rows.csv" } },
    });
    const enqueueMs = performance.now() - t0;
    const completed = onAny(nodes, "job:succeeded", (e) => e.job.id === batch.completionJobId, 900_000);
    await completed;
    const drainMs = performance.now() - t0 - enqueueMs;

    expect(completions).toEqual([
      {
        flowId: batch.flowId,
        kind: "batch",
        name: "import-100k",
        total: children,
        succeeded: children - children / 100,
        dead: children / 100,
        canceled: 0,
        payload: { source: "rows.csv" },
      },
    ]);
    expect(completionRuns).toHaveLength(1);
    // Every child ended exactly once, and both nodes took their share.
    expect(outcomes.size).toBe(children);
    expect([...outcomes.values()].every((n) => n === 1)).toBe(true);
    expect(byNode.size).toBe(2);
    for (const n of byNode.values()) expect(n).toBeGreaterThan(children / 20);
    const rows = await pool.query<{ status: string; n: number }>(
      `SELECT status, count(*)::int AS n FROM "${schema}".scheduler_job_all WHERE flow_id = $1 GROUP BY status ORDER BY status`,
      [batch.flowId],
    );
    expect(rows.rows).toEqual([
      { status: "DEAD", n: children / 100 },
      { status: "SUCCEEDED", n: children - children / 100 + 1 },
    ]);
    expect(await nodes[1]!.getFlow(batch.flowId, 0)).toMatchObject({
      state: "failed",
      total: children,
      succeeded: children - children / 100,
      dead: children / 100,
      remaining: 0,
      members: [],
    });
    const perNode = [...byNode.values()].join(" + ");
    console.log(
      `[100k batch] enqueue ${Math.round(enqueueMs)} ms, drain ${Math.round(drainMs)} ms ` +
        `(${Math.round(children / (drainMs / 1000))} jobs/s on 2 nodes x 50; children per node ${perNode})`,
    );
  }, 1_000_000);
});
