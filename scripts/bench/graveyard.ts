/**
 * The graveyard benchmark (`npm run bench -- --graveyard`, or `npx tsx scripts/bench/graveyard.ts`):
 * what polling costs when vacuum cannot reap the claim index, with and without claim cursors.
 *
 * 1. Pins the xmin horizon: another connection opens a REPEATABLE READ transaction and takes its snapshot.
 * 2. Makes `deadTuples` dead entries in the claim index: PENDING rows (four priority levels, scheduled
 *    times shuffled against id order) inserted and then moved out of PENDING (SUCCEEDED), plus 100 live
 *    rows scheduled an hour ahead (so every level still exists). VACUUM VERBOSE confirms they cannot be
 *    removed yet.
 * 3. Measures, per statement the claimers actually send, the buffers of EXPLAIN (ANALYZE, BUFFERS) (run in
 *    a rolled-back transaction just before the real statement) and the real statement's wall time:
 *    idle polls over simulated minutes (a ManualClock drives the discovery cadence, so every full and
 *    floored pass is included) at several poll intervals, and the claim of fresh work above the graveyard.
 * 4. Checks that fresh work is picked up within the discovery cadence without a wakeup (real time).
 *
 * Use a database of its own: the pinned horizon holds back vacuum for every table in that database while
 * it runs. Run directly, it uses GRAVEYARD_DATABASE_URL, else postgres://postgres@127.0.0.1:5432/pawl_graveyard
 * (created when missing). Flags: --dead=N, --json.
 */
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { ManualClock, systemClock } from "../../src/core/clock.js";
import { JobStore } from "../../src/store/postgres-job-store.js";
import type { PostgresJobStore } from "../../src/store/postgres-job-store.js";
import { ClassicClaimer, type Claimer } from "../../src/store/claim/claimer.js";
import { CursorClaimer } from "../../src/store/claim/claim-cursor.js";
import { ensureDatabase } from "./lib/common.js";

/** Options of {@link runGraveyard}. */
export interface GraveyardOptions {
  databaseUrl: string;
  /** Dead tuples to create in the claim index. Default 200,000. */
  deadTuples?: number;
  /** Schema to (re)create. Default `pawl_graveyard`. */
  schema?: string;
  /** Classic idle polls measured for the median. Default 15. */
  samples?: number;
  /**
   * The simulated idle runs: poll interval, full discovery cadence and simulated minutes. Default: polls
   * every 100, 500 and 2000 ms for a minute with the default cadences, every 2000 ms for five minutes
   * with a 60 s full discovery cadence, and every 2000 ms for ten minutes with the default cadences (the
   * full pass backs off to its 60 s cap while it finds nothing).
   */
  idleRuns?: { pollIntervalMs: number; fullDiscoveryMs: number; minutes: number }[];
  /** Where the table goes. Default console.log; pass () => {} to stay quiet. */
  log?: (line: string) => void;
}

/** One measured statement shape. */
export interface Cost {
  /** Shared buffers hit (plus read) by the statement's execution, from EXPLAIN (ANALYZE, BUFFERS). */
  buffers: number;
  /** Real wall time of the statement, ms. */
  ms: number;
}

/** Idle polling over simulated minutes at one poll interval and full discovery cadence. */
export interface IdleRun {
  pollIntervalMs: number;
  fullDiscoveryMs: number;
  polls: number;
  classic: Cost;
  cursors: Cost & { statements: number; passes: Record<string, number> };
  /** classic per poll / cursors per poll. */
  bufferRatio: number;
  timeRatio: number;
}

/** What {@link runGraveyard} measured. */
export interface GraveyardResult {
  deadTuples: number;
  vacuum: string;
  loadAverage: string;
  statements: Record<string, Cost>;
  idle: IdleRun[];
  claim: { classic: Cost; cursors: Cost; limit: number };
  pickup: { withoutWakeupMs: number[]; withWakeupMs: number; discoveryMs: number; pollIntervalMs: number };
}

const types = ["grave"];
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

interface Sample {
  name: string;
  buffers: number;
  ms: number;
}

/** A pool stand-in that measures every statement before running it for real. */
function measuringPool(pool: pg.Pool, explain: pg.Client, samples: Sample[]): pg.Pool {
  const query = async (config: pg.QueryConfig | string, values?: unknown[]) => {
    const text = typeof config === "string" ? config : config.text;
    const vals = typeof config === "string" ? values : config.values;
    const name = typeof config === "string" ? "text" : (config.name ?? "text");
    await explain.query("BEGIN");
    let buffers = 0;
    try {
      const plan = await explain.query<{ "QUERY PLAN": [{ Plan: Record<string, number> }] }>(
        `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${text}`,
        vals,
      );
      const top = plan.rows[0]?.["QUERY PLAN"][0].Plan ?? {};
      buffers = (top["Shared Hit Blocks"] ?? 0) + (top["Shared Read Blocks"] ?? 0);
    } finally {
      await explain.query("ROLLBACK");
    }
    const t = performance.now();
    const res = await pool.query(config as pg.QueryConfig, values);
    samples.push({
      name: name.replace(/^pawl_[a-z0-9_]*?_(cursor_|claim_)/, "$1"),
      buffers,
      ms: performance.now() - t,
    });
    return res;
  };
  return new Proxy(pool, {
    get: (target, prop, receiver) => (prop === "query" ? query : Reflect.get(target, prop, receiver)),
  });
}

/** A small deterministic random source, so the jitter is the same every run. */
function seeded(seed = 42): () => number {
  let s = seed;
  return () => (s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
}

async function pinHorizon(url: string, table: string): Promise<pg.Client> {
  const pin = new pg.Client({ connectionString: url });
  await pin.connect();
  await pin.query("BEGIN ISOLATION LEVEL REPEATABLE READ");
  await pin.query(`SELECT count(*) FROM ${table}`); // takes the snapshot that holds the horizon
  return pin;
}

async function makeGraveyard(pool: pg.Pool, table: string, n: number): Promise<void> {
  const batch = 50_000;
  for (let from = 0; from < n; from += batch) {
    const count = Math.min(batch, n - from);
    await pool.query(
      `INSERT INTO ${table} (type, priority, scheduled_time)
       SELECT 'grave', (ARRAY[0, 10, 20, 50])[1 + (i % 4)], now() - random() * interval '1 hour'
       FROM generate_series(1, $1::int) i`,
      [count],
    );
    await pool.query(
      `UPDATE ${table} SET status = 'SUCCEEDED', finished_at = now(), attempts = 1 WHERE status = 'PENDING'`,
    );
  }
  await pool.query(
    `INSERT INTO ${table} (type, priority, scheduled_time)
     SELECT 'grave', (ARRAY[0, 10, 20, 50])[1 + (i % 4)], now() + interval '1 hour' FROM generate_series(1, 100) i`,
  );
}

async function vacuumVerbose(url: string, table: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  const notices: string[] = [];
  client.on("notice", (n) => notices.push(n.message ?? ""));
  await client.connect();
  try {
    await client.query(`VACUUM (VERBOSE) ${table}`);
  } finally {
    await client.end();
  }
  const lines = notices.flatMap((m) => m.split("\n"));
  return lines.find((l) => /dead but not yet removable|nonremovable/.test(l))?.trim() ?? lines.join(" | ");
}

async function idleRun(
  make: (store: PostgresJobStore) => Claimer & { poll?: CursorClaimer["poll"] },
  pool: pg.Pool,
  explain: pg.Client,
  schema: string,
  polls: number,
  advance: (ms: number) => void,
  intervalMs: number,
): Promise<{ samples: Sample[]; passes: Record<string, number> }> {
  const samples: Sample[] = [];
  const claimer = make(new JobStore(measuringPool(pool, explain, samples), schema));
  for (let i = 0; i < polls; i++) {
    const jobs = await claimer.claim(100, types);
    if (jobs.length > 0) throw new Error("the idle run claimed work: the graveyard setup is wrong");
    advance(intervalMs);
  }
  const d = claimer.describe() as { counters?: { passes: Record<string, number> } };
  return { samples, passes: d.counters?.passes ?? { classic: polls } };
}

const per = (samples: Sample[], polls: number): Cost => ({
  buffers: samples.reduce((a, s) => a + s.buffers, 0) / polls,
  ms: samples.reduce((a, s) => a + s.ms, 0) / polls,
});

/**
 * Runs the graveyard benchmark and returns (and prints) its numbers. Creates the database of
 * `databaseUrl` when it is missing, and (re)creates `schema` in it; give it a database of its own.
 *
 * @example
 * ```ts
 * const r = await runGraveyard({ databaseUrl: "postgres://postgres@127.0.0.1:5432/pawl_graveyard" });
 * r.idle[0]?.bufferRatio; // classic idle poll cost / cursor idle poll cost, per poll
 * ```
 */
export async function runGraveyard(options: GraveyardOptions): Promise<GraveyardResult> {
  const { databaseUrl: url, deadTuples = 200_000, schema = "pawl_graveyard", samples = 15 } = options;
  const runs = options.idleRuns ?? [
    { pollIntervalMs: 100, fullDiscoveryMs: 10_000, minutes: 1 },
    { pollIntervalMs: 500, fullDiscoveryMs: 10_000, minutes: 1 },
    { pollIntervalMs: 2000, fullDiscoveryMs: 10_000, minutes: 1 },
    { pollIntervalMs: 2000, fullDiscoveryMs: 60_000, minutes: 5 },
    // Long enough for the full pass to settle at its backed-off interval (60 s by default).
    { pollIntervalMs: 2000, fullDiscoveryMs: 10_000, minutes: 10 },
  ];
  const log = options.log ?? ((line: string) => console.log(line));
  await ensureDatabase(url);
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  const explain = new pg.Client({ connectionString: url });
  await explain.connect();
  let pin: pg.Client | null = null;
  try {
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    const store = new JobStore(pool, schema);
    await store.migrate();
    const table = store.tables.jobs;
    pin = await pinHorizon(url, table);
    await makeGraveyard(pool, table, deadTuples);
    const vacuum = await vacuumVerbose(url, table);
    await pool.query(`ANALYZE ${table}`);
    log(
      `graveyard: ${deadTuples.toLocaleString("en")} dead tuples under a pinned horizon; VACUUM VERBOSE: ${vacuum}`,
    );

    const base = { nodeId: "bench", boostIntervalMs: 15 * 60_000, withPayload: true };
    // Idle polls: classic (median of `samples`) and cursors over simulated minutes per idle run.
    const classicIdle = await idleRun(
      (s) => new ClassicClaimer({ ...base, store: s, clock: systemClock }),
      pool,
      explain,
      schema,
      samples,
      () => {},
      0,
    );
    const classic: Cost = {
      buffers: median(classicIdle.samples.map((s) => s.buffers)),
      ms: median(classicIdle.samples.map((s) => s.ms)),
    };
    const statements: Record<string, Cost> = { "classic poll (no cursors)": classic };
    const idle: IdleRun[] = [];
    for (const { pollIntervalMs: intervalMs, fullDiscoveryMs, minutes } of runs) {
      const clock = new ManualClock(0);
      const polls = Math.round((minutes * 60_000) / intervalMs);
      const run = await idleRun(
        (s) => new CursorClaimer({ ...base, store: s, clock, random: seeded(), fullDiscoveryMs }),
        pool,
        explain,
        schema,
        polls,
        (ms) => clock.advance(ms),
        intervalMs,
      );
      const cost = per(run.samples, polls);
      idle.push({
        pollIntervalMs: intervalMs,
        fullDiscoveryMs,
        polls,
        classic,
        cursors: { ...cost, statements: run.samples.length, passes: run.passes },
        bufferRatio: classic.buffers / Math.max(cost.buffers, 1e-9),
        timeRatio: classic.ms / Math.max(cost.ms, 1e-9),
      });
      for (const [name, label] of [
        ["cursor_full_full", "full discovery pass"],
        ["cursor_floored_full", "floored pass: window read, seek of known levels and claim (one statement)"],
        ["cursor_seek_full", "fast poll: seek past the cursors"],
      ] as const) {
        const xs = run.samples.filter((s) => s.name === name);
        if (xs.length > 0 && !statements[label]) {
          statements[label] = { buffers: median(xs.map((s) => s.buffers)), ms: median(xs.map((s) => s.ms)) };
        }
      }
    }

    // Claim cost: fresh due work above the graveyard, 100 per claim, classic and cursor seeks alternating.
    await pool.query(
      `INSERT INTO ${table} (type, priority, scheduled_time)
       SELECT 'grave', (ARRAY[0, 10, 20, 50])[1 + (i % 4)], now() - interval '1 second' + i * interval '1 microsecond'
       FROM generate_series(1, 3000) i`,
    );
    const claimSamples: Sample[] = [];
    const measured = new JobStore(measuringPool(pool, explain, claimSamples), schema);
    const clock = new ManualClock(0);
    const cursors = new CursorClaimer({ ...base, store: measured, clock, random: seeded() });
    const classicClaimer = new ClassicClaimer({ ...base, store: measured, clock });
    await cursors.claim(100, types); // the boot full pass sets the cursors
    const rounds = 10;
    for (let i = 0; i < rounds; i++) {
      claimSamples.length = 0;
      await classicClaimer.claim(100, types);
      const c = claimSamples.splice(0);
      await cursors.claim(100, types);
      const k = claimSamples.splice(0);
      (statements.__classicClaim ??= { buffers: 0, ms: 0 }).buffers += (c[0]?.buffers ?? 0) / rounds;
      statements.__classicClaim.ms += (c[0]?.ms ?? 0) / rounds;
      (statements.__cursorClaim ??= { buffers: 0, ms: 0 }).buffers +=
        k.reduce((a, s) => a + s.buffers, 0) / rounds;
      statements.__cursorClaim.ms += k.reduce((a, s) => a + s.ms, 0) / rounds;
    }
    const claim = { classic: statements.__classicClaim!, cursors: statements.__cursorClaim!, limit: 100 };
    // An empty seek: the fresh rows are gone, the cursors still stand (the poll that drops them).
    await pool.query(
      `UPDATE ${table} SET status = 'SUCCEEDED' WHERE status = 'PENDING' AND scheduled_time <= now()`,
    );
    claimSamples.length = 0;
    const cursorCount = cursors.state.cursors.size;
    await cursors.claim(100, types);
    const emptySeek = claimSamples.find((x) => x.name === "cursor_seek_full");
    delete statements.__classicClaim;
    delete statements.__cursorClaim;
    statements["fast poll: seek past the cursors (claims 100)"] = claim.cursors;
    if (emptySeek) statements[`fast poll: empty seek (${cursorCount} cursors)`] = emptySeek;

    const pickup = await pickupCheck(pool, schema, table);
    const loadAverage = (await import("node:os"))
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(" ");
    const result: GraveyardResult = { deadTuples, vacuum, loadAverage, statements, idle, claim, pickup };
    print(result, log);
    return result;
  } finally {
    if (pin) await pin.query("ROLLBACK").catch(() => {});
    await pin?.end().catch(() => {});
    await explain.end().catch(() => {});
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => {});
    await pool.end();
  }
}

/**
 * Real time: a cursor claimer polling every 100 ms in the background finds fresh work without a wakeup
 * within the discovery cadence (the empty seeks in between have dropped its cursors), and at its next poll
 * after a wakeup.
 */
async function pickupCheck(pool: pg.Pool, schema: string, table: string): Promise<GraveyardResult["pickup"]> {
  const pollIntervalMs = 100;
  const discoveryMs = 1000;
  await pool.query(
    `UPDATE ${table} SET status = 'SUCCEEDED' WHERE status IN ('PENDING', 'RUNNING') AND scheduled_time <= now()`,
  );
  const claimer = new CursorClaimer({
    store: new JobStore(pool, schema),
    nodeId: "pickup",
    boostIntervalMs: 0,
    withPayload: false,
    clock: systemClock,
    discoveryMs,
  });
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const found = new Map<string, number>();
  let stop = false;
  await claimer.claim(100, types); // boot: the first full pass
  const poller = (async () => {
    while (!stop) {
      const jobs = await claimer.claim(100, types);
      const at = performance.now();
      for (const j of jobs) found.set(j.id, at);
      await sleep(pollIntervalMs);
    }
  })();
  const once = async (wake: boolean): Promise<number> => {
    await sleep(300 + Math.random() * discoveryMs);
    const res = await pool.query<{ id: string }>(
      `INSERT INTO ${table} (type, priority) VALUES ('grave', 10) RETURNING id`,
    );
    const start = performance.now();
    if (wake) claimer.onWakeup();
    const id = res.rows[0]?.id ?? "";
    while (!found.has(id)) {
      if (performance.now() - start > 30_000) throw new Error("fresh work was not picked up in 30 s");
      await sleep(2);
    }
    return (found.get(id) ?? start) - start;
  };
  try {
    const withoutWakeupMs: number[] = [];
    for (let i = 0; i < 5; i++) withoutWakeupMs.push(await once(false));
    const withWakeupMs = await once(true);
    return { withoutWakeupMs, withWakeupMs, discoveryMs, pollIntervalMs };
  } finally {
    stop = true;
    await poller;
  }
}

function print(r: GraveyardResult, log: (line: string) => void): void {
  const n = (x: number, d = 0) =>
    x.toLocaleString("en", { maximumFractionDigits: d, minimumFractionDigits: d });
  const row = (cells: string[], widths: number[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join("  ");
  log(`load average: ${r.loadAverage}`);
  log("");
  log(row(["statement (median)", "buffer hits", "time ms"], [46, 12, 9]));
  for (const [name, c] of Object.entries(r.statements))
    log(row([name, n(c.buffers), n(c.ms, 2)], [46, 12, 9]));
  log(row(["idle poll with no cursor, nothing due", "0", "0 (no statement)"], [46, 12, 9]));
  log("");
  log("idle polls, simulated (a ManualClock drives the cadence), every discovery pass included (per poll):");
  const w = [22, 7, 14, 14, 8, 11, 11, 8, 30];
  log(
    row(
      [
        "poll every / full every",
        "polls",
        "classic hits",
        "cursor hits",
        "ratio",
        "classic ms",
        "cursor ms",
        "ratio",
        "cursor passes",
      ],
      w,
    ),
  );
  for (const i of r.idle) {
    const passes = Object.entries(i.cursors.passes)
      .map(([k, v]) => `${k} ${v}`)
      .join(", ");
    log(
      row(
        [
          `${i.pollIntervalMs} ms / ${i.fullDiscoveryMs / 1000}-${Math.max(60, i.fullDiscoveryMs / 1000)} s`,
          n(i.polls),
          n(i.classic.buffers),
          n(i.cursors.buffers, 1),
          `${n(i.bufferRatio, 1)}x`,
          n(i.classic.ms, 2),
          n(i.cursors.ms, 3),
          `${n(i.timeRatio, 1)}x`,
          passes,
        ],
        w,
      ),
    );
  }
  log("");
  log(
    `claim ${r.claim.limit} fresh jobs above the graveyard (mean of 10): classic ${n(r.claim.classic.buffers)} hits / ${n(r.claim.classic.ms, 2)} ms, ` +
      `cursor seek ${n(r.claim.cursors.buffers)} hits / ${n(r.claim.cursors.ms, 2)} ms`,
  );
  const p = r.pickup;
  log(
    `fresh work without a wakeup, polling every ${p.pollIntervalMs} ms: picked up in ${p.withoutWakeupMs.map((x) => n(x)).join(", ")} ms ` +
      `(discovery ${p.discoveryMs} ms); with a wakeup: ${n(p.withWakeupMs, 1)} ms`,
  );
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const url = process.env.GRAVEYARD_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/pawl_graveyard";
  const dead = Number(process.argv.find((a) => a.startsWith("--dead="))?.slice(7) ?? 200_000);
  const json = process.argv.includes("--json");
  runGraveyard({ databaseUrl: url, deadTuples: dead, ...(json ? { log: () => {} } : {}) }).then(
    (r) => {
      if (json) console.log(JSON.stringify(r, null, 2));
      process.exit(0);
    },
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
