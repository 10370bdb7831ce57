/**
 * `npx tsx scripts/bench/wal-per-job.ts [jobs]`: what a job's claim and completion write (issue 16).
 *
 * 1. A drain of `jobs` (default 20,000) pre-inserted no-op jobs by one node at concurrency 10: WAL bytes
 *    per job from `pg_current_wal_lsn()` around the drain (the whole cluster's WAL: on a shared server,
 *    run it three times and take the smallest), and the job tables' `pg_stat_user_tables` counters
 *    (inserts, updates, HOT updates, deletes).
 * 2. One claim of 500 jobs and the completion of those 500, each under `EXPLAIN (ANALYZE, BUFFERS, WAL)`:
 *    WAL records, full-page images and bytes of that statement alone, exact whatever else runs.
 *
 * It runs from the sources (tsx), so it measures the checkout it is run in. `PAWL_BENCH_KEEP_SUCCEEDED=false`
 * runs the node with `keepSucceeded: false`. `PAWL_BENCH_FILLFACTOR=N` sets the live table's fillfactor
 * before the run (the TRUNCATE of each reset starts it on new pages), to compare settings. Database:
 * BENCH_DATABASE_URL, else the local `pawl_bench`.
 */
import pg from "pg";
import { createPawl } from "../../src/index.js";
import { claimJobs } from "../../src/store/claim/claim-jobs.js";
import { completeJobs } from "../../src/store/outcomes/finish-jobs.js";
import { tablesFor, type Queryable } from "../../src/db/sql.js";
import { walBytes } from "./lib/common.js";

const url = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/pawl_bench";
const schema = "bench_wal";
const jobs = Number(process.argv[2] ?? 20_000);
const keep = process.env.PAWL_BENCH_KEEP_SUCCEEDED !== "false";
const extra = keep ? {} : { keepSucceeded: false };

const admin = new pg.Pool({ connectionString: url, max: 2 });
const t = tablesFor(schema);

async function tables(): Promise<string[]> {
  const { rows } = await admin.query<{ name: string }>(
    `SELECT table_name AS name FROM information_schema.tables
     WHERE table_schema = $1 AND table_name IN ('scheduler_job_queue', 'scheduler_job_finished')`,
    [schema],
  );
  return rows.map((r) => `"${schema}".${r.name}`);
}

async function reset(n: number): Promise<void> {
  const fillfactor = process.env.PAWL_BENCH_FILLFACTOR;
  if (fillfactor) {
    await admin.query(`ALTER TABLE "${schema}".scheduler_job_queue SET (fillfactor = ${Number(fillfactor)})`);
  }
  await admin.query(`TRUNCATE ${(await tables()).join(", ")}`);
  await admin.query(
    `INSERT INTO "${schema}".scheduler_job_queue (type, payload, scheduled_time)
     SELECT 'noop', jsonb_build_object('i', g), now() - interval '1 second' FROM generate_series(1, $1) g`,
    [n],
  );
  for (const table of await tables()) await admin.query(`VACUUM ANALYZE ${table}`);
}

interface Counters {
  ins: number;
  upd: number;
  hot: number;
  del: number;
}
async function counters(): Promise<Record<string, Counters>> {
  const { rows } = await admin.query<{ relname: string; ins: string; upd: string; hot: string; del: string }>(
    `SELECT relname, n_tup_ins AS ins, n_tup_upd AS upd, n_tup_hot_upd AS hot, n_tup_del AS del
     FROM pg_stat_user_tables WHERE schemaname = $1 AND relname LIKE 'scheduler_job_%'`,
    [schema],
  );
  return Object.fromEntries(
    rows.map((r) => [r.relname, { ins: +r.ins, upd: +r.upd, hot: +r.hot, del: +r.del }]),
  );
}

async function drain(): Promise<void> {
  await reset(jobs);
  await admin.query("CHECKPOINT").catch(() => {});
  const before = await counters();
  const start = await walBytes(admin);
  const node = createPawl({ connectionString: url, schema, concurrency: 10, ...extra });
  let done = 0;
  const all = new Promise<void>((resolve) =>
    node.on("job:succeeded", () => {
      if (++done === jobs) resolve();
    }),
  );
  node.register("noop", () => undefined);
  await node.start();
  await all;
  await node.close();
  const bytes = Number((await walBytes(admin)) - start);
  // Statistics reach pg_stat_user_tables when a backend reports (at most once a second, and at exit).
  await new Promise((r) => setTimeout(r, 1500));
  const after = await counters();
  const delta = Object.fromEntries(
    Object.entries(after).map(([k, v]) => {
      const b = before[k] ?? { ins: 0, upd: 0, hot: 0, del: 0 };
      return [k, { ins: v.ins - b.ins, upd: v.upd - b.upd, hot: v.hot - b.hot, del: v.del - b.del }];
    }),
  );
  console.log(JSON.stringify({ drain: { jobs, walBytesPerJob: Math.round(bytes / jobs), tables: delta } }));
}

/** A Queryable that runs each statement under EXPLAIN (ANALYZE, BUFFERS, WAL) and keeps the plan. */
function explaining(plans: string[]): Queryable {
  return {
    query: (async (config: pg.QueryConfig) => {
      const res = await admin.query<{ "QUERY PLAN": string }>({
        text: `EXPLAIN (ANALYZE, BUFFERS, WAL, COSTS OFF) ${config.text}`,
        values: config.values,
      });
      plans.push(res.rows.map((r) => r["QUERY PLAN"]).join("\n"));
      return { rows: [], rowCount: 0, command: "EXPLAIN", oid: 0, fields: [] };
    }) as unknown as Queryable["query"],
  };
}

async function statements(): Promise<void> {
  const n = 500;
  await reset(n);
  await admin.query("CHECKPOINT").catch(() => {});
  const plans: string[] = [];
  await claimJobs(explaining(plans), t, {
    nodeId: "wal",
    limit: n,
    types: ["noop"],
    boostIntervalMs: 0,
    withPayload: true,
  });
  const { rows } = await admin.query<{ id: string }>(
    `SELECT id FROM "${schema}".scheduler_job_queue WHERE picked_by = 'wal'`,
  );
  const completions = rows.map((r) => ({ id: r.id, resultJson: null }));
  const complete = completeJobs as (...a: unknown[]) => Promise<unknown>;
  await complete(explaining(plans), t, "wal", completions, keep ? "keep" : "delete");
  const wal = (plan: string) => /WAL: (.*)/.exec(plan.split("\n").find((l) => l.includes("WAL:")) ?? "")?.[1];
  console.log(JSON.stringify({ claim500: wal(plans[0]!), complete500: wal(plans[1]!) }));
  if (process.env.WAL_PLANS) console.log(plans.join("\n\n"));
}

const setup = createPawl({ connectionString: url, schema, ...extra });
await setup.migrate();
await setup.close();
try {
  await drain();
  await statements();
} finally {
  await admin.end();
}
