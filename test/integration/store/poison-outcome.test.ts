/**
 * A poison outcome costs one job at most (issue 18, items 1 and 7): results and thrown values that
 * PostgreSQL cannot store as they are, returned or thrown by real handlers on a real node. Each job
 * reaches its final status at once, the ordinary jobs around it are not held up, and stop() leaves
 * nothing RUNNING. On the code before the fix the writer retried the refused batch forever.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import type { Pawl, PawlEvents } from "../../../src/index.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let node: Pawl | undefined;

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("poison"));
});
afterAll(() => cleanup());
afterEach(async () => {
  await node?.close();
  node = undefined;
});

const once = { maxAttempts: 1 };
// A stalled writer keeps every outcome RUNNING; waiting this long for an outcome event is plenty on a
// working node and short enough that a stall fails the test instead of the suite's timeout.
const within = 10_000;

type Final = "job:succeeded" | "job:dead" | "job:retried";

/**
 * Records every job's final event from now on (call it before enqueueing: a job may finish before the
 * enqueue returns) and returns a wait: it resolves with the events of `ids` once all are seen, and
 * rejects when one is missing after `within`.
 */
function outcomes(n: Pawl): (ids: readonly string[]) => Promise<Map<string, Final>> {
  const seen = new Map<string, Final>();
  let changed = () => {};
  const on = (name: Final) =>
    n.on(name, (e: PawlEvents[typeof name]) => {
      seen.set(e.job.id, name);
      changed();
    });
  on("job:succeeded");
  on("job:dead");
  on("job:retried");
  return (ids) =>
    new Promise((resolve, reject) => {
      const check = () => {
        if (!ids.every((id) => seen.has(id))) return;
        clearTimeout(timer);
        resolve(new Map(ids.map((id) => [id, seen.get(id)!])));
      };
      const timer = setTimeout(() => {
        reject(new Error(`not settled within ${within} ms: ${ids.filter((id) => !seen.has(id)).join(", ")}`));
      }, within);
      changed = check;
      check();
    });
}

async function running(): Promise<number> {
  const { rows } = await pool.query<{ n: string }>(
    `SELECT count(*) AS n FROM "${schema}".scheduler_job_all WHERE status = 'RUNNING'`,
  );
  return Number(rows[0]!.n);
}

describe("a poison outcome costs one job at most", () => {
  it("stores a result with a NUL as null, next to an ordinary job that is not held up", async () => {
    node = testPawl(schema);
    node.register("nul-result", async () => "a\u0000b");
    node.register("plain", async () => ({ ok: true }));
    const settled = outcomes(node);
    await node.start();
    const [bad, good] = await node.enqueueMany([{ type: "nul-result" }, { type: "plain" }]);
    expect(await settled([bad!.id, good!.id])).toEqual(
      new Map([
        [bad!.id, "job:succeeded"],
        [good!.id, "job:succeeded"],
      ]),
    );
    expect(await node.getJob(bad!.id)).toMatchObject({ status: "SUCCEEDED", result: null });
    expect(await node.getJob(good!.id)).toMatchObject({ status: "SUCCEEDED", result: { ok: true } });
    await node.stop();
    expect(await running()).toBe(0);
  });

  it("stores results with a NUL key, a lone surrogate or a BigInt as null; the others as they are", async () => {
    node = testPawl(schema, { concurrency: 8 });
    const results: Record<string, unknown> = {
      "nul-key": { ["k\u0000"]: 1, fine: "yes" },
      "lone-high": { text: "x\ud800y" },
      "lone-low": ["\udc00"],
      bigint: { n: 10n },
      pair: { text: "\ud83d\ude00 \uffff \u2028" },
      plain: [1, "two", { three: 3 }],
    };
    for (const [type, value] of Object.entries(results)) node.register(type, async () => value);
    const settled = outcomes(node);
    await node.start();
    const jobs = await node.enqueueMany(Object.keys(results).map((type) => ({ type })));
    const events = await settled(jobs.map((j) => j.id));
    expect([...events.values()].every((e) => e === "job:succeeded")).toBe(true);
    const stored = Object.fromEntries(
      await Promise.all(jobs.map(async (j) => [j.type, (await node!.getJob(j.id))?.result] as const)),
    );
    expect(stored).toEqual({
      "nul-key": null,
      "lone-high": null,
      "lone-low": null,
      bigint: null,
      pair: { text: "\ud83d\ude00 \uffff \u2028" },
      plain: [1, "two", { three: 3 }],
    });
    await node.stop();
    expect(await running()).toBe(0);
  });

  it("records an error message with a NUL sanitised, and later failing jobs on the node are not held up", async () => {
    node = testPawl(schema);
    node.register(
      "nul-error",
      async () => {
        throw new Error("x\u0000");
      },
      once,
    );
    node.register(
      "fails",
      async (p: { n: number }) => {
        throw new Error(`ordinary failure ${p.n}`);
      },
      once,
    );
    const settled = outcomes(node);
    await node.start();
    const bad = await node.enqueue("nul-error", {});
    expect((await settled([bad.id])).get(bad.id)).toBe("job:dead");
    const later = await node.enqueueMany([1, 2, 3].map((n) => ({ type: "fails", payload: { n } })));
    const events = await settled(later.map((j) => j.id));
    expect([...events.values()]).toEqual(["job:dead", "job:dead", "job:dead"]);
    const read = await node.getJob(bad.id);
    expect(read).toMatchObject({ status: "DEAD", lastError: "x\uFFFD" });
    expect(read!.errors[0]).toMatchObject({ name: "Error", message: "x\uFFFD" });
    expect(read!.errors[0]!.stack).toContain("x\uFFFD");
    for (const [i, j] of later.entries())
      expect(await node.getJob(j.id)).toMatchObject({
        status: "DEAD",
        lastError: `ordinary failure ${i + 1}`,
      });
    await node.stop();
    expect(await running()).toBe(0);
  });

  it("records a circular thrown object with its message, name and fields", async () => {
    node = testPawl(schema);
    node.register(
      "throws-circular",
      async () => {
        const thrown: Record<string, unknown> = {
          name: "QuotaError",
          message: "quota exceeded",
          retryAfter: 30,
        };
        thrown.self = thrown;
        throw thrown;
      },
      once,
    );
    const dead = node.events.next("job:dead", undefined, within);
    await node.start();
    const job = await node.enqueue("throws-circular", {});
    expect(await dead).toMatchObject({
      job: { id: job.id },
      error: { name: "QuotaError", message: "quota exceeded" },
    });
    const read = await node.getJob(job.id);
    expect(read).toMatchObject({ status: "DEAD", lastError: "quota exceeded" });
    expect(read!.errors[0]).toMatchObject({
      name: "QuotaError",
      message: "quota exceeded",
      details: { retryAfter: 30, self: "[Circular]" },
    });
    await node.stop();
    expect(await running()).toBe(0);
  });
});
