/**
 * Durable machine timers across a PostgreSQL restart (issue 42's acceptance). Destructive: it restarts
 * the database server, so it only runs with PAWL_DESTRUCTIVE_TESTS=1, against the cluster PAWL_PG_CLUSTER
 * names ("15 main" by default) with DATABASE_URL pointing at it: run it against a private cluster
 * (pg_createcluster), never the shared one.
 *
 * Two nodes park 20 machines on a 2 s `after` timer; the server restarts while they wait. Every timer must
 * fire within 1 s of its due time, and no node may crash.
 */
import { execFile } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { setupSchema } from "../helpers/pawl.js";
import { until } from "./harness.js";
import { enqueue, procs, startNode } from "./machine-procs.js";

const enabled = process.env.PAWL_DESTRUCTIVE_TESTS === "1";
const [version, name] = (process.env.PAWL_PG_CLUSTER ?? "15 main").split(/\s+/) as [string, string];

function restart(): Promise<void> {
  return new Promise((resolve, reject) =>
    execFile(
      "pg_ctlcluster",
      ["--skip-systemctl-redirect", version, name, "restart"],
      { timeout: 60_000 },
      (error, _out, stderr) => (error ? reject(new Error(stderr || error.message)) : resolve()),
    ),
  );
}

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;

describe.skipIf(!enabled)("durable machine timers across a PostgreSQL restart (destructive)", () => {
  beforeAll(async () => {
    ({ schema, pool, cleanup } = await setupSchema("mpgr"));
  });
  afterAll(async () => {
    for (const p of procs) p.kill9();
    await Promise.all(procs.map((p) => p.exited));
    await until(async () => (await pool.query("SELECT 1"), true), 30_000, "the database");
    await cleanup();
  });

  it("fires 2 s `after` timers within 1 s of due although the server restarted meanwhile", async () => {
    const nodes = [await startNode(schema), await startNode(schema)];
    const ids = await enqueue(
      pool,
      schema,
      "timer",
      Array.from({ length: 20 }, () => ({ ms: 2000 })),
    );
    await until(
      async () => {
        const { rows } = await pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM "${schema}".scheduler_job_queue WHERE id = ANY($1::bigint[]) AND status = 'WAITING'`,
          [ids],
        );
        return rows[0]!.n === ids.length;
      },
      20_000,
      "the timers parked",
    );
    const due = await pool.query<{ job_id: string; due: number }>(
      `SELECT job_id, (timers->0->>'dueAt')::float8 AS due FROM "${schema}".scheduler_machine WHERE job_id = ANY($1::bigint[])`,
      [ids],
    );
    await restart();
    await until(
      async () => {
        const { rows } = await pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM "${schema}".scheduler_job_all WHERE id = ANY($1::bigint[]) AND status = 'SUCCEEDED'`,
          [ids],
        );
        return rows[0]!.n === ids.length;
      },
      30_000,
      "the timers fired",
    );
    const ended = await pool.query<{ id: string; at: number }>(
      `SELECT id, extract(epoch FROM finished_at)::float8 * 1000 AS at FROM "${schema}".scheduler_job_all WHERE id = ANY($1::bigint[])`,
      [ids],
    );
    const dueOf = new Map(due.rows.map((r) => [r.job_id, r.due]));
    const late = ended.rows.map((r) => r.at - dueOf.get(r.id)!).sort((a, b) => a - b);
    console.log(
      `timers across a restart: lateness ms min ${late[0]!.toFixed(0)}, max ${late.at(-1)!.toFixed(0)}`,
    );
    expect(late[0]).toBeGreaterThanOrEqual(-50);
    expect(late.at(-1)).toBeLessThanOrEqual(1000);
    for (const n of nodes) expect(n.err).not.toContain('"event":"fatal"');
  }, 120_000);
});
