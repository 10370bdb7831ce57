/**
 * One point of a curve (scripts/bench/curves.ts), in its own process: how fast a system runs `jobs` jobs
 * when the tables around them are not empty.
 *
 * - `backlog`: that many more due jobs are inserted with them, behind them in the claim order; the window
 *   closes when `jobs` handlers have succeeded, so the rate is that of the first `jobs` jobs of a backlog
 *   of `jobs + backlog` (the question "does the claim slow down as the backlog grows").
 * - `finishedRows` (pawl only): the finished table holds that many SUCCEEDED rows, kept as history.
 * - `payloadBytes`: each job's payload carries that many more bytes.
 * - `queues` (pawl only): the jobs are spread over that many queues. graphile-worker has no such axis: a
 *   named queue there runs its jobs one at a time.
 *
 * - `processes`: the jobs are run by that many node processes (this one and `processes - 1` helpers it
 *   forks, each with `concurrency` slots); the window closes when the database shows every job completed.
 *
 * Every job that ran is counted: a second success of one job (in any process) is a duplicate, reported,
 * never hidden.
 */
import { fork, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { childInput, childMain, closeWindow, openWindow } from "./lib/child.js";
import { perJob } from "./lib/cpu-meter.js";
import { databaseName, deferred, msBetween, nowNs, waitUntil, withTimeout } from "./lib/common.js";
import { GRAPHILE_SCHEMA } from "./systems/graphile.js";
import { PAWL_SCHEMA } from "./systems/pawl.js";
import { loadSystem, type SystemName } from "./systems/types.js";

/** One point. */
export interface CurveDrainInput {
  system: SystemName;
  url: string;
  jobs: number;
  concurrency: number;
  backlog: number;
  finishedRows: number;
  payloadBytes: number;
  queues: number;
  /** Node processes (default 1); more than one makes the window close on the database's count. */
  processes?: number;
  /** `prepare` sets the tables up and exits; the default measures a point already prepared. */
  phase?: "prepare" | "measure";
}

/** What one point measured. */
export interface CurveDrainResult {
  jobsPerSecond: number;
  seconds: number;
  duplicates: number;
  /** CPU of the measuring process per job (µs); null when several processes ran the jobs. */
  nodeUs: number | null;
  /** CPU of the bench database's backends per job (µs). */
  dbUs: number;
  /** The rest of the machine meanwhile, as a share of its cores. */
  otherLoadPct: number;
}

/** The job table of a system, for the payload and queue set-up statements. */
function jobTable(system: SystemName): string {
  return system === "pawl" ? `"${PAWL_SCHEMA}".scheduler_job_queue` : `"${GRAPHILE_SCHEMA}"._private_jobs`;
}

/** Fills pawl's finished table with `n` SUCCEEDED rows, finished now (inside any retention), 1M per statement. */
async function fillFinished(db: pg.Pool, n: number): Promise<void> {
  const s = `"${PAWL_SCHEMA}"`;
  for (let done = 0; done < n; done += 1_000_000) {
    const count = Math.min(1_000_000, n - done);
    await db.query(
      `INSERT INTO ${s}.scheduler_job_finished (id, type, payload, status, scheduled_time, finished_at, attempts)
       SELECT nextval(pg_get_serial_sequence('${s}.scheduler_job_queue', 'id')), 'history',
              jsonb_build_object('i', g), 'SUCCEEDED', now(), now(), 1
       FROM generate_series(1, $1::int) g`,
      [count],
    );
  }
  await db.query(`VACUUM ANALYZE ${s}.scheduler_job_finished`);
}

/**
 * The point's tables, set up in a process of their own (`phase: "prepare"`), which exits before the
 * measuring process starts. A set-up takes from a second to minutes (10,000,000 finished rows), and a
 * process that waited that long runs its drain slower than a fresh one (a 60-second sleep alone cost 1.5x
 * the node CPU per job on the project's machine): measured in the process that did the set-up, the
 * finished-rows axis showed that wait, not the rows.
 */
async function prepare(input: CurveDrainInput): Promise<null> {
  if (input.system !== "pawl" && (input.finishedRows > 0 || input.queues > 1)) {
    throw new Error(`${input.system}: the finished-rows and queues axes are pawl's only`);
  }
  const system = await loadSystem(input.system, { url: input.url });
  const admin = new pg.Pool({ connectionString: input.url, max: 2 });
  try {
    await system.reset();
    const total = input.jobs + input.backlog;
    await system.preinsert(0, total);
    if (input.payloadBytes > 0) {
      // pawl's payload is jsonb, graphile-worker's json.
      const cast = input.system === "pawl" ? "jsonb" : "json";
      await admin.query(
        `UPDATE ${jobTable(input.system)}
         SET payload = (payload::jsonb || jsonb_build_object('pad', repeat('x', $1::int)))::${cast}`,
        [input.payloadBytes],
      );
    }
    if (input.queues > 1) {
      await admin.query(`UPDATE ${jobTable("pawl")} SET queue = 'q' || (id % $1::int)`, [input.queues]);
    }
    if (input.finishedRows > 0) await fillFinished(admin, input.finishedRows);
    await system.vacuum();
    // Write the set-up's dirty pages out now: otherwise the checkpointer flushes them (gigabytes after a
    // fill of 10,000,000 finished rows) inside the measured window, as "other load" (62% of the machine
    // in the run that showed it). Needs superuser or pg_checkpoint; without, the window is as before.
    await admin.query("CHECKPOINT").catch(() => {});
    return null;
  } finally {
    await system.close();
    await admin.end();
  }
}

/** The timed drain of a point whose tables {@link prepare} set up. */
async function measure(input: CurveDrainInput): Promise<CurveDrainResult> {
  const system = await loadSystem(input.system, { url: input.url });
  try {
    const total = input.jobs + input.backlog;
    const processes = input.processes ?? 1;
    const succeeded = new Uint8Array(total);
    let done = 0;
    let duplicates = 0;
    const enough = deferred<void>();
    const handler = (i: number) => {
      if (succeeded[i] === 1) {
        duplicates++;
        return;
      }
      succeeded[i] = 1;
      if (++done === input.jobs) enough.resolve();
    };
    const helpers = await Promise.all(Array.from({ length: processes - 1 }, () => startHelper(input)));
    await openWindow(databaseName(input.url));
    const cpu0 = process.cpuUsage();
    const t0 = nowNs();
    for (const h of helpers) h.send("go");
    const workers = await system.startWorkers({ concurrency: input.concurrency, handler, mode: "drain" });
    if (input.processes === undefined) {
      await withTimeout(enough.promise, 1_800_000, `${input.system}: ${input.jobs} jobs to succeed`);
    } else {
      // Several processes: done means done in the database (remaining counts the backlog too).
      await waitUntil(
        async () => (await system.remaining()) <= input.backlog,
        `${input.system}: the jobs to complete`,
        {
          everyMs: 5,
          timeoutMs: 1_800_000,
        },
      );
    }
    const t1 = nowNs();
    const node = process.cpuUsage(cpu0);
    const cpu = await closeWindow();
    await workers.stop();
    for (const ids of await Promise.all(helpers.map(stopHelper))) {
      for (const i of ids) {
        if (succeeded[i] === 1) duplicates++;
        else succeeded[i] = 1;
      }
    }
    const seconds = msBetween(t0, t1) / 1000;
    return {
      jobsPerSecond: input.jobs / seconds,
      seconds,
      duplicates,
      ...perJob(cpu, node, input.jobs),
      // Several processes ran the jobs: this one's CPU is only part of it.
      ...(processes === 1 ? {} : { nodeUs: null }),
    };
  } finally {
    await system.close();
  }
}

type HelperMessage = { kind: "ready" } | { kind: "ids"; ids: number[] };

/** Forks a helper node process (this file, role `helper`) and resolves once its system is loaded. */
function startHelper(input: CurveDrainInput): Promise<ChildProcess> {
  const child = fork(fileURLToPath(import.meta.url), [JSON.stringify(input), "helper"], {
    execArgv: process.execArgv,
    stdio: ["ignore", 2, "inherit", "ipc"],
  });
  return new Promise((resolve, reject) => {
    child.once("message", (m) =>
      (m as HelperMessage).kind === "ready" ? resolve(child) : reject(new Error("helper")),
    );
    child.once("exit", (code) => reject(new Error(`a helper process exited (${code}) before it was ready`)));
  });
}

/** Stops a helper and resolves with the ids its handlers ran. */
function stopHelper(child: ChildProcess): Promise<number[]> {
  return new Promise((resolve) => {
    child.on("message", (m) => {
      if ((m as HelperMessage).kind === "ids") resolve((m as Extract<HelperMessage, { kind: "ids" }>).ids);
    });
    child.send("stop");
  });
}

/** A helper: starts its node on "go", reports the ids it ran on "stop", then exits. */
async function helper(input: CurveDrainInput): Promise<void> {
  const system = await loadSystem(input.system, { url: input.url });
  const ids: number[] = [];
  let workers: Awaited<ReturnType<typeof system.startWorkers>> | null = null;
  process.on("message", (m) => {
    if (m === "go") {
      void system
        .startWorkers({ concurrency: input.concurrency, handler: (i) => void ids.push(i), mode: "drain" })
        .then((w) => (workers = w));
    } else if (m === "stop") {
      void (async () => {
        await workers?.stop();
        await system.close();
        process.send!({ kind: "ids", ids } satisfies HelperMessage, () => process.exit(0));
      })();
    }
  });
  process.send!({ kind: "ready" } satisfies HelperMessage);
}

if (process.argv[3] === "helper") void helper(childInput<CurveDrainInput>());
else {
  const input = childInput<CurveDrainInput>();
  childMain(() => (input.phase === "prepare" ? prepare(input) : measure(input)));
}
