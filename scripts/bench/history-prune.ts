/**
 * `npx tsx scripts/bench/history-prune.ts [rows]`: what retention costs once SUCCEEDED rows are past it
 * (issue 28, migration 0016), pruned row by row against dropped with their time partition.
 *
 * 1. Row by row: `rows` (default 1,000,000) SUCCEEDED rows two days old in the partition pruned row by
 *    row, then the pruner's batches (1,000 per DELETE, as a node runs them) until none is left: time, WAL,
 *    the dead tuples left behind, and the VACUUM that clears them (time and WAL).
 * 2. Partitioned: the same rows in one time partition, then the history partitioner's drop of it: time and
 *    WAL (the count of its rows included).
 *
 * A `CHECKPOINT` before each measured step, so both pay their full-page images alike. Runs from the
 * sources (tsx), on BENCH_DATABASE_URL, else the local `pawl_bench`; the schema `bench_history` is
 * dropped at the end.
 */
import pg from "pg";
import { createPawl } from "../../src/index.js";
import { tablesFor } from "../../src/db/sql.js";
import { pruneBatch } from "../../src/store/cluster/prune-sql.js";
import { dropHistoryPartition, addHistoryPartition } from "../../src/store/cluster/history-partition-sql.js";
import { benchDatabaseUrl, walBytes } from "./lib/common.js";

const url = benchDatabaseUrl(process.env.BENCH_DATABASE_URL);
const schema = "bench_history";
const rows = Number(process.argv[2] ?? 1_000_000);
const day = 86_400_000;
const t = tablesFor(schema, false);
const pool = new pg.Pool({ connectionString: url, max: 2 });
const s = `"${schema}"`;

/** Inserts the rows, two days old, `partitioned` or not. */
async function insert(partitioned: boolean): Promise<void> {
  await pool.query(
    `INSERT INTO ${s}.scheduler_job_finished
       (id, type, status, attempts, picked_by, finished_at, updated_at, result, time_partitioned)
     SELECT nextval(pg_get_serial_sequence('${s}.scheduler_job_queue', 'id')), 'bench', 'SUCCEEDED', 1,
            'bench-node', now() - interval '2 days' + g * interval '1 millisecond', now(), 'null', $2
     FROM generate_series(1, $1) g`,
    [rows, partitioned],
  );
  await pool.query(`VACUUM (ANALYZE) ${s}.scheduler_job_finished`);
}

/** Runs `step` after a CHECKPOINT; its wall time (ms) and WAL bytes. */
async function measure(step: () => Promise<unknown>): Promise<{ ms: number; walBytes: number }> {
  await pool.query("CHECKPOINT");
  const wal0 = await walBytes(pool);
  const t0 = performance.now();
  await step();
  const ms = performance.now() - t0;
  return { ms: Math.round(ms), walBytes: Number((await walBytes(pool)) - wal0) };
}

async function deadTuples(): Promise<number> {
  // The statistics arrive asynchronously; a fresh snapshot after a short wait.
  await new Promise((r) => setTimeout(r, 1000));
  await pool.query("SELECT pg_stat_clear_snapshot()");
  const { rows: r } = await pool.query<{ n: string }>(
    `SELECT n_dead_tup AS n FROM pg_stat_user_tables WHERE relid = $1::regclass`,
    [t.finishedRows],
  );
  return Number(r[0]?.n ?? 0);
}

await pool.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
const p = createPawl({ connectionString: url, schema });
await p.migrate();
await p.close();
try {
  await insert(false);
  let deleted = 0;
  const rowByRow = await measure(async () => {
    for (;;) {
      const n = await pruneBatch(pool, t, "SUCCEEDED", day, 1000);
      deleted += n;
      if (n < 1000) break;
    }
  });
  const dead = await deadTuples();
  const vacuum = await measure(() => pool.query(`VACUUM ${t.finishedRows}`));

  // A day's range around the rows' finished_at (two days ago, spread over about 17 minutes per million).
  const start = new Date(Date.now() - 2 * day - 3_600_000);
  await addHistoryPartition(pool, t, start, new Date(start.getTime() + day));
  await insert(true);
  let dropped = 0;
  const drop = await measure(async () => {
    dropped = await dropHistoryPartition(pool, t, start);
  });

  const per = (b: number) => Math.round((b / rows) * 10) / 10;
  console.log(
    JSON.stringify({
      rows,
      rowByRow: { deleted, ...rowByRow, walBytesPerRow: per(rowByRow.walBytes), deadTuples: dead },
      vacuum: { ...vacuum, walBytesPerRow: per(vacuum.walBytes) },
      partitionDrop: { dropped, ...drop, walBytesPerRow: per(drop.walBytes) },
    }),
  );
} finally {
  await pool.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
  await pool.end();
}
