/**
 * PostgreSQL restart under three running node processes. Destructive: it restarts the database server
 * every test on the machine uses, so it only runs with PAWL_DESTRUCTIVE_TESTS=1 (`npm run
 * test:destructive`, a CI step of its own after the main suite).
 *
 * Two outages: a plain `pg_ctlcluster restart`, then a stop held longer than the dead-node threshold
 * before the start. The nodes must survive both (no crash, no unhandled rejection), reconnect, and finish
 * every job; and since every node was alive throughout, none may be declared dead and no job recovered as
 * lost, even though all heartbeats went stale during the longer outage.
 *
 * PAWL_PG_CLUSTER ("15 main" by default) names the cluster to restart, so the test can run against a
 * private cluster (pg_createcluster) with DATABASE_URL pointing at it, leaving the shared one alone.
 */
import { execFile } from "node:child_process";
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
  keyCountDrift,
} from "./harness.js";

const enabled = process.env.PAWL_DESTRUCTIVE_TESTS === "1";
const [version, name] = (process.env.PAWL_PG_CLUSTER ?? "15 main").split(/\s+/) as [string, string];
const thresholdMs = 3000;

function pgctl(action: "restart" | "stop" | "start"): Promise<void> {
  return new Promise((resolve, reject) =>
    execFile(
      "pg_ctlcluster",
      ["--skip-systemctl-redirect", version, name, action],
      { timeout: 60_000 },
      (error, _out, stderr) =>
        error ? reject(new Error(`pg_ctlcluster ${action} failed: ${stderr || error.message}`)) : resolve(),
    ),
  );
}

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
const procs: NodeProcess[] = [];

describe.skipIf(!enabled)("PostgreSQL restart under running nodes (destructive)", () => {
  beforeAll(async () => {
    ({ schema, pool, cleanup } = await setupSchema("pgrs"));
    await installRecorders(pool, schema);
  });
  afterAll(async () => {
    await killAll(procs);
    await until(async () => (await pool.query("SELECT 1"), true), 30_000, "the database");
    await cleanup();
  });

  it("nodes survive a restart and a longer outage, reconnect, and complete every job", async () => {
    const total = 6000;
    await insertWork(pool, schema, total, 5);
    for (const id of ["pg-a", "pg-b", "pg-c"])
      procs.push(new NodeProcess(id, schema, { deadNodeThresholdMs: thresholdMs }));
    await Promise.all(procs.map((p) => p.ready));
    const executed = async () => (await runStats(pool, schema)).executions;

    await until(async () => (await executed()) >= 1000, 60_000, "progress before the restart");
    const t0 = Date.now();
    await pgctl("restart");
    const restartMs = Date.now() - t0;
    await until(async () => (await executed()) >= 2500, 60_000, "progress after the restart");
    const resumedMs = Date.now() - t0;

    await pgctl("stop");
    const t1 = Date.now();
    await new Promise((resolve) => setTimeout(resolve, thresholdMs + 1500));
    await pgctl("start");
    try {
      await until(
        async () => (await statusCounts(pool, schema)).SUCCEEDED === total,
        90_000,
        "all jobs to succeed",
        250,
      );
    } catch (error) {
      const { rows: nodes } = await pool.query(
        `SELECT node_id, heartbeat_ts, now() - heartbeat_ts AS age FROM "${schema}".scheduler_node`,
      );
      console.log(
        JSON.stringify({
          counts: await statusCounts(pool, schema),
          nodes,
          alive: procs.map((p) => [p.nodeId, p.alive, p.exit]),
        }),
        "\n" +
          procs.map((p) => `--- ${p.nodeId}\n${p.stdout.join("\n")}\n${p.stderr.slice(-4000)}`).join("\n"),
      );
      throw error;
    }
    const outageMs = Date.now() - t1;

    const stats = await runStats(pool, schema);
    const { rows: lost } = await pool.query<{ message: string; at: string; n: number }>(
      `SELECT e->>'message' AS message, min(e->>'at') AS at, count(*)::int AS n
       FROM "${schema}".scheduler_job_all j, jsonb_array_elements(j.errors) e
       WHERE e->>'name' = 'NodeLostError' GROUP BY 1`,
    );
    const { rows } = await pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM "${schema}".scheduler_job_all WHERE errors::text LIKE '%NodeLostError%'`,
    );
    console.log(
      [
        `pg restart: restart took ${restartMs} ms, work resumed within ${resumedMs} ms; second outage ${thresholdMs + 1500} ms (threshold ${thresholdMs} ms)`,
        `all ${total} jobs done ${outageMs} ms after the second outage began; executions ${stats.executions}, run twice ${stats.ran_twice}, recovered as lost ${rows[0]!.n}`,
        `second outage: stop at ${new Date(t1).toISOString()}; lost: ${JSON.stringify(lost)}`,
        ...procs.map((p) => `${p.nodeId}: ${p.stdout.filter((l) => !l.includes('"ready"')).join(" ")}`),
        ...procs.map(
          (p) =>
            `${p.nodeId} stderr: ${p.stderr.split("\n").filter(Boolean).length} lines; first: ${p.stderr.split("\n")[0]?.slice(0, 300)}`,
        ),
      ].join("\n"),
    );
    for (const p of procs) {
      expect(p.fatalLines(), p.stderr.slice(-3000)).toEqual([]);
      expect(p.alive, `${p.nodeId} exited: ${JSON.stringify(p.exit)}`).toBe(true);
    }
    expect(stats).toMatchObject({ jobs: total, succeeded: total, successes: total, success_twice: 0 });
    expect(rows[0]!.n).toBe(0);
    expect(await keyCountDrift(pool, schema)).toEqual([]);

    for (const p of procs) p.term();
    expect((await Promise.all(procs.map((p) => p.exited))).map((e) => e.code)).toEqual([0, 0, 0]);
  }, 180_000);
});
