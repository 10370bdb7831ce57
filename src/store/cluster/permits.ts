/**
 * Cluster-wide resource permits: a row per held permit in scheduler_resource_permit. Acquiring takes a
 * transaction-scoped advisory lock on the resource, so the count-then-insert cannot race between nodes;
 * a permit row names its node, so a dead node's permits can be freed by orphan recovery.
 */
import type pg from "pg";
import { inHeldTransaction } from "../../db/held-client.js";
import type { Queryable, Tables } from "../../db/sql.js";
import { leasedSql } from "../jobs/lease-sql.js";

/**
 * Takes a permit of `resource` for `jobId` if fewer than `capacity` are held. Idempotent per job.
 * Returns whether the job holds a permit now. Permits of jobs no longer RUNNING are freed first.
 */
export async function acquirePermit(
  pool: pg.Pool,
  t: Tables,
  resource: string,
  jobId: string,
  nodeId: string,
  capacity: number,
): Promise<boolean> {
  return inHeldTransaction(pool, async (db) => {
    await db.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`pawl.permit.${t.schema}.${resource}`]);
    // A permit whose job is no longer RUNNING was leaked: its release failed (the database went away as
    // the attempt ended) and nothing retries it. Left alone it would hold capacity for as long as its node
    // lives, and enough of them saturate the resource for good; under the lock it is safe to free them.
    await db.query(
      `DELETE FROM ${t.permits} p WHERE p.resource = $1
       AND NOT EXISTS (SELECT 1 FROM ${t.jobs} j WHERE j.id = p.job_id AND ${leasedSql("j")})`,
      [resource],
    );
    // The job's own permit is not counted, so a job that holds one at capacity keeps it (idempotent).
    const res = await db.query(
      `INSERT INTO ${t.permits} (resource, job_id, node_id)
       SELECT $1, $2, $3
       WHERE (SELECT count(*) FROM ${t.permits} WHERE resource = $1 AND job_id <> $2) < $4
       ON CONFLICT (resource, job_id) DO UPDATE SET node_id = EXCLUDED.node_id
       RETURNING job_id`,
      [resource, jobId, nodeId, capacity],
    );
    return (res.rowCount ?? 0) > 0;
  });
}

/** Gives a job's permit back. */
export async function releasePermit(
  pool: pg.Pool,
  t: Tables,
  resource: string,
  jobId: string,
): Promise<void> {
  await pool.query(`DELETE FROM ${t.permits} WHERE resource = $1 AND job_id = $2`, [resource, jobId]);
}

/** Frees every permit a node holds (orphan recovery, startup cleanup); returns how many. */
export async function releaseNodePermits(db: Queryable, t: Tables, nodeId: string): Promise<number> {
  const res = await db.query(`DELETE FROM ${t.permits} WHERE node_id = $1`, [nodeId]);
  return res.rowCount ?? 0;
}

/** Permits held per resource. */
export async function permitCounts(pool: pg.Pool, t: Tables): Promise<Map<string, number>> {
  const res = await pool.query<{ resource: string; n: number }>(
    `SELECT resource, count(*)::int AS n FROM ${t.permits} GROUP BY resource`,
  );
  return new Map(res.rows.map((r) => [r.resource, r.n]));
}
