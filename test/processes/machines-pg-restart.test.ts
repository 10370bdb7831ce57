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
import { timerLateness } from "./machine-timers.js";

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
    const { min, max } = await timerLateness(pool, schema, ids, restart);
    console.log(`timers across a restart: lateness ms min ${min.toFixed(0)}, max ${max.toFixed(0)}`);
    expect(min).toBeGreaterThanOrEqual(-50);
    expect(max).toBeLessThanOrEqual(1000);
    for (const n of nodes) expect(n.err).not.toContain('"event":"fatal"');
  }, 120_000);
});
