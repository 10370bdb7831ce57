/**
 * One process per node id, with real processes: a second process started under a live node's id is
 * refused at start() (NodeIdInUseError) and rescues none of the first one's jobs; after kill -9 of the
 * first, a restart under the id starts well before the dead-node threshold (the id's session lock went
 * with the killed process) and recovers what the killed run held.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { setupSchema } from "../helpers/pawl.js";
import {
  insertWork,
  installRecorders,
  killAll,
  NodeProcess,
  statusCounts,
  until,
  withDump,
} from "./harness.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
const procs: NodeProcess[] = [];

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("node_id_procs"));
  await installRecorders(pool, schema);
});
afterAll(async () => {
  await killAll(procs);
  await cleanup();
});

// Long enough that only the session lock can explain a prompt restart.
const threshold = 60_000;

function spawn(nodeId: string): NodeProcess {
  const p = new NodeProcess(nodeId, schema, { deadNodeThresholdMs: threshold });
  procs.push(p);
  return p;
}

async function heldBy(nodeId: string): Promise<string[]> {
  const { rows } = await pool.query<{ id: string }>(
    `SELECT id FROM "${schema}".scheduler_job_all WHERE status = 'RUNNING' AND picked_by = $1 ORDER BY id`,
    [nodeId],
  );
  return rows.map((r) => r.id);
}

async function lostErrors(): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM "${schema}".scheduler_job_all j, jsonb_array_elements(j.errors) e
     WHERE e->>'message' LIKE '%lost'`,
  );
  return rows[0]!.n;
}

describe("two processes under one node id", () => {
  it("refuses the second while the first lives; after kill -9 a restart takes over at once", async () => {
    await withDump(procs, async () => {
      const first = spawn("shared-id");
      await first.ready;
      // The first node holds jobs it never finishes (held until aborted).
      await pool.query(
        `INSERT INTO "${schema}".scheduler_job_queue (type, payload)
         SELECT 'work', '{"holdOn":"shared-id"}'::jsonb FROM generate_series(1, 5)`,
      );
      await until(
        async () => (await heldBy("shared-id")).length === 5,
        20_000,
        "the first node to hold 5 jobs",
      );
      const held = await heldBy("shared-id");

      const second = spawn("shared-id");
      await expect(second.ready).rejects.toThrow(/exited before ready \(code 3/);
      const [failed] = second.events<{ at: number; name: string; code: string }>("start-failed");
      expect(failed).toMatchObject({ name: "NodeIdInUseError", code: "INVALID_STATE" });
      expect(await heldBy("shared-id")).toEqual(held);
      expect(await lostErrors()).toBe(0);
      expect(first.alive).toBe(true);

      first.kill9();
      await first.exited;
      const restartedAt = Date.now();
      const third = spawn("shared-id");
      await third.ready;
      const readyMs = Date.now() - restartedAt;
      // Its startup cleanup recovered the killed run's rows: none is held by the dead run's lease now.
      // (The restarted node claims them again and holds them too, so count the recoveries.)
      await until(async () => (await lostErrors()) === 5, 20_000, "the killed run's 5 jobs recovered");
      console.log(
        `node id: restart after kill -9 ready in ${readyMs} ms (dead-node threshold ${threshold} ms)`,
      );
      expect(readyMs).toBeLessThan(threshold / 2);
      await insertWork(pool, schema, 3, 0);
      await until(
        async () => ((await statusCounts(pool, schema)).SUCCEEDED ?? 0) >= 3,
        20_000,
        "new work to run",
      );
    });
  }, 120_000);
});
