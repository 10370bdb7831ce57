import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type pg from "pg";
import type { PostgresJobStore } from "../../../src/store/postgres-job-store.js";
import { ValidationError } from "../../../src/index.js";
import { JobStore } from "../../../src/store/postgres-job-store.js";
import { setupSchema } from "../../helpers/pawl.js";
import { testPool } from "../../helpers/db.js";
import { buildNewJob } from "../../../src/input/enqueue-input.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let store: PostgresJobStore;

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("keyed_claim"));
  store = new JobStore(pool, schema);
});
afterAll(() => cleanup());
beforeEach(async () => {
  await pool.query(
    `TRUNCATE "${schema}".scheduler_job_queue, "${schema}".scheduler_job_finished, "${schema}".scheduler_concurrency_running, "${schema}".scheduler_keyed_live`,
  );
});

const keyed = (key: string, limit?: number, priority = 10) =>
  buildNewJob(
    "t",
    {},
    { concurrencyKey: key, ...(limit === undefined ? {} : { concurrencyLimit: limit }), priority },
    undefined,
    1024,
  );
const args = (limit: number, nodeId = "n1") => ({
  nodeId,
  limit,
  types: ["t"],
  boostIntervalMs: 0,
  withPayload: false,
});

/** Leased rows per key, read from the rows themselves. */
async function runningByKey(): Promise<Map<string, number>> {
  const r = await pool.query<{ k: string; n: number }>(
    `SELECT concurrency_key AS k, count(*)::int AS n FROM "${schema}".scheduler_job_queue
     WHERE status = 'PENDING' AND picked_by IS NOT NULL GROUP BY 1`,
  );
  return new Map(r.rows.map((x) => [x.k, x.n]));
}

describe("keyed claim", () => {
  it("never claims past a key's limit, and a finished or returned job frees its slot", async () => {
    await store.enqueue(Array.from({ length: 10 }, () => keyed("tenant-42", 3)));
    const first = await store.claimKeyed(args(10));
    expect(first.jobs).toHaveLength(3);
    expect((await store.claimKeyed(args(10))).jobs).toHaveLength(0);
    // A finished job leaves the live table (DELETE), a retried one loses its lease: both free a slot.
    await pool.query(`DELETE FROM "${schema}".scheduler_job_queue WHERE id = $1`, [first.jobs[0]?.id]);
    await pool.query(
      `UPDATE "${schema}".scheduler_job_queue SET picked_by = NULL, picked_at = NULL WHERE id = $1`,
      [first.jobs[1]?.id],
    );
    expect((await store.claimKeyed(args(10))).jobs).toHaveLength(2);
    expect((await runningByKey()).get("tenant-42")).toBe(3);
    const sum = await pool.query(`SELECT "${schema}".pawl_key_running('tenant-42') AS n`);
    expect(sum.rows[0].n).toBe(3);
  });

  it("lets a job without a limit start beside a full key, and counts only jobs with a limit", async () => {
    // In the key's order: two jobs without a limit, then two with a limit of 1.
    await store.enqueue([keyed("mixed"), keyed("mixed"), keyed("mixed", 1), keyed("mixed", 1)]);
    const got = await store.claimKeyed(args(10));
    // Both unlimited jobs (they neither wait for a slot nor take one), and one limited job.
    expect(got.jobs).toHaveLength(3);
    expect((await runningByKey()).get("mixed")).toBe(3);
    const n = await pool.query(`SELECT "${schema}".pawl_key_running('mixed') AS n`);
    expect(n.rows[0].n).toBe(1);
    expect((await store.claimKeyed(args(10))).jobs).toHaveLength(0);
  });

  it("leaves keyed rows to the keyed claim and unkeyed rows to the classic one", async () => {
    await store.enqueue([keyed("a"), buildNewJob("t", {}, {}, undefined, 1024)]);
    const plain = await store.claim(args(10));
    expect(plain).toHaveLength(1);
    const k = await store.claimKeyed(args(10));
    expect(k.jobs).toHaveLength(1);
    expect(k.jobs[0]?.id).not.toBe(plain[0]?.id);
  });

  it("rotates across keys: a backlog of one key does not hold back another's", async () => {
    await store.enqueue(Array.from({ length: 2000 }, () => keyed("A")));
    await store.enqueue(Array.from({ length: 5 }, () => keyed("B")));
    const got = await store.claimKeyed(args(10));
    const ids = await pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM "${schema}".scheduler_job_queue WHERE concurrency_key = 'B' AND picked_by IS NOT NULL`,
    );
    expect(got.jobs).toHaveLength(10);
    expect(ids.rows[0]?.n).toBe(5);
  });

  it("orders a key's jobs by priority", async () => {
    await store.enqueue(Array.from({ length: 20 }, () => keyed("A", 1, 0)));
    const [urgent] = await store.enqueue([keyed("A", 1, 30)]);
    const got = await store.claimKeyed(args(10));
    expect(got.jobs.map((j) => j.id)).toEqual([urgent?.id]);
  });

  it("holds every limit under concurrent claimers on separate connections", async () => {
    const keys = Array.from({ length: 20 }, (_, i) => `k${i}`);
    await store.enqueue(keys.flatMap((k) => Array.from({ length: 10 }, () => keyed(k, 2))));
    const pools = [testPool(2), testPool(2), testPool(2), testPool(2)];
    try {
      const stores = pools.map((p) => new JobStore(p, schema));
      for (let round = 0; round < 5; round++) {
        await Promise.all(stores.map((s, i) => s.claimKeyed(args(7, `n${i}`))));
        for (const [k, n] of await runningByKey()) expect(n, k).toBeLessThanOrEqual(2);
        // Free a random half of the running jobs, as outcomes would.
        await pool.query(
          `DELETE FROM "${schema}".scheduler_job_queue WHERE picked_by IS NOT NULL AND random() < 0.5`,
        );
      }
      const total = [...(await runningByKey()).values()].reduce((a, b) => a + b, 0);
      const counted = await pool.query(
        `SELECT coalesce(sum(delta), 0)::int AS n FROM "${schema}".scheduler_concurrency_running`,
      );
      expect(counted.rows[0].n).toBe(total);
    } finally {
      await Promise.all(pools.map((p) => p.end()));
    }
  });

  it.each([
    ["an empty key", { concurrencyKey: "" }],
    ["a 10 kB key", { concurrencyKey: "x".repeat(10_000) }],
    ["a limit of 0", { concurrencyKey: "k", concurrencyLimit: 0 }],
    ["a limit of -1", { concurrencyKey: "k", concurrencyLimit: -1 }],
    ["a limit of 1.5", { concurrencyKey: "k", concurrencyLimit: 1.5 }],
    ["a limit without a key", { concurrencyLimit: 3 }],
  ])("refuses %s from enqueue and from SQL enqueue(), writing nothing", async (_name, options) => {
    expect(() => buildNewJob("t", {}, options, undefined, 1024)).toThrow(ValidationError);
    await expect(
      pool.query(`SELECT * FROM "${schema}".enqueue('t', '{}', $1::jsonb)`, [JSON.stringify(options)]),
    ).rejects.toMatchObject({
      code: "22023",
      detail: "INVALID_OPTION",
    });
    const n = await pool.query(`SELECT count(*)::int AS n FROM "${schema}".scheduler_job_queue`);
    expect(n.rows[0].n).toBe(0);
  });

  it("takes the key and limit from SQL enqueue() and a type's default limit", async () => {
    await pool.query(
      `SELECT * FROM "${schema}".enqueue('t', '{}', '{"concurrencyKey":"sql","concurrencyLimit":2}')`,
    );
    const job = buildNewJob("t", {}, { concurrencyKey: "typed" }, { concurrencyLimit: 4 }, 1024);
    expect(job.concurrencyLimit).toBe(4);
    const r = await pool.query(
      `SELECT concurrency_key, concurrency_limit FROM "${schema}".scheduler_job_queue`,
    );
    expect(r.rows).toEqual([{ concurrency_key: "sql", concurrency_limit: 2 }]);
  });
});
