/**
 * The live-key table of migration 0017 (docs/fairness.md#the-graveyard): the triggers add a key whenever
 * one of its rows becomes PENDING, the keyed claim drops a key that has no PENDING row left, and it never
 * drops a key while a transaction that adds a row of the key is still open (the key's slot lock).
 */
import type pg from "pg";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { JobStore, type PostgresJobStore } from "../../../src/store/postgres-job-store.js";
import { setupSchema } from "../../helpers/pawl.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let store: PostgresJobStore;

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("keyed_live"));
  store = new JobStore(pool, schema);
});
afterAll(() => cleanup());
beforeEach(async () => {
  await pool.query(
    `TRUNCATE "${schema}".scheduler_job_queue, "${schema}".scheduler_concurrency_running, "${schema}".scheduler_keyed_live`,
  );
});

const live = async (): Promise<string[]> =>
  (
    await pool.query<{ k: string }>(
      `SELECT concurrency_key AS k FROM "${schema}".scheduler_keyed_live ORDER BY 1`,
    )
  ).rows.map((r) => r.k);

const insert = (key: string, status = "PENDING", db: pg.Pool | pg.PoolClient = pool) =>
  db.query<{ id: string }>(
    `INSERT INTO "${schema}".scheduler_job_queue (type, status, concurrency_key, concurrency_limit)
     VALUES ('t', $2, $1, 2) RETURNING id`,
    [key, status],
  );

/** Claims (of 0 rows) until `done` holds: a claim drops keys in one claim in ten. */
async function claimUntil(done: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 400 && !(await done()); i++) {
    await store.claimKeyed({
      nodeId: "n1",
      limit: 1,
      types: ["none"],
      boostIntervalMs: 0,
      withPayload: false,
    });
  }
}

const claim = (limit = 8) =>
  store.claimKeyed({
    nodeId: "n1",
    limit,
    types: ["t"],
    boostIntervalMs: 0,
    withPayload: false,
    afterKey: null,
  });

describe("the live-key table", () => {
  it("gets a key when a row becomes PENDING: insert, release from WAITING, resume from PAUSED", async () => {
    await insert("a");
    const w = await insert("b", "WAITING");
    const p = await insert("c", "PAUSED");
    await insert("d", "SUCCEEDED");
    expect(await live()).toEqual(["a"]);
    await pool.query(`UPDATE "${schema}".scheduler_job_queue SET status = 'PENDING' WHERE id = $1`, [
      w.rows[0]!.id,
    ]);
    await pool.query(`UPDATE "${schema}".scheduler_job_queue SET status = 'PENDING' WHERE id = $1`, [
      p.rows[0]!.id,
    ]);
    expect(await live()).toEqual(["a", "b", "c"]);
  });

  it("keeps a key while its rows run, and the claim drops it once no row is PENDING", async () => {
    await insert("a");
    await insert("b");
    const first = await claim();
    expect(first.jobs.map((j) => j.concurrencyKey).sort()).toEqual(["a", "b"]);
    // Both rows are leased (still PENDING): both keys stay, and the claim says keyed rows are live.
    const running = await claim();
    expect(running.jobs).toEqual([]);
    expect(running.keyed).toBe(true);
    expect(await live()).toEqual(["a", "b"]);
    // a's job finishes (its row leaves the live table): a claim drops a, and none drops b.
    await pool.query(`DELETE FROM "${schema}".scheduler_job_queue WHERE concurrency_key = 'a'`);
    await claimUntil(async () => !(await live()).includes("a"));
    expect(await live()).toEqual(["b"]);
    await pool.query(`DELETE FROM "${schema}".scheduler_job_queue`);
    await claimUntil(async () => (await live()).length === 0);
    expect(await live()).toEqual([]);
    expect((await claim()).keyed).toBe(false);
  });

  it("does not drop a key while a transaction adding a row of it is open, and claims the row after", async () => {
    await insert("a");
    await pool.query(`DELETE FROM "${schema}".scheduler_job_queue`);
    expect(await live()).toEqual(["a"]); // stale until a claim looks
    const tx = await pool.connect();
    try {
      await tx.query("BEGIN");
      await insert("a", "PENDING", tx); // the trigger holds a's slot lock, shared, until commit
      // Claims that would drop a (it has no committed PENDING row) cannot take its slot.
      for (let i = 0; i < 100; i++) expect((await claim()).jobs).toEqual([]);
      expect(await live()).toEqual(["a"]); // not dropped
      await tx.query("COMMIT");
    } finally {
      tx.release();
    }
    const after = await claim();
    expect(after.jobs.map((j) => j.concurrencyKey)).toEqual(["a"]);
  });

  it("reads a bounded ring of keys per claim (64 for claims of 8), and the next claim goes on after it", async () => {
    // 1,000 keys whose only row is not due: no key can start a job, none is dropped.
    await pool.query(
      `INSERT INTO "${schema}".scheduler_job_queue (type, concurrency_key, concurrency_limit, scheduled_time)
       SELECT 't', 'k' || lpad(g::text, 4, '0'), 2, now() + interval '1 hour' FROM generate_series(1, 1000) g`,
    );
    await pool.query(
      `INSERT INTO "${schema}".scheduler_job_queue (type, concurrency_key, concurrency_limit) VALUES ('t', 'k0900', 2)`,
    );
    const args = { nodeId: "n1", limit: 8, types: ["t"], boostIntervalMs: 0, withPayload: false };
    // Claims of 8: windows of 2 keys, rings of 64 keys. k0900 is reached within ceil(900 / 64) claims.
    let after: string | null = null;
    let foundAt = -1;
    for (let i = 0; i < 20 && foundAt < 0; i++) {
      const r = await store.claimKeyed({ ...args, afterKey: after });
      if (r.jobs.length > 0) foundAt = i;
      else expect(r.nextKey! > (after ?? "")).toBe(true);
      after = r.nextKey;
    }
    // Claims 1-14 each read the next 64 keys (k0001-k0896); the 15th reaches k0900.
    expect(foundAt).toBe(14);
    expect((await live()).length).toBe(1000);
  });
});
