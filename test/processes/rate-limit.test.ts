/**
 * The cluster rate-limit test (issue 14): three node processes share a limit of 50 starts per second on
 * the `rated` type, with a backlog larger than ten seconds of it. Checked on what the algorithm
 * guarantees, not on timing luck:
 * - no window of one second holds more than 50 starts, by the database's recorded start times (copied by
 *   a trigger from the sliding log, which prunes itself): the bound is exact there;
 * - the ten seconds from the first start hold at most 500 starts (ten windows), and, so the limit is not
 *   met by starving, at least 150 (a liveness floor, generous for a loaded machine);
 * - every rated job succeeds with one attempt (a refusal uses none);
 * - unlimited `work` jobs enqueued alongside are not held behind the rated backlog: the last of them
 *   finishes before the last rated job starts (the rated backlog takes 14 s by the limit itself, the
 *   work about a second alone), whatever the machine's load.
 * The handlers' own start times are compared with the recorded ones: that difference (admission to
 * start) is what separates the exact bound in database time from what a handler sees, and is printed.
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

const limit = 50;
const perMs = 1000;
const rated = 700;
const work = 1000;

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("rlc"));
  await installRecorders(pool, schema);
  const s = `"${schema}"`;
  await pool.query(`
    CREATE TABLE ${s}.rate_runs (job_id bigint NOT NULL, node_id text NOT NULL, handler_ms float8 NOT NULL);
    CREATE TABLE ${s}.rate_audit (key text, started_at timestamptz, job_id bigint);
    CREATE FUNCTION ${s}.rate_audit_fn() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN INSERT INTO ${s}.rate_audit VALUES (NEW.key, NEW.started_at, NEW.job_id); RETURN NEW; END $$;
    CREATE TRIGGER rate_audit AFTER INSERT ON ${s}.scheduler_rate_limit_start
      FOR EACH ROW EXECUTE FUNCTION ${s}.rate_audit_fn();`);
});
afterAll(async () => {
  await killAll(procs);
  await cleanup();
});

/** The most values in any window (t - ms, t], t at each value. `times` sorted. */
function busiest(times: readonly number[], ms: number): number {
  let most = 0;
  let lo = 0;
  for (let hi = 0; hi < times.length; hi++) {
    while ((times[lo] as number) <= (times[hi] as number) - ms) lo++;
    most = Math.max(most, hi - lo + 1);
  }
  return most;
}

const quantile = (sorted: readonly number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;

async function succeededWork(): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM "${schema}".scheduler_job_all WHERE type = 'work' AND status = 'SUCCEEDED'`,
  );
  return rows[0]!.n;
}

describe("rate limits across three node processes", () => {
  it(`at most ${limit} starts per second across the cluster; unlimited work at full speed`, async () => {
    await withDump(procs, async () => {
      for (const id of ["rate-a", "rate-b", "rate-c"]) {
        procs.push(new NodeProcess(id, schema, {}, { PAWL_RATE_LIMIT: JSON.stringify({ limit, perMs }) }));
      }
      await Promise.all(procs.map((p) => p.ready));

      // The baseline: the unlimited work alone.
      let t = Date.now();
      await insertWork(pool, schema, work, 0);
      await until(async () => (await succeededWork()) === work, 60_000, "the baseline work");
      const aloneMs = Date.now() - t;

      // The rated backlog (14 s of the limit), then the same unlimited work alongside it.
      await pool.query(
        `INSERT INTO "${schema}".scheduler_job_queue (type, payload) SELECT 'rated', '{}' FROM generate_series(1, $1)`,
        [rated],
      );
      t = Date.now();
      await insertWork(pool, schema, work, 0);
      await until(async () => (await succeededWork()) === 2 * work, 60_000, "the work beside rated jobs");
      const besideMs = Date.now() - t;

      await until(
        async () => (await statusCounts(pool, schema)).SUCCEEDED === 2 * work + rated,
        90_000,
        "every rated job",
        250,
      );

      const { rows } = await pool.query<{ started: number; handler: number | null; attempts: number }>(
        `SELECT (extract(epoch FROM a.started_at) * 1000)::float8 AS started, r.handler_ms AS handler,
                j.attempts
         FROM "${schema}".rate_audit a
         LEFT JOIN "${schema}".rate_runs r ON r.job_id = a.job_id
         JOIN "${schema}".scheduler_job_all j ON j.id = a.job_id
         ORDER BY a.started_at`,
      );
      const started = rows.map((r) => r.started);
      const t0 = started[0] as number;
      const inTenSeconds = started.filter((s) => s < t0 + 10 * perMs).length;
      const latencies = rows.map((r) => (r.handler ?? NaN) - r.started).sort((a, b) => a - b);
      const handlerTimes = rows.map((r) => r.handler ?? NaN).sort((a, b) => a - b);
      for (const p of procs) p.term();
      await Promise.all(procs.map((p) => p.exited));
      const refused = procs
        .flatMap((p) => p.stdout.filter((l) => l.includes('"event":"rate-limited"')))
        .map((l) => JSON.parse(l) as { local: number; store: number })
        .reduce((a, b) => ({ local: a.local + b.local, store: a.store + b.store }), { local: 0, store: 0 });
      const { rows: order } = await pool.query<{ lastWork: number; lastRatedStart: number }>(
        `SELECT (SELECT extract(epoch FROM max(finished_at)) * 1000 FROM "${schema}".scheduler_job_all
                 WHERE type = 'work')::float8 AS "lastWork",
                (SELECT extract(epoch FROM max(started_at)) * 1000 FROM "${schema}".rate_audit)::float8
                  AS "lastRatedStart"`,
      );
      const perNode = await pool.query<{ node_id: string; n: number }>(
        `SELECT node_id, count(*)::int AS n FROM "${schema}".rate_runs GROUP BY node_id ORDER BY node_id`,
      );
      console.log(
        JSON.stringify({
          recordedStarts: started.length,
          busiestSecondDb: busiest(started, perMs),
          busiestSecondHandlers: busiest(handlerTimes, perMs),
          startsInFirstTenSeconds: inTenSeconds,
          admissionToStartMs: {
            p50: quantile(latencies, 0.5),
            p99: quantile(latencies, 0.99),
            max: latencies[latencies.length - 1],
          },
          perNode: perNode.rows,
          refusals: refused,
          workAloneMs: aloneMs,
          workBesideRatedMs: besideMs,
          lastWorkBeforeLastRatedStartMs: order[0]!.lastRatedStart - order[0]!.lastWork,
        }),
      );

      // Exactly one recorded start per rated job (a refusal records none), each run with its first attempt.
      expect(started).toHaveLength(rated);
      expect(rows.every((r) => r.attempts === 1)).toBe(true);
      expect(new Set(rows.map((r) => r.handler === null)).has(true)).toBe(false);
      // The bound, exact in database time.
      expect(busiest(started, perMs)).toBeLessThanOrEqual(limit);
      expect(inTenSeconds).toBeLessThanOrEqual(10 * limit);
      // Not met by starving: the backlog keeps the limit well used (liveness, so a generous floor: 493 on a
      // quiet machine, 353 at a load of 12 on 2 cores).
      expect(inTenSeconds).toBeGreaterThanOrEqual(3 * limit);
      // Each refusal pushes its job to a later slot: a bounded number of them per job, no hot loop.
      expect(refused.local + refused.store).toBeLessThan(10 * rated);
      // Unlimited work beside the rated backlog is not held behind it: all of it finishes while rated jobs
      // still wait for their slots. Database times, not a wall-clock bound: beside took 0.8 s against 1.3 s
      // alone when quiet, but 6.5 s against 1.1 s (and 12.3 s against 5.0 s) under a loaded suite, so a
      // ratio bound failed on load alone; the rated backlog takes 14 s at the limit whatever the load.
      expect(order[0]!.lastWork).toBeLessThan(order[0]!.lastRatedStart);
    });
  }, 180_000);
});
