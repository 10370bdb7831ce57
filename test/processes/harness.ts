/**
 * Spawns and controls node processes (test/processes/node-process.ts) for the multi-process tests, and sets
 * up what they record into: `executions` (one row per handler run) and `successes` (one row per job that
 * became SUCCEEDED, written by a trigger, so a success recorded twice would show).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type pg from "pg";
import { JobStore } from "../../src/store/postgres-job-store.js";
import type { KeyCountDrift } from "../../src/store/operator/key-counts-sql.js";
import { databaseUrl } from "../helpers/db.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const tsx = join(root, "node_modules", ".bin", "tsx");
const script = join(root, "test", "processes", "node-process.ts");

/** Options every node of a test gets: short thresholds so the tests stay fast. */
export const fastCluster = {
  deadNodeThresholdMs: 3000,
  heartbeatIntervalMs: 500,
  orphanSweepIntervalMs: 250,
  pollIntervalMs: 50,
  completionFlushMs: 2,
  concurrency: 10,
  prefetch: 50,
  maxConnections: 5,
  // A node that keeps losing the race for work to its busier peers backs off its empty polls, by design
  // up to 30 s; capped here, so the tests that wait for every node to hold work do not wait that long.
  polling: { maxDelayMs: 250, deepIdleDelayMs: 250 },
};

/** A node process. */
export class NodeProcess {
  readonly child: ChildProcess;
  /** The node's own pid (tsx runs it as a child of its launcher). */
  pid = 0;
  readonly stdout: string[] = [];
  stderr = "";
  readonly ready: Promise<void>;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  exit: { code: number | null; signal: NodeJS.Signals | null } | null = null;

  constructor(
    readonly nodeId: string,
    schema: string,
    options: Record<string, unknown> = {},
    /** Extra environment (the fault tests: PAWL_FAULT_KIT, PAWL_RECORDS_URL, a DATABASE_URL of their own). */
    env: Record<string, string> = {},
  ) {
    this.child = spawn(tsx, [script], {
      cwd: root,
      env: {
        ...process.env,
        DATABASE_URL: databaseUrl,
        PAWL_SCHEMA: schema,
        PAWL_NODE_ID: nodeId,
        NODE_OPTIONS_JSON: JSON.stringify({ ...fastCluster, ...options }),
        ...env,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.exited = new Promise((resolve) =>
      this.child.once("exit", (code, signal) => {
        this.exit = { code, signal };
        resolve(this.exit);
      }),
    );
    this.ready = new Promise((resolve, reject) => {
      let buffer = "";
      this.child.stdout?.on("data", (chunk: Buffer) => {
        buffer += chunk.toString();
        let nl: number;
        while ((nl = buffer.indexOf("\n")) >= 0) {
          const line = buffer.slice(0, nl);
          buffer = buffer.slice(nl + 1);
          this.stdout.push(line);
          try {
            const msg = JSON.parse(line) as { event?: string; pid?: number };
            if (msg.event === "ready" && msg.pid) {
              this.pid = msg.pid;
              resolve();
            }
          } catch {
            // not ours
          }
        }
      });
      this.child.stderr?.on("data", (chunk: Buffer) => (this.stderr += chunk.toString()));
      void this.exited.then(({ code, signal }) =>
        reject(
          new Error(
            `node ${nodeId} exited before ready (code ${code}, signal ${signal}): ${this.stderr.slice(-2000)}`,
          ),
        ),
      );
    });
  }

  /** kill -9 of the node process itself. */
  kill9(): void {
    process.kill(this.pid, "SIGKILL");
  }

  /** SIGTERM to the node process: a graceful stop. */
  term(): void {
    process.kill(this.pid, "SIGTERM");
  }

  /** SIGUSR2: a node started with PAWL_PROBE_PEER_TYPE enqueues one probe job for its peer. */
  probe(): void {
    process.kill(this.pid, "SIGUSR2");
  }

  /** The stdout lines of one event, parsed (`claim`, `coordinator`, `wakeup`, `probe`...). */
  events<T extends { at: number }>(event: string): T[] {
    const marker = `"event":"${event}"`;
    return this.stdout.filter((l) => l.includes(marker)).map((l) => JSON.parse(l) as T);
  }

  /**
   * The sum of a metric's samples (all label sets) in the `metrics` line a fault-kit node prints when it
   * stops; 0 when the metric is absent.
   */
  metric(name: string): number {
    return this.stdout
      .filter((l) => l.includes('"event":"metrics"'))
      .flatMap((l) => (JSON.parse(l) as { text: string }).text.split("\n"))
      .filter((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`))
      .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(" ") + 1)), 0);
  }

  /** Whether the process is still running. */
  get alive(): boolean {
    return this.exit === null;
  }

  /** Lines of stderr that report a crash. */
  fatalLines(): string[] {
    return this.stderr.split("\n").filter((l) => l.includes('"event":"fatal"'));
  }
}

/** Creates the recording tables and the SUCCEEDED trigger in a migrated schema. */
export async function installRecorders(pool: pg.Pool, schema: string): Promise<void> {
  const s = `"${schema}"`;
  await pool.query(`
    CREATE TABLE ${s}.executions (
      job_id bigint NOT NULL, node_id text NOT NULL, attempt int NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp());
    CREATE TABLE ${s}.successes (job_id bigint NOT NULL, node_id text, at timestamptz NOT NULL DEFAULT clock_timestamp());
    CREATE FUNCTION ${s}.record_success() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO ${s}.successes (job_id, node_id) VALUES (NEW.id, NEW.picked_by);
      RETURN NULL;
    END $$;
    CREATE TRIGGER record_success AFTER UPDATE OF status ON ${s}.scheduler_job_queue
      FOR EACH ROW WHEN (NEW.status = 'SUCCEEDED' AND OLD.status IS DISTINCT FROM 'SUCCEEDED')
      EXECUTE FUNCTION ${s}.record_success();
    -- A completion moves the row into the finished table (migration 0005): that insert is the success.
    CREATE TRIGGER record_success AFTER INSERT ON ${s}.scheduler_job_finished
      FOR EACH ROW WHEN (NEW.status = 'SUCCEEDED')
      EXECUTE FUNCTION ${s}.record_success();
  `);
}

/** Inserts `n` `work` jobs in one statement (faster than the API for a big backlog). */
export async function insertWork(pool: pg.Pool, schema: string, n: number, sleepMs: number): Promise<void> {
  await pool.query(
    `INSERT INTO "${schema}".scheduler_job_queue (type, payload) SELECT 'work', jsonb_build_object('sleepMs', $1::int) FROM generate_series(1, $2)`,
    [sleepMs, n],
  );
}

/** Counts by status. */
export async function statusCounts(pool: pg.Pool, schema: string): Promise<Record<string, number>> {
  const { rows } = await pool.query<{ status: string; n: number }>(
    `SELECT status, count(*)::int AS n FROM "${schema}".scheduler_job_all GROUP BY status`,
  );
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

/** Polls `check` every `everyMs` until it returns true; a query error (database restarting) counts as false. */
export async function until(
  check: () => Promise<boolean>,
  timeoutMs: number,
  what: string,
  everyMs = 100,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let ok = false;
    try {
      ok = await check();
    } catch {
      ok = false;
    }
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** Execution and success statistics at the end of a run. */
export async function runStats(pool: pg.Pool, schema: string) {
  const s = `"${schema}"`;
  const { rows } = await pool.query<{
    jobs: number;
    executions: number;
    ran_twice: number;
    successes: number;
    success_twice: number;
    succeeded: number;
  }>(`
    SELECT (SELECT count(*) FROM ${s}.scheduler_job_all)::int AS jobs,
           (SELECT count(*) FROM ${s}.executions)::int AS executions,
           (SELECT count(*) FROM (SELECT job_id FROM ${s}.executions GROUP BY job_id HAVING count(*) > 1) d)::int AS ran_twice,
           (SELECT count(*) FROM ${s}.successes)::int AS successes,
           (SELECT count(*) FROM (SELECT job_id FROM ${s}.successes GROUP BY job_id HAVING count(*) > 1) d)::int AS success_twice,
           (SELECT count(*) FROM ${s}.scheduler_job_all WHERE status = 'SUCCEEDED')::int AS succeeded`);
  return rows[0]!;
}

/** kill -9 of every process still alive; resolves once all of them have exited. */
export async function killAll(procs: readonly NodeProcess[]): Promise<void> {
  for (const p of procs) if (p.alive) p.child.kill("SIGKILL");
  await Promise.all(procs.map((p) => p.exited));
}

/** What the processes printed, for a failing test's output. */
export function dump(procs: readonly NodeProcess[]): string {
  return procs
    .map(
      (p) =>
        `--- ${p.nodeId} (pid ${p.pid}, exit ${JSON.stringify(p.exit)})\n${p.stdout.join("\n")}\n${p.stderr.slice(-3000)}`,
    )
    .join("\n");
}

/** Runs a test body; on failure prints what the node processes said, then rethrows. */
export async function withDump(procs: readonly NodeProcess[], body: () => Promise<void>): Promise<void> {
  try {
    await body();
  } catch (error) {
    console.log(dump(procs));
    throw error;
  }
}

/**
 * The key-count invariant every reliability test ends with (`pawl doctor`, one snapshot): the concurrency
 * keys whose running count differs from their leased rows. A test expects it to be empty.
 */
export function keyCountDrift(pool: pg.Pool, schema: string): Promise<KeyCountDrift[]> {
  return new JobStore(pool, schema).checkKeyCounts();
}
