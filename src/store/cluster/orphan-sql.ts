/**
 * Orphan recovery on scheduler_job_queue: RUNNING (leased) rows whose node stopped beating go back to
 * PENDING with their lease cleared, the attempt counted as failed with a `NodeLostError` (or DEAD, moved
 * to the finished table, when it was the last attempt), so a job that keeps killing nodes ends in the dead
 * letter queue instead of looping. A recovered job keeps its scheduled time: it was due when it was
 * claimed, so it is due at once and keeps its place in line (ahead of a backlog enqueued after it) instead
 * of waiting behind everything enqueued since.
 *
 * No index finds leased rows (one on `picked_by` would make every claim a non-HOT update, migration
 * 0008): the lookup reads the live table's PENDING rows. The live table holds only the backlog, and the
 * sweep runs under a lease on one node of the cluster every few seconds, while a claim runs all the time.
 *
 * Only rows of dead nodes are touched: a row qualifies when its node's heartbeat is older than the
 * threshold, or when its node has no row at all and the row was picked longer than a threshold ago. The
 * node rows are locked (FOR UPDATE) while the statement runs, so a heartbeat landing at the same moment
 * either commits first, and its node is no longer stale when its row is re-checked under the lock, or waits
 * until the recovery committed. The job rows are taken with SKIP LOCKED: a row whose outcome is being
 * written right now is left to the next sweep, by which time it is usually no longer RUNNING.
 */
import { insertFinishedSql } from "../jobs/finished-sql.js";
import { clearLease, clearLeaseSql, leasedSql } from "../jobs/lease-sql.js";
import { named, type Queryable, type Tables } from "../../db/sql.js";
import type { JobEventInfo } from "../../core/events.js";

/**
 * A job recovered from a dead node: the fields every job event carries (its `attempt` is the attempt that
 * was lost, which counts as failed), with where it went and who held it.
 */
export interface RecoveredJob extends JobEventInfo {
  /** PENDING (due at once) or DEAD (that was its last attempt). */
  status: "PENDING" | "DEAD";
  /** The node that held it. */
  nodeId: string;
}

interface RecoveredRow {
  id: string;
  type: string;
  queue: string;
  priority: number;
  attempts: number;
  max_attempts: number;
  status: "PENDING" | "DEAD";
  node_id: string;
}

/** The error name recorded for an attempt lost with its node. */
export const nodeLostErrorName = "NodeLostError";

const keepErrors = 20;

/**
 * The statement that recovers the rows selected by the CTE `orphans(id, picked_by)`; `$now` is the
 * override. Rows with attempts left go back to PENDING in place; a row on its last attempt ends DEAD, so
 * it moves to the finished table in the same statement.
 */
function recoverSql(t: Tables, orphans: string, now: string): string {
  const last = "j.attempts >= j.max_attempts";
  const err = (j: string, node: string) =>
    `jsonb_build_object('attempt', ${j}.attempts, 'name', '${nodeLostErrorName}', ` +
    `'message', 'node ' || ${node} || ' lost', 'at', ${now})`;
  const errors = (j: string, node: string) =>
    `(CASE WHEN jsonb_array_length(${j}.errors) >= ${keepErrors} THEN ${j}.errors - 0 ELSE ${j}.errors END) ` +
    `|| jsonb_build_array(${err(j, node)})`;
  const columns = "j.id, j.type, j.queue, j.priority, j.attempts, j.max_attempts";
  return `
    ${orphans},
    back AS (
      UPDATE ${t.jobs} j
      SET finished_at = NULL, errors = ${errors("j", "o.picked_by")}, ${clearLeaseSql}, updated_at = now()
      FROM orphans o
      WHERE j.id = o.id AND NOT (${last})
      RETURNING ${columns}, j.status, o.picked_by AS node_id
    ),
    gone AS (
      DELETE FROM ${t.jobs} j USING orphans o
      WHERE j.id = o.id AND ${last}
      RETURNING j.*, o.picked_by AS node_id
    ),
    dead AS (
      ${insertFinishedSql(
        t,
        "g",
        {
          status: "'DEAD'",
          finished_at: now,
          errors: errors("g", "g.node_id"),
          ...clearLease,
          updated_at: "now()",
        },
        "FROM gone g",
      )}
    )
    SELECT * FROM back
    UNION ALL
    SELECT ${columns}, 'DEAD', j.node_id FROM gone j`;
}

const toRecovered = (r: RecoveredRow): RecoveredJob => ({
  id: r.id,
  type: r.type,
  queue: r.queue,
  priority: r.priority,
  attempt: r.attempts,
  maxAttempts: r.max_attempts,
  status: r.status,
  nodeId: r.node_id,
});

/**
 * Recovers up to `limit` RUNNING rows held by dead nodes (heartbeat older than `thresholdMs`, or no node
 * row and picked more than `thresholdMs` ago). Call again while it returns `limit` rows.
 *
 * With `scanAll` false the job rows are read only when some node is stale and not yet marked dead by the
 * reaper (`node_info.deadAt`, ./node-sql.ts): a read of the small node table decides first, so a sweep
 * with nothing to do costs no read of the backlog (at 200,000 PENDING rows the recovery statement takes
 * 40-60 ms here, against 0.6 ms with the running index of before 0008). Rows the gate cannot see coming
 * (a node id without a row, a row a previous sweep skipped as locked) wait for the next sweep with
 * `scanAll`.
 */
export async function recoverOrphans(
  db: Queryable,
  t: Tables,
  thresholdMs: number,
  limit: number,
  now: Date | null = null,
  scanAll = true,
): Promise<RecoveredJob[]> {
  if (!scanAll) {
    const gate = await db.query<{ any: boolean }>(
      named(
        t,
        "orphan_gate",
        `SELECT EXISTS (SELECT 1 FROM ${t.nodes} WHERE NOT node_info ? 'deadAt'
                          AND heartbeat_ts < coalesce($2::timestamptz, now()) - $1::bigint * interval '1 millisecond')
                AS any`,
      )([thresholdMs, now]),
    );
    if (!gate.rows[0]?.any) return [];
  }
  const n = "coalesce($3::timestamptz, now())";
  const cutoff = `${n} - $1::bigint * interval '1 millisecond'`;
  const orphans = `
    WITH stale AS (
      SELECT node_id FROM ${t.nodes} WHERE heartbeat_ts < ${cutoff} FOR UPDATE
    ),
    orphans AS (
      SELECT j.id, j.picked_by FROM ${t.jobs} j
      WHERE ${leasedSql("j")}
        AND (j.picked_by IN (SELECT node_id FROM stale)
             OR (j.picked_at < ${cutoff}
                 AND NOT EXISTS (SELECT 1 FROM ${t.nodes} x WHERE x.node_id = j.picked_by)))
      ORDER BY j.id
      LIMIT $2
      FOR UPDATE OF j SKIP LOCKED
    )`;
  const res = await db.query<RecoveredRow>(
    named(t, "orphan_recover", recoverSql(t, orphans, n))([thresholdMs, limit, now]),
  );
  return res.rows.map(toRecovered);
}

/**
 * Startup cleanup: recovers up to `limit` RUNNING rows that `nodeId` picked before `before` (a previous
 * run of this node id that crashed or was killed). The caller makes sure no live process holds them.
 */
export async function recoverNodeRows(
  db: Queryable,
  t: Tables,
  nodeId: string,
  before: Date,
  limit: number,
  now: Date | null = null,
): Promise<RecoveredJob[]> {
  const n = "coalesce($4::timestamptz, now())";
  const orphans = `
    WITH orphans AS (
      SELECT j.id, j.picked_by FROM ${t.jobs} j
      WHERE ${leasedSql("j")} AND j.picked_by = $1 AND j.picked_at < $2::timestamptz
      ORDER BY j.id
      LIMIT $3
      FOR UPDATE OF j SKIP LOCKED
    )`;
  const res = await db.query<RecoveredRow>(
    named(t, "orphan_recover_own", recoverSql(t, orphans, n))([nodeId, before, limit, now]),
  );
  return res.rows.map(toRecovered);
}
