/**
 * Properties of the keyed claim's order on real PostgreSQL (migration 0013, docs/fairness.md#the-claim-order),
 * for random keys, backlogs, priorities and claim sizes:
 * - a key's jobs are claimed in its own order: priority, then scheduled time, then id;
 * - the window goes round: a key with unclaimed jobs is served within ceil(keys / window) claims, where
 *   the window is ceil(claim size / 4) keys, at most 64;
 * - with limits, and jobs finishing at random between claims, a key never has more limited jobs leased
 *   than the highest limit among them (each started while fewer than its own limit ran, and the last
 *   one to start saw all the others), and the running count kept by the triggers equals those rows.
 */
import fc from "fast-check";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JobStore, type PostgresJobStore } from "../../../src/store/postgres-job-store.js";
import { setupSchema } from "../../helpers/pawl.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let store: PostgresJobStore;

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("keyed_order"));
  store = new JobStore(pool, schema);
});
afterAll(() => cleanup());

interface Row {
  key: string;
  priority: number;
  limit: number | null;
}

/** Empties the tables and inserts `rows` in order, each a millisecond later than the one before. */
async function load(rows: Row[]): Promise<string[]> {
  await pool.query(
    `TRUNCATE "${schema}".scheduler_job_queue, "${schema}".scheduler_concurrency_running,
       "${schema}".scheduler_keyed_live RESTART IDENTITY`,
  );
  const r = await pool.query<{ id: string }>(
    `INSERT INTO "${schema}".scheduler_job_queue (type, queue, payload, priority, scheduled_time,
                                                  concurrency_key, concurrency_limit)
     SELECT 't', 'default', '{}', p, timestamptz '2020-01-01' + n * interval '1 millisecond', k, l
     FROM unnest($1::text[], $2::int[], $3::int[]) WITH ORDINALITY AS u(k, p, l, n)
     ORDER BY n RETURNING id`,
    [rows.map((x) => x.key), rows.map((x) => x.priority), rows.map((x) => x.limit)],
  );
  return r.rows.map((x) => x.id);
}

const claimArgs = (limit: number, afterKey: string | null) => ({
  nodeId: "n1",
  limit,
  types: ["t"],
  boostIntervalMs: 0,
  withPayload: false,
  afterKey,
});

const rowsArb = (withLimits: boolean) =>
  fc.array(
    fc.record({
      key: fc.integer({ min: 0, max: 24 }).map((k) => `k${String(k).padStart(2, "0")}`),
      priority: fc.integer({ min: 0, max: 3 }),
      limit: withLimits ? fc.option(fc.integer({ min: 1, max: 3 }), { nil: null }) : fc.constant(null),
    }),
    { minLength: 1, maxLength: 150 },
  );

describe("keyed claim order (property)", () => {
  it("claims each key's jobs in its order, and serves every key within ceil(keys / window) claims", async () => {
    await fc.assert(
      fc.asyncProperty(rowsArb(false), fc.integer({ min: 1, max: 12 }), async (rows, size) => {
        const ids = await load(rows);
        const byId = new Map(ids.map((id, i) => [id, { ...rows[i]!, n: i }]));
        const keys = new Set(rows.map((r) => r.key));
        const window = Math.min(Math.ceil(size / 4), 64);
        const cycle = Math.ceil(keys.size / window);
        const unclaimed = new Map<string, number>();
        for (const r of rows) unclaimed.set(r.key, (unclaimed.get(r.key) ?? 0) + 1);
        const claimedOf = new Map<string, { priority: number; n: number }[]>();
        /** Per key: the claim number that last served it (0: none yet). */
        const served = new Map<string, number>();
        let after: string | null = null;
        for (let claim = 1; [...unclaimed.values()].some((n) => n > 0); claim++) {
          expect(claim, "claims needed").toBeLessThanOrEqual(rows.length + 1);
          const r = await store.claimKeyed(claimArgs(size, after));
          after = r.nextKey;
          expect(r.jobs.length).toBeGreaterThan(0);
          expect(r.jobs.length).toBeLessThanOrEqual(size);
          for (const job of r.jobs) {
            const row = byId.get(job.id)!;
            unclaimed.set(row.key, unclaimed.get(row.key)! - 1);
            served.set(row.key, claim);
            claimedOf.set(row.key, [...(claimedOf.get(row.key) ?? []), row]);
          }
          // Every key that still has work was served within the last `cycle` claims.
          for (const [key, n] of unclaimed) {
            if (n > 0 && claim >= cycle) expect(served.get(key) ?? 0, key).toBeGreaterThan(claim - cycle);
          }
        }
        // Each key's jobs came in (priority DESC, scheduled time, id) order.
        for (const list of claimedOf.values()) {
          for (let i = 1; i < list.length; i++) {
            const [a, b] = [list[i - 1]!, list[i]!];
            expect(a.priority > b.priority || (a.priority === b.priority && a.n < b.n)).toBe(true);
          }
        }
      }),
      { numRuns: 25, endOnFailure: true },
    );
  });

  it("never leases more of a key's limited jobs than their highest limit, with jobs finishing between claims", async () => {
    await fc.assert(
      fc.asyncProperty(
        rowsArb(true),
        fc.integer({ min: 1, max: 12 }),
        fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 8, maxLength: 8 }),
        async (rows, size, finishShares) => {
          await load(rows);
          let after: string | null = null;
          for (const share of finishShares) {
            after = (await store.claimKeyed(claimArgs(size, after))).nextKey;
            const leased = await pool.query<{
              k: string;
              limited: number;
              most: number | null;
              counted: number;
            }>(
              `SELECT concurrency_key AS k, count(concurrency_limit)::int AS limited,
                      max(concurrency_limit) AS most, "${schema}".pawl_key_running(concurrency_key) AS counted
               FROM "${schema}".scheduler_job_queue
               WHERE status = 'PENDING' AND picked_by IS NOT NULL GROUP BY 1`,
            );
            for (const x of leased.rows) {
              expect(x.limited, x.k).toBeLessThanOrEqual(x.most ?? 0);
              expect(x.counted, x.k).toBe(x.limited);
            }
            await pool.query(
              `DELETE FROM "${schema}".scheduler_job_queue WHERE picked_by IS NOT NULL AND random() < $1`,
              [share],
            );
          }
        },
      ),
      { numRuns: 20, endOnFailure: true },
    );
  });
});
