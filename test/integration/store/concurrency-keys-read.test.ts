/**
 * The operator read of the concurrency keys' load (src/store/operator/concurrency-keys-sql.ts) on a real
 * database: the counts behind the `pawl_concurrency_*` gauges, the busiest keys in order, the claim's rule
 * for a key at its limit (the next due job's own limit, so tiers count), and the caps. Rows are leased by
 * the lease's own UPDATE (src/store/jobs/lease-sql.ts), so the running counts come from the 0011 triggers
 * exactly as a claim's would, without depending on which rows a claim picks.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import type { Pawl } from "../../../src/index.js";
import { tablesFor, type Tables } from "../../../src/db/sql.js";
import { readConcurrencyKeys } from "../../../src/store/operator/concurrency-keys-sql.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let t: Tables;
let client: Pawl;

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("ckread"));
  t = tablesFor(schema);
  client = testPawl(schema);
});
afterAll(async () => {
  await client?.close();
  await cleanup?.();
});

/** Enqueues `n` jobs of `key` (with `limit`, and `priority` when given); returns their ids in order. */
async function enqueue(key: string, n: number, limit?: number, priority?: number): Promise<string[]> {
  const jobs = await client.enqueueMany(
    Array.from({ length: n }, () => ({
      type: "t",
      concurrencyKey: key,
      ...(limit === undefined ? {} : { concurrencyLimit: limit }),
      ...(priority === undefined ? {} : { priority }),
    })),
  );
  return jobs.map((j) => j.id);
}

/** Leases rows as a claim does; the 0011 trigger writes their +1 deltas. */
async function lease(ids: readonly string[]): Promise<void> {
  await pool.query(
    `UPDATE ${t.jobs} SET picked_by = 'n1', picked_at = now(), attempts = attempts + 1 WHERE id = ANY($1::bigint[])`,
    [ids],
  );
}

describe("readConcurrencyKeys", () => {
  it("reads nothing but zeros while no job has a key", async () => {
    await client.enqueue("t", {});
    const k = await readConcurrencyKeys(pool, t);
    expect(k).toMatchObject({
      activeKeys: 0,
      keysAtLimit: 0,
      running: 0,
      waiting: 0,
      waitingCapped: false,
      keysCapped: false,
      busiest: [],
    });
  });

  it("counts keys at their limit by the next due job's limit, and orders the busiest by running, then waiting", async () => {
    const alpha = await enqueue("alpha", 5, 2);
    await lease(alpha.slice(0, 2)); // 2 of 2 running, 3 waiting: at its limit
    const beta = await enqueue("beta", 3, 2);
    await lease(beta.slice(0, 2)); // 2 of 2, 1 waiting: at its limit
    const gamma = await enqueue("gamma", 2, 5);
    await lease(gamma); // 2 of 5, nothing waits: not held, its limit read from a running job
    // Tiers: 1 running under a limit-1 job, but the next due job (priority 20) allows 5, so the key is
    // not held (the claim would start it); the limit-1 job behind it waits.
    await lease(await enqueue("tier", 1, 1));
    await enqueue("tier", 1, 5, 20);
    await enqueue("tier", 1, 1, 10);
    // The next due job has no limit: it would start, so the key is not held, and its limit shows as none.
    await lease(await enqueue("mixed", 1, 3));
    await enqueue("mixed", 1);
    await enqueue("epsilon", 4, 3); // nothing running, 4 waiting
    await enqueue("free", 1); // no limit: waiting, never held
    // Scheduled later: not due, so neither waiting nor active.
    await client.enqueue("t", {}, { concurrencyKey: "later", concurrencyLimit: 1, delayMs: 3_600_000 });

    const k = await readConcurrencyKeys(pool, t);
    expect(k.busiest.map((b) => b.key)).toEqual([
      "alpha",
      "beta",
      "gamma",
      "tier",
      "mixed",
      "epsilon",
      "free",
    ]);
    expect(k.busiest).toEqual([
      { key: "alpha", running: 2, limit: 2, waiting: 3, atLimit: true },
      { key: "beta", running: 2, limit: 2, waiting: 1, atLimit: true },
      { key: "gamma", running: 2, limit: 5, waiting: 0, atLimit: false },
      { key: "tier", running: 1, limit: 5, waiting: 2, atLimit: false },
      { key: "mixed", running: 1, limit: null, waiting: 1, atLimit: false },
      { key: "epsilon", running: 0, limit: 3, waiting: 4, atLimit: false },
      { key: "free", running: 0, limit: null, waiting: 1, atLimit: false },
    ]);
    expect(k).toMatchObject({
      activeKeys: 7,
      keysAtLimit: 2,
      running: 8,
      waiting: 3 + 1 + 2 + 1 + 4 + 1,
      waitingCapped: false,
      keysCapped: false,
    });

    // `top` bounds the list, not the counts.
    const two = await readConcurrencyKeys(pool, t, { top: 2 });
    expect(two.busiest.map((b) => b.key)).toEqual(["alpha", "beta"]);
    expect(two.activeKeys).toBe(7);
    expect((await readConcurrencyKeys(pool, t, { top: 0 })).busiest).toEqual([]);

    // A job leaving its lease writes the -1: alpha drops below its limit and is no longer held.
    await pool.query(`UPDATE ${t.jobs} SET picked_by = NULL, picked_at = NULL WHERE id = $1`, [alpha[0]]);
    const after = await readConcurrencyKeys(pool, t);
    expect(after.keysAtLimit).toBe(1);
    expect(after.busiest.find((b) => b.key === "alpha")).toEqual({
      key: "alpha",
      running: 1,
      limit: 2,
      waiting: 4,
      atLimit: false,
    });
  });

  it("stops at its caps and says so", async () => {
    // Eight keys are live (the previous test's). scanCap 3: the total stops at 3, and each key's count
    // at max(1, 3 / keys) = 1. maxKeys 2: only the first two keys by name are examined (beta runs 2 now,
    // alpha 1, so beta comes first).
    const k = await readConcurrencyKeys(pool, t, { scanCap: 3, maxKeys: 2 });
    expect(k.waiting).toBe(3);
    expect(k.waitingCapped).toBe(true);
    expect(k.keysCapped).toBe(true);
    expect(k.waitingCapPerKey).toBe(1);
    expect(k.busiest.map((b) => b.key)).toEqual(["beta", "alpha"]);
    expect(k.busiest.every((b) => b.waiting <= 1)).toBe(true);
    expect(k.activeKeys).toBe(2);
  });
});
