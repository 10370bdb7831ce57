/**
 * The durable handlers' crash acceptance test (issue 41): two node processes run durable jobs of 5 steps
 * with a spawned and awaited child, a sleep and a named signal between them (test/processes/node-process.ts,
 * PAWL_DURABLE_KIT), while the test kills a random node with SIGKILL at random moments and starts a
 * replacement (a new node id each time, so the runs of a killed incarnation can be told apart). Signals are
 * sent by a plain client at random moments, half of them at once (before any job reaches its wait: early).
 *
 * Then: every job SUCCEEDED with the right result (0 lost, 0 stuck); each step body ended exactly once per
 * job, except where a kill landed inside that step: then at most twice, the first end on a killed node
 * (counted and printed); every early signal delivered; each job spawned exactly one child, whatever the
 * kills.
 *
 * Scale by environment (the defaults keep CI short): DURABLE_CRASH_JOBS (default 60; the acceptance run is
 * 300), DURABLE_CRASH_KILLS (default 4; acceptance 20).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { setupSchema, testPawl } from "../helpers/pawl.js";
import { killAll, NodeProcess, statusCounts, until, withDump } from "./harness.js";

const jobs = Number(process.env.DURABLE_CRASH_JOBS ?? 60);
const kills = Number(process.env.DURABLE_CRASH_KILLS ?? 4);

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
const procs: NodeProcess[] = [];

/** Node options: fast recovery, and claim cursors that look at every level each second. */
const options = { claimCursorFullDiscoveryMs: 1000, claimCursorFullDiscoveryMaxMs: 1000, graceMs: 2000 };

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("dcrash"));
  await pool.query(`
    CREATE TABLE "${schema}".step_runs (
      job_id bigint NOT NULL, step text NOT NULL, node_id text NOT NULL, phase text NOT NULL,
      at timestamptz NOT NULL DEFAULT clock_timestamp());
    CREATE TABLE "${schema}".child_runs (
      job_id bigint NOT NULL, node_id text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp());`);
});
afterAll(async () => {
  await killAll(procs);
  await cleanup();
});

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const random = (lo: number, hi: number) => lo + Math.floor(Math.random() * (hi - lo));

function start(slot: "a" | "b", incarnation: number): NodeProcess {
  const p = new NodeProcess(`${schema}-${slot}-${incarnation}`, schema, options, { PAWL_DURABLE_KIT: "1" });
  procs.push(p);
  return p;
}

describe("durable handlers under kill -9", () => {
  it(`${jobs} jobs of 5 steps, a child, a sleep and a signal; ${kills} kills: nothing lost, stuck or redone`, async () => {
    const client = testPawl(schema);
    const ids: string[] = [];
    for (let i = 0; i < jobs; i++) {
      const job = await client.enqueue("durable", { sleepMs: random(200, 1500), stepMs: random(5, 60) });
      ids.push(job.id);
    }
    // Half the signals now: no job can be at its wait yet (it needs a node, a child and a sleep first).
    const early = ids.filter((_, i) => i % 2 === 0);
    const late = ids.filter((_, i) => i % 2 === 1);
    const sent: string[] = [];
    for (const id of early) {
      const r = await client.signal(id, { early: true }, { name: "go" });
      expect(r.status).toBe("STORED");
      sent.push(id);
    }

    const live = { a: start("a", 0), b: start("b", 0) };
    const killed = new Set<string>();
    await withDump(procs, async () => {
      await Promise.all([live.a.ready, live.b.ready]);
      // The late signals, spread over the run, while the kills go on.
      const signaling = (async () => {
        for (const id of late) {
          await pause(random(0, 40));
          for (;;) {
            try {
              await client.signal(id, { early: false }, { name: "go" });
              break;
            } catch (error) {
              if ((error as { code?: string }).code !== "DATABASE_UNAVAILABLE") throw error;
            }
          }
          sent.push(id);
        }
      })();
      for (let k = 1; k <= kills; k++) {
        await pause(random(300, 1500));
        const slot = Math.random() < 0.5 ? "a" : "b";
        const victim = live[slot];
        victim.kill9();
        await victim.exited;
        killed.add(victim.nodeId);
        live[slot] = start(slot, k);
        await live[slot].ready;
      }
      await signaling;
      await until(
        async () => (await statusCounts(pool, schema)).SUCCEEDED === jobs * 2,
        180_000,
        "every durable job and child SUCCEEDED",
        250,
      );
    });

    const counts = await statusCounts(pool, schema);
    expect(counts).toEqual({ SUCCEEDED: jobs * 2 });
    expect(sent).toHaveLength(jobs);

    const results = await pool.query<{ id: string; result: unknown }>(
      `SELECT id, result FROM "${schema}".scheduler_job_all WHERE type = 'durable'`,
    );
    expect(results.rows.filter((r) => r.result !== 15)).toEqual([]);

    // Step bodies: ended once per (job, step), or twice with the first end on a killed incarnation.
    const ends = await pool.query<{ job_id: string; step: string; nodes: string[] }>(
      `SELECT job_id, step, array_agg(node_id ORDER BY at) AS nodes FROM "${schema}".step_runs
       WHERE phase = 'end' GROUP BY job_id, step`,
    );
    expect(ends.rows).toHaveLength(jobs * 5);
    const twice = ends.rows.filter((r) => r.nodes.length > 1);
    const unexplained = twice.filter((r) => r.nodes.length > 2 || !killed.has(r.nodes[0]!));
    expect(unexplained).toEqual([]);

    // Every signal delivered: the wait's recorded answer is the signal each job was sent.
    const answers = await pool.query<{ job_id: string; early: boolean }>(
      `SELECT job_id, (result -> 'payload' ->> 'early')::boolean AS early FROM "${schema}".scheduler_job_step
       WHERE name = 'go' AND status = 'succeeded'`,
    );
    expect(answers.rows).toHaveLength(jobs);
    const earlySet = new Set(early);
    expect(answers.rows.filter((r) => r.early !== earlySet.has(r.job_id))).toEqual([]);

    // One child per job, whatever the kills: never spawned twice.
    const children = await pool.query<{ parent: string; n: number }>(
      // The view predates parent_job_id (migration 0018 leaves it be): both tables, then.
      `SELECT parent_job_id AS parent, count(*)::int AS n FROM (
         SELECT type, parent_job_id FROM "${schema}".scheduler_job_queue
         UNION ALL SELECT type, parent_job_id FROM "${schema}".scheduler_job_finished) j
       WHERE type = 'durable-child' GROUP BY parent_job_id`,
    );
    expect(children.rows).toHaveLength(jobs);
    expect(children.rows.filter((r) => r.n !== 1)).toEqual([]);

    const starts = await pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM "${schema}".step_runs WHERE phase = 'start'`,
    );
    for (const p of procs) expect(p.fatalLines()).toEqual([]);
    console.log(
      `durable crash: ${jobs} jobs, ${kills} kills; step bodies started ${starts.rows[0]!.n} times for ` +
        `${jobs * 5} steps; ${twice.length} step bodies ended twice (a kill between the body's end and its record)`,
    );
    await client.close();
  }, 900_000);
});
