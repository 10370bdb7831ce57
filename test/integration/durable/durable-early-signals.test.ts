/**
 * Early named signals (issue 41): 1,000 jobs are each sent their signal before any node runs them, so
 * every signal arrives before its job's wait; every job must get its own payload, 1,000 of 1,000.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import type { Pawl } from "../../../src/index.js";
import { closeAll, setupSchema, startNodes, testPawl } from "../../helpers/pawl.js";
import { until } from "../../processes/harness.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let nodes: Pawl[] = [];

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("dearly"));
});
afterAll(async () => {
  await closeAll(nodes);
  await cleanup();
});

const total = 1000;

describe("early named signals", () => {
  it("delivers 1,000 of 1,000 signals sent before the wait", async () => {
    const client = testPawl(schema);
    const jobs = await client.enqueueMany(
      Array.from({ length: total }, (_, i) => ({ type: "early", payload: { i } })),
    );
    const stored = await Promise.all(jobs.map((j, i) => client.signal(j.id, { i }, { name: "go" })));
    expect(stored.every((r) => r.status === "STORED")).toBe(true);
    await client.close();
    nodes = await startNodes(schema, 2, (n) =>
      n.register("early", async (p: { i: number }, ctx) => {
        const got = await ctx.waitForSignal<{ i: number }>("go");
        return got.timedOut ? -1 : got.payload.i === p.i ? "match" : "mismatch";
      }),
    );
    await until(
      async () => {
        const r = await pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM "${schema}".scheduler_job_all WHERE status = 'SUCCEEDED'`,
        );
        return r.rows[0]!.n === total;
      },
      60_000,
      "every job SUCCEEDED",
    );
    const results = await pool.query<{ result: unknown; n: number }>(
      `SELECT result, count(*)::int AS n FROM "${schema}".scheduler_job_all GROUP BY result`,
    );
    expect(results.rows).toEqual([{ result: "match", n: total }]);
    const parked = await pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM "${schema}".scheduler_job_step WHERE status = 'waiting'`,
    );
    expect(parked.rows[0]!.n).toBe(0);
  }, 120_000);
});
