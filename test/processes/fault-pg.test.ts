/**
 * PostgreSQL faults under running node processes, at every place pawl holds a connection. Destructive (it
 * restarts the database server), so it runs only with PAWL_DESTRUCTIVE_TESTS=1 (`npm run
 * test:destructive`, alone, after the main suite); PAWL_PG_CLUSTER and DATABASE_URL point it at a private
 * cluster instead (see pg-restart.test.ts).
 *
 * Two nodes run everything that checks a connection out or keeps one open: plain jobs, jobs holding a
 * resource permit, jobs admitted by a rate limit (its sliding log's transaction), chains, jobs parked on a signal, a recurring schedule firing every second, and the
 * postgres coordinator's LISTEN connection. Then:
 *   1. every 50 ms for FAULT_TERMINATE_MS (30 s), every backend of the nodes is terminated
 *      (`pg_terminate_backend`, filtered on an application_name unique to this run) while work flows;
 *   2. the server is fast-restarted FAULT_RESTARTS (20) times, the test waiting after each for a node to
 *      claim work again.
 * Every node process must survive (it exits 70 on an uncaughtException or unhandledRejection), every job
 * must succeed exactly once, and the nodes' metrics must show the connection faults they survived.
 */
import { execFile } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { createPawl, type Pawl } from "../../src/index.js";
import { databaseUrl } from "../helpers/db.js";
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
  keyCountDrift,
} from "./harness.js";

const enabled = process.env.PAWL_DESTRUCTIVE_TESTS === "1";
const [version, name] = (process.env.PAWL_PG_CLUSTER ?? "15 main").split(/\s+/) as [string, string];
const terminateMs = Number(process.env.FAULT_TERMINATE_MS ?? 30_000);
const restarts = Number(process.env.FAULT_RESTARTS ?? 20);

function pgctl(action: "restart" | "start", ...args: string[]): Promise<void> {
  return new Promise((resolve, reject) =>
    execFile(
      "pg_ctlcluster",
      ["--skip-systemctl-redirect", version, name, action, ...args],
      { timeout: 60_000 },
      (error, _out, stderr) =>
        error ? reject(new Error(`pg_ctlcluster ${action} failed: ${stderr || error.message}`)) : resolve(),
    ),
  );
}

/** `url` with one query parameter set. */
function withParam(url: string, key: string, value: string): string {
  const u = new URL(url);
  u.searchParams.set(key, value);
  return u.toString();
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let client: Pawl;
const procs: NodeProcess[] = [];

describe.skipIf(!enabled)("PostgreSQL faults at every checkout site (destructive)", () => {
  beforeAll(async () => {
    ({ schema, pool, cleanup } = await setupSchema("fpg"));
    await installRecorders(pool, schema);
    client = createPawl({ connectionString: databaseUrl, schema });
  });
  afterAll(async () => {
    await killAll(procs);
    // Whatever happened, the server is left running for whoever comes next.
    await pgctl("start").catch(() => {});
    await until(async () => (await pool.query("SELECT 1"), true), 60_000, "the database");
    await client?.close();
    await cleanup();
  });

  it("nodes survive terminated backends and fast restarts, lose nothing and run nothing twice", async () => {
    const appName = `pawlfault_${schema}`;
    const env = {
      DATABASE_URL: withParam(databaseUrl, "application_name", appName),
      PAWL_RECORDS_URL: withParam(databaseUrl, "application_name", `${appName}_rec`),
      PAWL_FAULT_KIT: "1",
    };
    const options = { coordinator: "postgres", resources: { slots: 3 }, deadNodeThresholdMs: 5000 };
    procs.push(new NodeProcess("fpg-a", schema, options, { ...env, PAWL_FAULT_SCHEDULE: "1" }));
    procs.push(new NodeProcess("fpg-b", schema, options, env));
    await Promise.all(procs.map((p) => p.ready));

    await withDump(procs, async () => {
      // Work of every kind, enqueued from the test's own connections (never terminated).
      const feed = async (n: number) => {
        await insertWork(pool, schema, n, 2);
        await client.enqueueMany(Array.from({ length: n / 4 }, () => ({ type: "pwork", payload: {} })));
        await client.enqueueMany(Array.from({ length: n / 4 }, () => ({ type: "rwork", payload: {} })));
        await client.chain([{ type: "work" }, { type: "work" }, { type: "work" }]);
        await client.enqueue("sig", {});
      };
      const signalWaiting = async () => {
        const { rows } = await pool.query<{ id: string }>(
          `SELECT id FROM "${schema}".scheduler_job_all WHERE type = 'sig' AND status = 'WAITING'`,
        );
        for (const r of rows) await client.signal(r.id);
      };

      // 1. Terminated backends while work flows.
      let terminated = 0;
      let rounds = 0;
      const end = Date.now() + terminateMs;
      while (Date.now() < end) {
        if (rounds % 10 === 0) {
          await feed(40);
          await signalWaiting();
        }
        const { rows } = await pool.query<{ n: number }>(
          `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))::int AS n
           FROM pg_stat_activity WHERE application_name = $1`,
          [appName],
        );
        terminated += rows[0]!.n;
        rounds++;
        await sleep(50);
      }
      const terminateEnd = Date.now();

      // 2. Fast restarts; after each, work must be claimed again.
      const pickupMs: number[] = [];
      const claimsAfter = (t: number) =>
        procs.some((p) =>
          p.stdout.some((l) => l.includes('"event":"claim"') && (JSON.parse(l) as { at: number }).at > t),
        );
      const firstClaimAfter = (t: number) =>
        Math.min(
          ...procs.flatMap((p) =>
            p.stdout
              .filter((l) => l.includes('"event":"claim"'))
              .map((l) => (JSON.parse(l) as { at: number }).at)
              .filter((at) => at > t),
          ),
        );
      await until(async () => claimsAfter(terminateEnd), 30_000, "a claim after the terminate loop");
      pickupMs.push(firstClaimAfter(terminateEnd) - terminateEnd);
      for (let i = 0; i < restarts; i++) {
        await pgctl("restart", "-m", "fast");
        const up = Date.now();
        await until(async () => (await feed(8), true), 30_000, "the database after a restart");
        await until(async () => claimsAfter(up), 30_000, `a claim after restart ${i + 1}`, 20);
        pickupMs.push(firstClaimAfter(up) - up);
      }

      // Everything finishes: the schedule stops, the parked jobs are signaled.
      await until(async () => (await client.unschedule("fault-tick"), true), 30_000, "unschedule");
      let counts: Record<string, number> = {};
      await until(
        async () => {
          await signalWaiting();
          counts = await statusCounts(pool, schema);
          return Object.keys(counts).every((s) => s === "SUCCEEDED");
        },
        120_000,
        "every job to succeed",
        250,
      ).catch(async (error: unknown) => {
        const { rows } = await pool.query(
          `SELECT type, status, count(*)::int AS n, max(attempts) AS attempts, min(scheduled_time) AS due,
                  max(errors::text) AS errors
           FROM "${schema}".scheduler_job_all WHERE status <> 'SUCCEEDED' GROUP BY 1, 2`,
        );
        throw new Error(`${String(error)}: ${JSON.stringify(counts)} ${JSON.stringify(rows).slice(0, 3000)}`);
      });

      const stats = await runStats(pool, schema);
      for (const p of procs) p.term();
      const exits = await Promise.all(procs.map((p) => p.exited));
      const metric = (name: string) =>
        procs
          .flatMap((p) => p.stdout.filter((l) => l.includes('"event":"metrics"')))
          .flatMap((l) => (JSON.parse(l) as { text: string }).text.split("\n"))
          .filter((l) => l.startsWith(name))
          .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(" ") + 1)), 0);
      const dbErrors = metric("pawl_database_connection_errors_total");
      const disconnects = metric("pawl_coordinator_disconnects_total");
      const errorLines = procs.map(
        (p) => p.stderr.split("\n").filter((l) => l.includes('"event":"error"')).length,
      );
      console.log(
        [
          `faults: ${terminated} backends terminated in ${rounds} rounds over ${terminateMs} ms; ${restarts} fast restarts`,
          `jobs ${stats.jobs}, succeeded ${stats.succeeded}, successes ${stats.successes}, success twice ${stats.success_twice}, executions ${stats.executions}, ran twice ${stats.ran_twice}`,
          `first claim after each fault (ms): ${pickupMs.join(" ")}; longest ${Math.max(...pickupMs)}`,
          `metrics: database_connection_errors_total ${dbErrors}, coordinator_disconnects_total ${disconnects}; error lines ${errorLines.join(" ")}`,
          `exits: ${JSON.stringify(exits)}`,
        ].join("\n"),
      );

      for (const p of procs) expect(p.fatalLines(), p.stderr.slice(-3000)).toEqual([]);
      expect(exits.map((e) => e.code)).toEqual([0, 0]);
      expect(terminated).toBeGreaterThan(0);
      expect(stats.success_twice).toBe(0);
      expect(stats.successes).toBe(stats.jobs);
      expect(stats.succeeded).toBe(stats.jobs);
      expect(Math.max(...pickupMs)).toBeLessThan(10_000);
      expect(dbErrors).toBeGreaterThan(0);
      expect(disconnects).toBeGreaterThan(0);
      expect(await keyCountDrift(pool, schema)).toEqual([]);
    });
  }, 600_000);
});
