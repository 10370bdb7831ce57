/** explain() of a keyed job whose key is full (issue 27): the reason and its text. */
import { afterAll, beforeAll, expect, it } from "vitest";
import type pg from "pg";
import { JobStore } from "../../../src/store/postgres-job-store.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";
import { describeReason } from "../../../src/logic/explain-text.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("keyed_explain"));
});
afterAll(() => cleanup());

it("says 'waiting: key tenant-42 has 3 of 3 running'", async () => {
  const client = testPawl(schema);
  try {
    const jobs = await client.enqueueMany(
      Array.from({ length: 4 }, () => ({ type: "t", concurrencyKey: "tenant-42", concurrencyLimit: 3 })),
    );
    const store = new JobStore(pool, schema);
    const claimed = await store.claimKeyed({
      nodeId: "n1",
      limit: 10,
      types: ["t"],
      boostIntervalMs: 0,
      withPayload: false,
    });
    expect(claimed.jobs).toHaveLength(3);
    const waiting = jobs.find((j) => !claimed.jobs.some((c) => c.id === j.id))!;
    const e = await client.explain(waiting.id);
    const reason = e.reasons.find((r) => r.kind === "key-at-limit");
    expect(reason).toEqual({ kind: "key-at-limit", key: "tenant-42", limit: 3, running: 3 });
    expect(describeReason(reason!, e.at)).toBe("waiting: key tenant-42 has 3 of 3 running");
  } finally {
    await client.close();
  }
});
