/**
 * Concurrency keys on flows (issue 27, docs/fairness.md): chain steps, workflow jobs, batch children and
 * completion jobs carry their own key and limit (the type's registered limit being the default), bad keys
 * and limits are refused before anything is written, and keyed members, whether released together by the
 * flow trigger or inserted runnable, run within their key's limit across two nodes.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { NonRetryableError, ValidationError, type Pawl } from "../../../src/index.js";
import { jobEvent } from "../../helpers/events.js";
import { closeAll, setupSchema, startNodes, testPawl } from "../../helpers/pawl.js";
import { badConcurrency } from "../../helpers/concurrency.js";
import { gate } from "../../helpers/gate.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let nodes: Pawl[] = [];
let client: Pawl;

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("cflowkey"));
  // Not started: flows are created on it, with "ck.step" registered for its default limit.
  client = testPawl(schema);
  client.register("ck.step", async () => {}, { concurrencyLimit: 4 });
});
afterAll(async () => {
  await client.close();
  await cleanup();
});
afterEach(async () => {
  await closeAll(nodes);
  nodes = [];
  await pool.query(
    `TRUNCATE "${schema}".scheduler_job_queue, "${schema}".scheduler_job_finished, "${schema}".scheduler_flow`,
  );
});

interface KeyRow {
  step: string | null;
  status: string;
  key: string | null;
  limit: number | null;
}

/** The members and completion job of a flow as stored: step name, status, key and limit. */
async function keyRows(flowId: string): Promise<KeyRow[]> {
  const r = await pool.query<KeyRow>(
    `SELECT flow_step AS step, status, concurrency_key AS key, concurrency_limit AS limit
     FROM "${schema}".scheduler_job_queue WHERE flow_id = $1 ORDER BY id`,
    [flowId],
  );
  return r.rows;
}

/** Rows of every kind a bad flow could have written. */
async function written(): Promise<{ flows: number; jobs: number }> {
  const r = await pool.query<{ flows: number; jobs: number }>(
    `SELECT (SELECT count(*) FROM "${schema}".scheduler_flow)::int AS flows,
            (SELECT count(*) FROM "${schema}".scheduler_job_all)::int AS jobs`,
  );
  return r.rows[0]!;
}

describe("flow members carry their concurrency key and limit", () => {
  it("chain steps and the completion job: their own limit, the type's default, or none", async () => {
    const chain = await client.chain(
      [
        { type: "ck.step", name: "a", concurrencyKey: "t1", concurrencyLimit: 2 },
        { type: "ck.step", name: "b", concurrencyKey: "t1" },
        { type: "ck.other", name: "c" },
        { type: "ck.other", name: "d", concurrencyKey: "t2" },
      ],
      { onComplete: { type: "ck.done", concurrencyKey: "t3", concurrencyLimit: 1 } },
    );
    expect(await keyRows(chain.flowId)).toEqual([
      { step: "a", status: "PENDING", key: "t1", limit: 2 },
      // No limit of its own: the limit "ck.step" was registered with.
      { step: "b", status: "WAITING", key: "t1", limit: 4 },
      { step: "c", status: "WAITING", key: null, limit: null },
      // A type registered without a limit (here: not at all) gives none: the key alone.
      { step: "d", status: "WAITING", key: "t2", limit: null },
      { step: null, status: "WAITING", key: "t3", limit: 1 },
    ]);
  });

  it("workflow jobs, each with its own", async () => {
    const flow = await client.workflow({
      jobs: [
        { name: "extract", type: "ck.other", concurrencyKey: "tenant-9", concurrencyLimit: 3 },
        { name: "load", type: "ck.step", dependsOn: ["extract"], concurrencyKey: "tenant-9" },
        { name: "report", type: "ck.other", dependsOn: ["load"] },
      ],
    });
    expect(await keyRows(flow.flowId)).toEqual([
      { step: "extract", status: "PENDING", key: "tenant-9", limit: 3 },
      { step: "load", status: "WAITING", key: "tenant-9", limit: 4 },
      { step: "report", status: "WAITING", key: null, limit: null },
    ]);
  });

  it("batch children share the batch's key and limit", async () => {
    const own = await client.batch({
      type: "ck.other",
      items: [1, 2, 3],
      concurrencyKey: "b1",
      concurrencyLimit: 5,
    });
    const byDefault = await client.batch({ type: "ck.step", items: [1, 2], concurrencyKey: "b2" });
    const none = await client.batch({ type: "ck.step", items: [1] });
    expect((await keyRows(own.flowId)).map((r) => [r.key, r.limit])).toEqual([
      ["b1", 5],
      ["b1", 5],
      ["b1", 5],
    ]);
    expect((await keyRows(byDefault.flowId)).map((r) => [r.key, r.limit])).toEqual([
      ["b2", 4],
      ["b2", 4],
    ]);
    expect((await keyRows(none.flowId)).map((r) => [r.key, r.limit])).toEqual([[null, null]]);
  });
});

describe("a flow stop", () => {
  it("moves the dependents it cancels whole: they keep their key and limit", async () => {
    nodes = await startNodes(schema, 1, (node) => {
      node.register(
        "ck.fail",
        async () => {
          throw new NonRetryableError("broken");
        },
        { maxAttempts: 1 },
      );
      node.register("ck.step", async () => {}, { concurrencyLimit: 4 });
    });
    const dead = jobEvent(nodes, "job:dead");
    const chain = await nodes[0]!.chain([
      { type: "ck.fail" },
      { type: "ck.step", concurrencyKey: "tenant-9", concurrencyLimit: 2 },
      { type: "ck.step", concurrencyKey: "tenant-9" },
    ]);
    await dead.for(chain.jobIds[0]!);
    const r = await pool.query<{ status: string; key: string | null; limit: number | null; reason: string }>(
      `SELECT status, concurrency_key AS key, concurrency_limit AS limit, cancel_reason AS reason
       FROM "${schema}".scheduler_job_finished WHERE id = ANY($1::bigint[]) ORDER BY id`,
      [chain.jobIds.slice(1)],
    );
    expect(r.rows).toEqual([
      {
        status: "CANCELED",
        key: "tenant-9",
        limit: 2,
        reason: `flow ${chain.flowId} stopped: step 0 ended DEAD`,
      },
      {
        status: "CANCELED",
        key: "tenant-9",
        limit: 4,
        reason: `flow ${chain.flowId} stopped: step 0 ended DEAD`,
      },
    ]);
  });
});

describe("bad concurrency options on a flow", () => {
  // Every door of a flow: a chain step, a workflow job, the batch's shared options, the completion job.
  const doors: [string, (bad: object) => Promise<unknown>, RegExp][] = [
    [
      "a chain step",
      (bad) => client.chain([{ type: "ck.step" }, { type: "ck.step", ...bad }]),
      /^chain step 1: /,
    ],
    [
      "a workflow job",
      (bad) =>
        client.workflow({
          jobs: [
            { name: "a", type: "ck.step" },
            { name: "b", type: "ck.step", dependsOn: ["a"], ...bad },
          ],
        }),
      /^workflow job "b": /,
    ],
    ["a batch", (bad) => client.batch({ type: "ck.step", items: [1, 2], ...bad }), /^batch item 0: /],
    [
      "a completion job",
      (bad) => client.chain([{ type: "ck.step" }], { onComplete: { type: "ck.done", ...bad } }),
      /^onComplete: /,
    ],
  ];
  const cases = doors.flatMap(([door, create, where]) =>
    badConcurrency.map((bad) => ({ door, create, where, ...bad })),
  );

  it.each(cases)(
    "$door with $name: INVALID_OPTION, nothing written",
    async ({ create, where, options, message }) => {
      const error = await create(options).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).code).toBe("INVALID_OPTION");
      expect((error as Error).message).toMatch(where);
      expect((error as Error).message).toMatch(message);
      expect(await written()).toEqual({ flows: 0, jobs: 0 });
    },
  );
});

describe("keyed flow members run within their key's limit", () => {
  /**
   * Counts handlers in flight and remembers the most seen at once. The first member waits for a second to
   * start, so the two slots are always used together (the limit is reached, whatever the machine's load);
   * each then works 60 ms, long enough that the nodes' 16 slots would start all six at once without it.
   */
  function inFlight() {
    let now = 0;
    const seen = { most: 0, runs: 0 };
    const pair = gate();
    return {
      seen,
      async run(): Promise<void> {
        now++;
        seen.runs++;
        seen.most = Math.max(seen.most, now);
        if (seen.runs >= 2) pair.open();
        await pair.promise;
        await new Promise((r) => setTimeout(r, 60));
        now--;
      },
    };
  }

  /** The most leased rows of key `key` right now, read from the rows. */
  async function leased(key: string): Promise<number> {
    const r = await pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM "${schema}".scheduler_job_queue
       WHERE status = 'PENDING' AND picked_by IS NOT NULL AND concurrency_key = $1`,
      [key],
    );
    return r.rows[0]?.n ?? 0;
  }

  /** Samples {@link leased} until `done` settles; returns the most seen and how many samples were taken. */
  async function sampleUntil(
    key: string,
    done: Promise<unknown>,
  ): Promise<{ most: number; samples: number }> {
    let finished = false;
    void done.then(
      () => (finished = true),
      () => (finished = true),
    );
    let most = 0;
    let samples = 0;
    while (!finished) {
      most = Math.max(most, await leased(key));
      samples++;
    }
    await done;
    return { most, samples };
  }

  it("6 workflow jobs of one key, limit 2, released together by their dependency: never more than 2 run", async () => {
    const f = inFlight();
    const root = gate();
    nodes = await startNodes(
      schema,
      2,
      (node) => {
        node.register("ck.root", () => root.promise);
        node.register("ck.work", () => f.run());
      },
      { concurrency: 8 },
    );
    const flow = await nodes[0]!.workflow({
      jobs: [
        { name: "root", type: "ck.root" },
        ...Array.from({ length: 6 }, (_, i) => ({
          name: `w${i}`,
          type: "ck.work",
          dependsOn: ["root"],
          concurrencyKey: "tenant-flow",
          concurrencyLimit: 2,
        })),
      ],
    });
    // While the root runs, the six wait with their key.
    const waiting = (await keyRows(flow.flowId)).filter((r) => r.step !== "root");
    expect(waiting.map((r) => [r.status, r.key, r.limit])).toEqual(
      Array.from({ length: 6 }, () => ["WAITING", "tenant-flow", 2]),
    );
    root.open();
    const members = flow.jobIds.slice(1);
    const done = Promise.all(members.map((id) => nodes[0]!.waitFor(id, { timeoutMs: 60_000 })));
    const { most, samples } = await sampleUntil("tenant-flow", done);
    expect((await done).map((j) => j.status)).toEqual(Array.from({ length: 6 }, () => "SUCCEEDED"));
    expect(samples).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(2);
    expect(f.seen.runs).toBe(6);
    // The slots were used: two ran at once, never three.
    expect(f.seen.most).toBe(2);
  });

  it("a batch of 6 children of one key, limit 2: never more than 2 run", async () => {
    const f = inFlight();
    nodes = await startNodes(
      schema,
      2,
      (node) => {
        node.register("ck.work", () => f.run());
        node.register("ck.done", async () => {});
      },
      { concurrency: 8 },
    );
    const batch = await nodes[0]!.batch({
      type: "ck.work",
      items: [1, 2, 3, 4, 5, 6],
      concurrencyKey: "tenant-batch",
      concurrencyLimit: 2,
      onComplete: { type: "ck.done" },
    });
    const done = nodes[0]!.waitFor(batch.completionJobId!, { timeoutMs: 60_000 });
    const { most } = await sampleUntil("tenant-batch", done);
    expect((await done).status).toBe("SUCCEEDED");
    expect(most).toBeLessThanOrEqual(2);
    expect(f.seen.runs).toBe(6);
    expect(f.seen.most).toBe(2);
  });
});
