/**
 * Graceful rolling restart: three node processes run while jobs keep arriving; each node in turn gets
 * SIGTERM, drains (running jobs finish, buffered ones are handed back without counting the attempt),
 * exits 0 and is started again. No job may be lost and none may run twice.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { setupSchema } from "../helpers/pawl.js";
import {
  insertWork,
  installRecorders,
  killAll,
  NodeProcess,
  runStats,
  statusCounts,
  until,
  withDump,
} from "./harness.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
const procs: NodeProcess[] = [];

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("roll"));
  await installRecorders(pool, schema);
});
afterAll(async () => {
  await killAll(procs);
  await cleanup();
});

function spawnNode(nodeId: string): NodeProcess {
  const p = new NodeProcess(nodeId, schema, { graceMs: 15_000 });
  procs.push(p);
  return p;
}

describe("graceful rolling restart", () => {
  it("stops and restarts each node with SIGTERM while jobs flow: none lost, none run twice", async () => {
    await withDump(procs, async () => {
      const ids = ["roll-a", "roll-b", "roll-c"];
      const nodes = ids.map(spawnNode);
      await Promise.all(nodes.map((n) => n.ready));

      let enqueued = 0;
      let producing = true;
      const producer = (async () => {
        while (producing) {
          await insertWork(pool, schema, 10, 10);
          enqueued += 10;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      })();

      const exits: (number | null)[] = [];
      for (let i = 0; i < ids.length; i++) {
        const old = nodes[i]!;
        // Let it take work first, so the stop has something to drain.
        await until(
          async () => {
            const { rows } = await pool.query(
              `SELECT count(*)::int AS n FROM "${schema}".scheduler_job_all WHERE status = 'RUNNING' AND picked_by = $1`,
              [old.nodeId],
            );
            return rows[0].n > 0;
          },
          30_000,
          `${old.nodeId} to hold work`,
          20,
        );
        old.term();
        exits.push((await old.exited).code);
        const fresh = spawnNode(ids[i]!);
        await fresh.ready;
        nodes[i] = fresh;
      }
      producing = false;
      await producer;

      await until(
        async () => (await statusCounts(pool, schema)).SUCCEEDED === enqueued,
        60_000,
        "all jobs to succeed",
        200,
      );
      const stats = await runStats(pool, schema);
      console.log(
        `rolling restart: ${enqueued} jobs, 3 nodes restarted with SIGTERM; executions ${stats.executions}, run twice ${stats.ran_twice}`,
      );
      expect(exits).toEqual([0, 0, 0]);
      expect(stats).toMatchObject({
        jobs: enqueued,
        succeeded: enqueued,
        successes: enqueued,
        success_twice: 0,
        ran_twice: 0,
      });
      expect(stats.executions).toBe(enqueued);
      // A graceful stop hands jobs back: nothing was recovered as lost.
      const { rows } = await pool.query(
        `SELECT count(*)::int AS n FROM "${schema}".scheduler_job_all WHERE errors::text LIKE '%NodeLostError%'`,
      );
      expect(rows[0].n).toBe(0);

      for (const n of nodes) n.term();
      expect((await Promise.all(nodes.map((n) => n.exited))).map((e) => e.code)).toEqual([0, 0, 0]);
      for (const p of procs) expect(p.fatalLines()).toEqual([]);
    });
  }, 240_000);
});
