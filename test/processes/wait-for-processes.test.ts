/**
 * waitFor across two processes (issue 11's acceptance): a node process (node-process.ts, outcome kit)
 * runs 1,000 jobs that end three ways (700 SUCCEEDED with a result, 200 DEAD, 100 CANCELED by this
 * process while pending or running), while this process holds 1,000 concurrent waiters on a bare
 * PawlClient with the postgres coordinator. Every waiter must resolve with its own job's outcome.
 *
 * The same workload runs first without waiters, and the test prints the database load the waiters add:
 * every statement the waiting client sent (its pool is counted: waitFor's batched reads; its one LISTEN
 * connection is not a pool query) per second of the wait, beside the database-wide commit rate of both runs
 * (pg_stat_database, which includes whatever else runs on the machine). The bound checked: the waiters'
 * statements stay a small fraction of one per waiter.
 */
import { performance } from "node:perf_hooks";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PawlClient, type Job } from "../../src/index.js";
import { databaseUrl } from "../helpers/db.js";
import { setupSchema } from "../helpers/pawl.js";
import { NodeProcess, statusCounts, until, withDump } from "./harness.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let node: NodeProcess;
let producer: PawlClient;
let waiter: PawlClient;
let waiterPool: pg.Pool;
let waiterQueries = 0;

const total = 1_000;
type Kind = "ok" | "fail" | "hold";
const expected: Record<Kind, Job["status"]> = { ok: "SUCCEEDED", fail: "DEAD", hold: "CANCELED" };
const plan: Kind[] = Array.from({ length: total }, (_, i) =>
  i % 10 < 7 ? "ok" : i % 10 < 9 ? "fail" : "hold",
);

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("wfproc"));
  node = new NodeProcess(
    `${schema}-node`,
    schema,
    { coordinator: "postgres", concurrency: 20, prefetch: 100, schema },
    { PAWL_OUTCOME_KIT: "1" },
  );
  await node.ready;
  producer = new PawlClient({ connectionString: databaseUrl, schema, coordinator: "none" });
  // The waiting client's pool counts every statement it runs.
  waiterPool = new pg.Pool({ connectionString: databaseUrl, max: 4 });
  waiterPool.on("error", () => {});
  const query = waiterPool.query.bind(waiterPool) as (...args: unknown[]) => Promise<unknown>;
  (waiterPool as unknown as { query: (...args: unknown[]) => Promise<unknown> }).query = (...args) => {
    waiterQueries++;
    return query(...args);
  };
  // The postgres coordinator's LISTEN connection goes to the pool's database (read from its settings).
  waiter = new PawlClient({
    schema,
    pool: waiterPool,
    coordinator: "postgres",
  });
}, 60_000);

afterAll(async () => {
  await waiter?.close();
  await waiterPool?.end();
  await producer?.close();
  if (node?.alive) {
    node.term();
    await node.exited;
  }
  await cleanup();
}, 60_000);

async function commits(): Promise<number> {
  const { rows } = await pool.query<{ n: string }>(
    "SELECT xact_commit::text AS n FROM pg_stat_database WHERE datname = current_database()",
  );
  return Number(rows[0]!.n);
}

async function finalCount(): Promise<number> {
  const c = await statusCounts(pool, schema);
  return (c.SUCCEEDED ?? 0) + (c.DEAD ?? 0) + (c.CANCELED ?? 0);
}

/**
 * Enqueues the 1,000 jobs, cancels the holds once one runs, and waits until all are final (polled from
 * this process every 100 ms in both runs), with 1,000 waiters or none. Returns the jobs, the waiters'
 * outcomes, and the wait's duration, waiter statements and database-wide commits.
 */
async function run(withWaiters: boolean) {
  const done0 = await finalCount();
  const jobs = await producer.enqueueMany(
    // A bare client knows no type's defaults: the failing type's single attempt is given here.
    plan.map((kind, i) =>
      kind === "ok"
        ? { type: "outcome.ok", payload: { i, sleepMs: 20 } }
        : { type: `outcome.${kind}`, payload: { i }, ...(kind === "fail" ? { maxAttempts: 1 } : {}) },
    ),
  );
  const holds = jobs.filter((_, i) => plan[i] === "hold").map((j) => j.id);
  const queries0 = waiterQueries;
  const commits0 = await commits();
  const t0 = performance.now();
  const resolvedAt: number[] = [];
  const waits = withWaiters
    ? jobs.map((j) =>
        waiter.waitFor(j, { timeoutMs: 120_000 }).then((job) => {
          resolvedAt.push(performance.now() - t0);
          return job;
        }),
      )
    : [];
  // A hold occupies its slot until canceled: cancel them all as soon as one runs (the others while PENDING).
  await until(
    async () =>
      Number(
        (
          await pool.query<{ n: string }>(
            `SELECT count(*) AS n FROM "${schema}".scheduler_job_all WHERE id = ANY($1::bigint[]) AND status = 'RUNNING'`,
            [holds],
          )
        ).rows[0]!.n,
      ) > 0,
    60_000,
    "a hold job to run",
    50,
  );
  for (const id of holds) await producer.cancel(id, "test cancels its holds");
  await until(async () => (await finalCount()) - done0 === total, 90_000, "every job final", 100).catch(
    async (error: Error) => {
      throw new Error(`${error.message}: ${JSON.stringify(await statusCounts(pool, schema))}`);
    },
  );
  const outcomes = await Promise.all(waits);
  const ms = performance.now() - t0;
  resolvedAt.sort((a, b) => a - b);
  const median = Math.round(resolvedAt[Math.floor(resolvedAt.length / 2)] ?? 0);
  return {
    jobs,
    outcomes,
    ms,
    median,
    queries: waiterQueries - queries0,
    commits: (await commits()) - commits0,
  };
}

describe("waitFor across two processes", () => {
  it("1,000 waiters on 1,000 jobs resolve with the right outcomes, at a small added load", async () => {
    await withDump([node], async () => {
      const without = await run(false);
      expect(without.queries).toBe(0);

      const withW = await run(true);
      expect(withW.outcomes).toHaveLength(total);
      withW.outcomes.forEach((job, i) => {
        expect(job.id).toBe(withW.jobs[i]!.id);
        expect(job.status).toBe(expected[plan[i]!]);
        if (plan[i] === "ok") expect(job.result).toEqual({ i });
      });
      const counts = { SUCCEEDED: 0, DEAD: 0, CANCELED: 0 } as Record<string, number>;
      for (const j of withW.outcomes) counts[j.status] = (counts[j.status] ?? 0) + 1;
      expect(counts).toEqual({ SUCCEEDED: 700, DEAD: 200, CANCELED: 100 });

      const perS = (n: number, ms: number) => Math.round((n / ms) * 1000 * 10) / 10;
      console.log(
        JSON.stringify({
          waitFor: "1000 waiters, 2 processes",
          without: { ms: Math.round(without.ms), dbCommitsPerS: perS(without.commits, without.ms) },
          with: {
            ms: Math.round(withW.ms),
            medianResolveMs: withW.median,
            waiterStatements: withW.queries,
            waiterStatementsPerS: perS(withW.queries, withW.ms),
            dbCommitsPerS: perS(withW.commits, withW.ms),
          },
        }),
      );
      // Batched: a statement per wake-up or poll tick, never one per waiter.
      expect(withW.queries).toBeGreaterThan(0);
      expect(withW.queries).toBeLessThan(total / 5);
    });
  }, 240_000);
});
