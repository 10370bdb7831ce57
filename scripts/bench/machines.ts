/**
 * `npx tsx scripts/bench/machines.ts [machines] [eventsEach]`: durable machines (issue 42).
 *
 * One node (concurrency 10, the postgres coordinator) runs `machines` (default 500) parked `counter`
 * machines; a client then sends `eventsEach` (default 4) events to each, 16 sends in flight:
 *
 * - events/s per node: events / (last event handled - first event sent), database clock;
 * - send -> transition latency, loaded: each event's `handled_at - sent_at` (the commit of its send to the
 *   commit of the transition it caused), p50 / p99;
 * - send -> transition latency, idle: 200 single sends, one at a time to a parked machine, each awaited
 *   until its transition committed, p50 / p99;
 * - WAL bytes per event: `pg_current_wal_lsn()` around the loaded phase (the whole cluster's WAL: run it on
 *   a database server of its own).
 *
 * Database: BENCH_DATABASE_URL, else the local `pawl_bench`. It runs from the sources (tsx).
 * BENCH_PLAIN_CLIENT=1: the sender is a plain `PawlClient` (no coordinator: its sends hint from SQL).
 */
import pg from "pg";
import { assign, setup } from "xstate";
import { createPawl, PawlClient } from "../../src/index.js";
import { walBytes } from "./lib/common.js";

const url = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/pawl_bench";
const schema = "bench_machines";
const machines = Number(process.argv[2] ?? 500);
const eventsEach = Number(process.argv[3] ?? 4);

const counter = setup({
  types: {} as { context: { n: number }; events: { type: "EV" } },
}).createMachine({
  id: "counter",
  context: { n: 0 },
  initial: "counting",
  states: { counting: { on: { EV: { actions: assign({ n: ({ context }) => context.n + 1 }) } } } },
});

const admin = new pg.Pool({ connectionString: url, max: 2 });
await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
const pawl = createPawl({ connectionString: url, schema, concurrency: 10, coordinator: "postgres" });
await pawl.migrate();
pawl.registerMachine("counter", counter);
pawl.on("error", () => {});
await pawl.start();
// The sender: a pawl instance with the postgres coordinator and no handlers (not started): its sends
// publish a wakeup hint through it; a plain PawlClient's (BENCH_PLAIN_CLIENT=1) hint goes out from SQL.
const client =
  process.env.BENCH_PLAIN_CLIENT === "1"
    ? new PawlClient({ connectionString: url, schema })
    : createPawl({ connectionString: url, schema, coordinator: "postgres" });
const s = `"${schema}"`;

const count = async (sql: string, args: unknown[] = []) =>
  Number((await admin.query<{ n: string }>(sql, args)).rows[0]!.n);
async function until(check: () => Promise<boolean>): Promise<void> {
  while (!(await check())) await new Promise((r) => setTimeout(r, 50));
}
const pct = (xs: number[], p: number) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};

const { rows } = await admin.query<{ id: string }>(
  `INSERT INTO ${s}.scheduler_job_queue (type, payload) SELECT 'counter', '{}'::jsonb FROM generate_series(1, $1) RETURNING id`,
  [machines],
);
const ids = rows.map((r) => r.id);
await until(
  async () =>
    (await count(`SELECT count(*) AS n FROM ${s}.scheduler_job_queue WHERE status = 'WAITING'`)) === machines,
);

// Loaded: every machine gets eventsEach events, 16 sends in flight.
const work = ids.flatMap((id) => Array.from({ length: eventsEach }, () => id));
const total = work.length;
const wal0 = await walBytes(admin);
let next = 0;
await Promise.all(
  Array.from({ length: 16 }, async () => {
    while (next < work.length) await client.send(work[next++]!, { type: "EV" });
  }),
);
await until(
  async () =>
    (await count(`SELECT count(*) AS n FROM ${s}.scheduler_machine_event WHERE status = 'consumed'`)) ===
    total,
);
await until(
  async () =>
    (await count(`SELECT count(*) AS n FROM ${s}.scheduler_job_queue WHERE status = 'WAITING'`)) === machines,
);
const wal1 = await walBytes(admin);
const loaded = await admin.query<{ ms: number; span: number }>(
  `SELECT extract(epoch FROM handled_at - sent_at) * 1000 AS ms,
          extract(epoch FROM (SELECT max(handled_at) - min(sent_at) FROM ${s}.scheduler_machine_event)) AS span
   FROM ${s}.scheduler_machine_event`,
);
const lat = loaded.rows.map((r) => Number(r.ms));
const span = Number(loaded.rows[0]!.span);

// Idle: one send at a time, each to a parked machine, awaited until its transition committed.
const idle: number[] = [];
for (let i = 0; i < 200; i++) {
  const id = ids[i % ids.length]!;
  const { seq } = await client.send(id, { type: "EV" });
  await until(
    async () =>
      (await count(
        `SELECT count(*) AS n FROM ${s}.scheduler_machine_event WHERE job_id = $1 AND seq = $2 AND status = 'consumed'`,
        [id, seq],
      )) === 1,
  );
  const r = await admin.query<{ ms: number }>(
    `SELECT extract(epoch FROM handled_at - sent_at) * 1000 AS ms FROM ${s}.scheduler_machine_event WHERE job_id = $1 AND seq = $2`,
    [id, seq],
  );
  idle.push(Number(r.rows[0]!.ms));
  await until(
    async () =>
      (await count(
        `SELECT count(*) AS n FROM ${s}.scheduler_job_queue WHERE id = $1 AND status = 'WAITING'`,
        [id],
      )) === 1,
  );
}

console.log(
  JSON.stringify(
    {
      machines,
      events: total,
      eventsPerSecond: Math.round(total / span),
      loadedLatencyMs: { p50: Math.round(pct(lat, 50)), p99: Math.round(pct(lat, 99)) },
      idleLatencyMs: { p50: Math.round(pct(idle, 50)), p99: Math.round(pct(idle, 99)) },
      walBytesPerEvent: Number((wal1 - wal0) / BigInt(total)),
    },
    null,
    2,
  ),
);
await pawl.stop();
await pawl.close();
await client.close();
await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
await admin.end();
