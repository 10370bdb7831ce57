/**
 * Migration 0023 (docs/durable.md#parked-jobs-and-the-claim): beside many parked rows of one type, the
 * planner's estimate of the PENDING rows of another type must follow those rows, not the product of the
 * two columns' frequencies, or the claim's candidate scan leaves the claim index's order for a sort of
 * every PENDING row.
 */
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ClassicClaimer } from "../../../src/store/claim/claimer.js";
import { systemClock } from "../../../src/core/clock.js";
import { JobStore } from "../../../src/store/postgres-job-store.js";
import { setupSchema } from "../../helpers/pawl.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("parked_plan"));
  await pool.query(
    `INSERT INTO "${schema}".scheduler_job_queue (type, status, signal_deadline)
     SELECT 'sleeper', 'WAITING', now() + interval '3 days' FROM generate_series(1, 30000)`,
  );
  await pool.query(
    `INSERT INTO "${schema}".scheduler_job_queue (type) SELECT 'claimed' FROM generate_series(1, 3000)`,
  );
  await pool.query(`ANALYZE "${schema}".scheduler_job_queue`);
});
afterAll(() => cleanup());

/** The planner's estimate of rows for `where`, from EXPLAIN's top node. */
async function estimate(where: string): Promise<number> {
  const plan = await pool.query<{ "QUERY PLAN": [{ Plan: { "Plan Rows": number } }] }>(
    `EXPLAIN (FORMAT JSON) SELECT id FROM "${schema}".scheduler_job_queue WHERE ${where}`,
  );
  return plan.rows[0]!["QUERY PLAN"][0].Plan["Plan Rows"];
}

describe("claims beside 30,000 parked rows (migration 0023)", () => {
  it("estimates the PENDING rows of the claimed type as they are, not as independent columns would", async () => {
    // Independent columns: 3,000 * (3,000 / 33,000) ~ 270 rows. The joint statistics know all 3,000.
    const rows = await estimate(`status = 'PENDING' AND type = ANY('{claimed}'::text[])`);
    expect(rows).toBeGreaterThanOrEqual(1500);
    expect(rows).toBeLessThanOrEqual(6000);
  });

  it("claims through the claim index, in its order, with no sort of the PENDING rows", async () => {
    const explain = await pool.connect();
    const plans: string[] = [];
    const measuring = new Proxy(pool, {
      get: (target, prop, receiver) =>
        prop === "query"
          ? async (config: pg.QueryConfig) => {
              await explain.query("BEGIN");
              try {
                const r = await explain.query<{ "QUERY PLAN": string }>(
                  `EXPLAIN (ANALYZE) ${config.text}`,
                  config.values,
                );
                plans.push(r.rows.map((x) => x["QUERY PLAN"]).join("\n"));
              } finally {
                await explain.query("ROLLBACK");
              }
              return target.query(config);
            }
          : Reflect.get(target, prop, receiver),
    });
    try {
      const claimer = new ClassicClaimer({
        nodeId: "plan",
        boostIntervalMs: 0,
        withPayload: false,
        store: new JobStore(measuring, schema),
        clock: systemClock,
      });
      const jobs = await claimer.claim(100, ["claimed"]);
      expect(jobs).toHaveLength(100);
    } finally {
      explain.release();
    }
    const plan = plans.join("\n");
    expect(plan).toMatch(/Index Scan using scheduler_job_queue_claim_idx/);
    expect(plan).not.toMatch(/scheduler_job_queue_pending_id_idx/);
  });
});
