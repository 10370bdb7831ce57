/**
 * `pawl doctor`: key counts that drifted from their rows (a delta row lost, a phantom count) are
 * reported (exit 1) and `--repair` sets them from the rows, waiting for a claim that holds a key's lock.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { JobStore } from "../../../src/store/postgres-job-store.js";
import { setupSchema } from "../../helpers/pawl.js";
import { runCliOn } from "../../helpers/cli.js";
import { until } from "../../processes/harness.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("doctor"));
});
afterAll(async () => cleanup());

/** Leased keyed rows, as a claim leaves them: the lease triggers write their deltas. */
async function leased(key: string, n: number, limit: number | null = 5): Promise<void> {
  await pool.query(
    `INSERT INTO "${schema}".scheduler_job_queue (type, status, attempts, picked_by, picked_at, concurrency_key, concurrency_limit)
     SELECT 'work', 'PENDING', 1, 'n1', now(), $1, $3 FROM generate_series(1, $2)`,
    [key, n, limit],
  );
}

const running = `"scheduler_concurrency_running"`;

describe("pawl doctor", () => {
  it("says all is well when counts match, reports drift with exit 1, and --repair fixes it", async () => {
    await leased("tenant-a", 3);
    await leased("tenant-b", 2);
    await leased("unlimited", 4, null); // no limit: never counted, never drift
    expect(await runCliOn(schema, "doctor")).toMatchObject({ code: 0 });

    // Drift: tenant-a lost a delta (its count reads 2 for 3 rows), a phantom key counts 4 with no rows.
    await pool.query(
      `DELETE FROM "${schema}".${running} WHERE ctid = (SELECT ctid FROM "${schema}".${running} WHERE concurrency_key = 'tenant-a' LIMIT 1)`,
    );
    await pool.query(`INSERT INTO "${schema}".${running} VALUES ('ghost', 4)`);

    const found = await runCliOn(schema, "doctor", "--json");
    expect(found.code).toBe(1);
    expect(JSON.parse(found.stdout)).toEqual({
      repaired: false,
      keys: [
        { key: "ghost", counted: 4, actual: 0 },
        { key: "tenant-a", counted: 2, actual: 3 },
      ],
    });
    const text = await runCliOn(schema, "doctor");
    expect(text.stdout).toContain("2 keys drifted");
    expect(text.stdout).toMatch(/tenant-a\s+2\s+3/);

    const repaired = await runCliOn(schema, "doctor", "--repair");
    expect(repaired.code).toBe(0);
    expect(repaired.stdout).toContain("repaired 2 keys");
    expect(await runCliOn(schema, "doctor")).toMatchObject({ code: 0 });
    const { rows } = await pool.query<{ key: string; n: number }>(
      `SELECT concurrency_key AS key, sum(delta)::int AS n FROM "${schema}".${running} GROUP BY 1 HAVING sum(delta) <> 0 ORDER BY 1`,
    );
    expect(rows).toEqual([
      { key: "tenant-a", n: 3 },
      { key: "tenant-b", n: 2 },
    ]);
  });

  it("repairs under the key's claim lock: it waits for a claim holding the key, then counts what it committed", async () => {
    await leased("busy-key", 1);
    await pool.query(`INSERT INTO "${schema}".${running} VALUES ('busy-key', 5)`); // counted 6 for 1 row
    const store = new JobStore(pool, schema);
    expect(await store.checkKeyCounts()).toEqual([{ key: "busy-key", counted: 6, actual: 1 }]);

    // A claim in flight: it holds the key's lock and leases another row of the key.
    const claim = await pool.connect();
    try {
      await claim.query("BEGIN");
      await claim.query(
        `SELECT pg_advisory_xact_lock(hashtext('pawl keys "${schema}"'), hashtext('busy-key'))`,
      );
      await claim.query(
        `INSERT INTO "${schema}".scheduler_job_queue (type, status, attempts, picked_by, picked_at, concurrency_key, concurrency_limit)
         VALUES ('work', 'PENDING', 1, 'n1', now(), 'busy-key', 5)`,
      );
      let settled = false;
      const repair = store.repairKeyCounts().finally(() => (settled = true));
      // The repair reaches the key's lock and waits there (seen from the server, not by a timer).
      await until(
        async () => {
          const { rowCount } = await pool.query(
            `SELECT 1 FROM pg_locks l JOIN pg_stat_activity a USING (pid)
             WHERE l.locktype = 'advisory' AND NOT l.granted AND a.datname = current_database()
               AND a.query LIKE '%pawl keys%' AND a.pid <> pg_backend_pid()`,
          );
          return (rowCount ?? 0) > 0;
        },
        10_000,
        "the repair waiting on the key's lock",
      );
      expect(settled).toBe(false);
      await claim.query("COMMIT");
      // Under the lock it read the claim's committed delta (6 + 1) and counted both rows.
      expect(await repair).toEqual([{ key: "busy-key", counted: 7, actual: 2 }]);
    } finally {
      claim.release();
    }
    expect(await store.checkKeyCounts()).toEqual([]);
  });
});
