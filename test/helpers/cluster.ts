/**
 * Helpers for the cluster tests: cluster services built on their own pool (as a node would build them,
 * without the job runtime), and raw inserts of node, job and permit rows in a given state.
 */
import pg from "pg";
import { systemClock, type Clock } from "../../src/core/clock.js";
import { ClusterServices } from "../../src/cluster/cluster-services.js";
import { resolveClusterOptions, type ClusterOptions } from "../../src/input/cluster-options.js";
import type { LagProbe } from "../../src/cluster/heartbeat.js";
import { PawlEventEmitter } from "../../src/core/events.js";
import { silentLogger, type Logger } from "../../src/core/logger.js";
import { PostgresJobStore } from "../../src/store/postgres-job-store.js";
import type { EnqueuedJob } from "../../src/store/jobs/enqueue-jobs.js";
import { databaseUrl } from "./db.js";

/** A fixed lag reading, for deterministic heartbeat intervals. */
export function fixedLag(ms = 0): LagProbe & { value: number } {
  return {
    value: ms,
    start() {},
    stop() {},
    read() {
      return this.value;
    },
  };
}

/** Services of one node on a pool of its own (close with `end()`). */
export function clusterNode(
  schema: string,
  nodeId: string,
  options: ClusterOptions = {},
  extra: {
    clock?: Clock;
    afterEnqueue?: (jobs: readonly EnqueuedJob[]) => void;
    lag?: LagProbe;
    logger?: Logger;
  } = {},
): {
  services: ClusterServices;
  events: PawlEventEmitter;
  pool: pg.Pool;
  store: PostgresJobStore;
  end: () => Promise<void>;
} {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 4 });
  pool.on("error", () => {});
  const events = new PawlEventEmitter();
  const store = new PostgresJobStore(pool, schema);
  const services = new ClusterServices({
    store,
    nodeId,
    concurrency: 4,
    transport: "none",
    options: resolveClusterOptions(options),
    events,
    logger: extra.logger ?? silentLogger,
    clock: extra.clock ?? systemClock,
    typeDefaults: () => undefined,
    maxPayloadBytes: 256 * 1024,
    lag: extra.lag ?? fixedLag(),
    ...(extra.afterEnqueue ? { afterEnqueue: extra.afterEnqueue } : {}),
  });
  return {
    services,
    events,
    pool,
    store,
    end: async () => {
      await services.stop().catch(() => {});
      await pool.end();
    },
  };
}

/** Inserts a node row whose last heartbeat was `ageMs` ago (database time). */
export async function insertNode(
  pool: pg.Pool,
  schema: string,
  nodeId: string,
  ageMs: number,
  info: object = {},
): Promise<void> {
  await pool.query(
    `INSERT INTO "${schema}".scheduler_node (node_id, heartbeat_ts, started_at, node_info)
     VALUES ($1, now() - $2::bigint * interval '1 millisecond', now() - interval '1 hour', $3::jsonb)
     ON CONFLICT (node_id) DO UPDATE SET heartbeat_ts = EXCLUDED.heartbeat_ts, node_info = EXCLUDED.node_info`,
    [nodeId, ageMs, JSON.stringify({ instance: `i-${nodeId}`, host: "elsewhere", pid: 1, ...info })],
  );
}

/**
 * Inserts `n` RUNNING jobs held by `nodeId` (leased: PENDING with picked_by set, migration 0008), picked
 * `pickedAgoMs` ago, on attempt `attempts` of `maxAttempts`.
 */
export async function insertRunning(
  pool: pg.Pool,
  schema: string,
  nodeId: string,
  n: number,
  opts: { attempts?: number; maxAttempts?: number; pickedAgoMs?: number; type?: string } = {},
): Promise<string[]> {
  const res = await pool.query<{ id: string }>(
    `INSERT INTO "${schema}".scheduler_job_queue (type, status, attempts, max_attempts, picked_by, picked_at)
     SELECT $1, 'PENDING', $2, $3, $4, now() - $5::bigint * interval '1 millisecond' FROM generate_series(1, $6)
     RETURNING id`,
    [opts.type ?? "work", opts.attempts ?? 1, opts.maxAttempts ?? 25, nodeId, opts.pickedAgoMs ?? 0, n],
  );
  return res.rows.map((r) => r.id).sort((a, b) => Number(a) - Number(b));
}

/**
 * Inserts `n` finished jobs of `status`, finished `agoMs` ago. `timePartitioned` sets the flag a move sets
 * (migration 0016), so the rows go to the time partitions; without it they go where a previous release's
 * rows go, the partition pruned row by row.
 */
export async function insertFinished(
  pool: pg.Pool,
  schema: string,
  status: "SUCCEEDED" | "CANCELED" | "DEAD",
  n: number,
  agoMs: number,
  opts: { timePartitioned?: boolean } = {},
): Promise<void> {
  await pool.query(
    // Finished rows live in the finished table, with ids from the live table's sequence (migration 0005).
    // The flag has no default: NULL, when unset, routes a row as leaving the column out does.
    `INSERT INTO "${schema}".scheduler_job_finished (id, type, status, attempts, finished_at, time_partitioned)
     SELECT nextval(pg_get_serial_sequence('"${schema}".scheduler_job_queue', 'id')), 'old', $1, 1,
            now() - $2::bigint * interval '1 millisecond', $4::boolean
     FROM generate_series(1, $3)`,
    [status, agoMs, n, opts.timePartitioned ?? null],
  );
}

/** Gives a job a permit of `resource` under `nodeId`. */
export async function insertPermit(
  pool: pg.Pool,
  schema: string,
  resource: string,
  jobId: string,
  nodeId: string,
): Promise<void> {
  await pool.query(
    `INSERT INTO "${schema}".scheduler_resource_permit (resource, job_id, node_id) VALUES ($1, $2, $3)`,
    [resource, jobId, nodeId],
  );
}

/** Job rows by id: status, attempts, picked_by and the errors' names and messages. */
export async function jobStates(pool: pg.Pool, schema: string, ids: readonly string[]) {
  const res = await pool.query<{
    id: string;
    status: string;
    attempts: number;
    picked_by: string | null;
    errors: { name: string; message: string; attempt: number }[];
  }>(
    `SELECT id, status, attempts, picked_by, errors FROM "${schema}".scheduler_job_all WHERE id = ANY($1::bigint[]) ORDER BY id`,
    [ids],
  );
  return res.rows;
}
