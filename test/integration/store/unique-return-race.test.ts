/**
 * The unique-key rule under concurrency: an enqueue that takes the key while a resume is deciding must
 * never surface as a raw 23505. The statement decides in SQL, and runs again when a concurrent insert
 * committed the key between its snapshot and its update (src/store/jobs/return-to-pending.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import type { Pawl } from "../../../src/index.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let a: Pawl;
let b: Pawl;

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("uretrace"));
  // Two clients on their own pools, as two processes would be.
  a = testPawl(schema);
  b = testPawl(schema);
});
afterAll(async () => {
  await Promise.all([a.close(), b.close()]);
  await cleanup();
});

async function liveIds(key: string): Promise<string[]> {
  const r = await pool.query<{ id: string }>(
    `SELECT id FROM "${schema}".scheduler_job_all WHERE unique_key = $1 AND status IN ('PENDING', 'RUNNING')`,
    [key],
  );
  return r.rows.map((x) => x.id);
}

/** Resolves once some backend waits for a lock held by `holderPid` (the resume waits on the insert). */
async function blockedBy(holderPid: number): Promise<void> {
  for (;;) {
    const r = await pool.query(`SELECT 1 FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, [
      holderPid,
    ]);
    if ((r.rowCount ?? 0) > 0) return;
  }
}

describe("resume racing an enqueue of the same key", () => {
  it("cancels the resumed job when the insert commits after the resume's snapshot (the statement runs again)", async () => {
    const paused = await a.enqueue("race.one", {}, { uniqueKey: "race-tx", delayMs: 3_600_000 });
    await a.pauseJob(paused.id);
    const tx = await pool.connect();
    try {
      await tx.query("BEGIN");
      const dup = await a.enqueue("race.one", {}, { uniqueKey: "race-tx", client: tx });
      const pid = (await tx.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
      // The resume sees no live holder (the insert is not committed), so its update waits on the index
      // entry; the commit turns that into a 23505, and the retried statement sees the holder.
      const resuming = b.resumeJob(paused.id);
      await blockedBy(pid);
      await tx.query("COMMIT");
      const job = await resuming;
      expect(job).toMatchObject({
        status: "CANCELED",
        cancelReason: `duplicate: unique key held by live job ${dup.id}`,
      });
      expect(await liveIds("race-tx")).toEqual([dup.id]);
    } finally {
      tx.release();
    }
  });

  it("never throws, and leaves exactly one live job per key, over many rounds", async () => {
    for (let round = 0; round < 40; round++) {
      const key = `race-${round}`;
      const paused = await a.enqueue("race.loop", {}, { uniqueKey: key, delayMs: 3_600_000 });
      await a.pauseJob(paused.id);
      const [enqueued, resumed] = await Promise.all([
        b.enqueue("race.loop", {}, { uniqueKey: key, delayMs: 3_600_000 }),
        a.resumeJob(paused.id),
      ]);
      const live = await liveIds(key);
      expect(live).toHaveLength(1);
      if (resumed.status === "CANCELED") {
        // The enqueue won: it inserted, and the resumed job names it.
        expect(enqueued.inserted).toBe(true);
        expect(resumed.cancelReason).toBe(`duplicate: unique key held by live job ${enqueued.id}`);
        expect(live).toEqual([enqueued.id]);
      } else {
        // The resume won: the enqueue returned the resumed job instead of inserting.
        expect(resumed.status).toBe("PENDING");
        expect(enqueued).toMatchObject({ id: paused.id, inserted: false });
        expect(live).toEqual([paused.id]);
      }
    }
  });
});
