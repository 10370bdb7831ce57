/**
 * A sleeping durable job survives the kill of the node that parked it and a PostgreSQL restart (issue
 * 41): node A runs a durable job to its `ctx.sleep`, is killed with SIGKILL, the database restarts, and
 * node B, started afterwards, resumes the job at its due time, past its recorded steps (none runs again).
 *
 * Destructive: it restarts the database server, so it runs only with PAWL_DESTRUCTIVE_TESTS=1, in the
 * destructive group (`npm run test:destructive`, alone after the suite, as pg-restart.test.ts does).
 * PAWL_PG_CLUSTER ("15 main" by default) names the cluster that DATABASE_URL points at, so it can run
 * against a cluster of one's own:
 *
 *   PAWL_DESTRUCTIVE_TESTS=1 PAWL_PG_CLUSTER="15 durable" \
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5460/test npx vitest run test/processes/durable-sleep-restart.test.ts
 */
import { execFile } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { setupSchema, testPawl } from "../helpers/pawl.js";
import { killAll, NodeProcess, until, withDump } from "./harness.js";

const enabled = process.env.PAWL_DESTRUCTIVE_TESTS === "1";
const [version, name] = (process.env.PAWL_PG_CLUSTER ?? "15 main").split(/\s+/) as [string, string];
const sleepMs = 15_000;

function restartDatabase(): Promise<void> {
  return new Promise((resolve, reject) =>
    execFile(
      "pg_ctlcluster",
      ["--skip-systemctl-redirect", version, name, "restart"],
      { timeout: 60_000 },
      (error, _out, stderr) =>
        error ? reject(new Error(`pg_ctlcluster restart failed: ${stderr || error.message}`)) : resolve(),
    ),
  );
}

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
const procs: NodeProcess[] = [];

describe.skipIf(!enabled)("a sleeping durable job across a node kill and a database restart", () => {
  beforeAll(async () => {
    ({ schema, pool, cleanup } = await setupSchema("dsleep"));
    await pool.query(`
      CREATE TABLE "${schema}".step_runs (
        job_id bigint NOT NULL, step text NOT NULL, node_id text NOT NULL, phase text NOT NULL,
        at timestamptz NOT NULL DEFAULT clock_timestamp());
      CREATE TABLE "${schema}".child_runs (
        job_id bigint NOT NULL, node_id text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp());`);
  });
  afterAll(async () => {
    await killAll(procs);
    await until(async () => (await pool.query("SELECT 1"), true), 30_000, "the database");
    await cleanup();
  });

  it("resumes at its due time on another node, past its recorded steps", async () => {
    const client = testPawl(schema);
    const job = await client.enqueue("durable", { sleepMs, stepMs: 1 });
    await client.signal(job.id, {}, { name: "go" });
    await client.close();
    const env = { PAWL_DURABLE_KIT: "1" };
    const a = new NodeProcess(`${schema}-a`, schema, {}, env);
    procs.push(a);
    await withDump(procs, async () => {
      await a.ready;
      await until(
        async () => {
          const r = await pool.query(
            `SELECT 1 FROM "${schema}".scheduler_job_step WHERE job_id = $1 AND name = 'nap' AND status = 'waiting'`,
            [job.id],
          );
          const j = await pool.query(`SELECT status FROM "${schema}".scheduler_job_queue WHERE id = $1`, [
            job.id,
          ]);
          return r.rows.length === 1 && j.rows[0]?.status === "WAITING";
        },
        30_000,
        "the job parked in its sleep",
      );
      a.kill9();
      await a.exited;
      await restartDatabase();
      await until(async () => (await pool.query("SELECT 1"), true), 30_000, "the database back");
      const b = new NodeProcess(`${schema}-b`, schema, {}, env);
      procs.push(b);
      await b.ready;
      await until(
        async () => {
          const r = await pool.query(`SELECT status FROM "${schema}".scheduler_job_all WHERE id = $1`, [
            job.id,
          ]);
          return r.rows[0]?.status === "SUCCEEDED";
        },
        sleepMs + 60_000,
        "the job SUCCEEDED",
        100,
      );
    });
    const steps = await pool.query<{ step: string; nodes: string[] }>(
      `SELECT step, array_agg(node_id ORDER BY at) AS nodes FROM "${schema}".step_runs
       WHERE job_id = $1 AND phase = 'end' GROUP BY step ORDER BY step`,
      [job.id],
    );
    expect(steps.rows).toEqual([
      { step: "s1", nodes: [`${schema}-a`] },
      { step: "s2", nodes: [`${schema}-a`] },
      { step: "s3", nodes: [`${schema}-b`] },
      { step: "s4", nodes: [`${schema}-b`] },
      { step: "s5", nodes: [`${schema}-b`] },
    ]);
    const lag = await pool.query<{ ms: number }>(
      `SELECT (extract(epoch FROM r.at - s.wake_at) * 1000)::float8 AS ms
       FROM "${schema}".scheduler_job_step s, "${schema}".step_runs r
       WHERE s.job_id = $1 AND s.name = 'nap' AND r.job_id = s.job_id AND r.step = 's3' AND r.phase = 'start'`,
      [job.id],
    );
    const ms = lag.rows[0]!.ms;
    console.log(`sleep resumed ${Math.round(ms)} ms after its due time, on the other node, after a restart`);
    expect(ms).toBeGreaterThanOrEqual(0);
    expect(ms).toBeLessThan(2000);
  }, 180_000);
});
