/**
 * The console overview's one read: job counts grouped by status, queue and type; the age of the oldest
 * due PENDING job; and the last hour's outcomes. Every part is bounded, whatever the table's size:
 *
 * - Counts read at most `scanCap` rows of each status (a LIMIT inside each status's subquery, each on a
 *   partial index of that status), and return the `maxGroups` largest groups. A status whose read
 *   reached the cap is listed in `capped`: its counts are lower bounds. An exact count of ten million rows
 *   would cost a sequential scan on every page load.
 * - The oldest due PENDING job comes from the claim index (priority DESC, scheduled_time, id WHERE
 *   PENDING): one index probe per distinct priority (a loose index scan, the claim's own `levels`), then
 *   the earliest scheduled_time among those firsts.
 * - The last hour's outcomes read the finished table's two partial indexes on finished_at (SUCCEEDED and
 *   CANCELED; DEAD), each capped at `scanCap` rows.
 */
import type { JobStatus } from "../jobs/job-row.js";
import type { Queryable, Tables } from "../../db/sql.js";
import { claimableSql, leasedSql } from "../jobs/lease-sql.js";

/** Bounds of {@link readOverview}. */
export interface OverviewBounds {
  /** The most groups returned (largest first). Default 50. */
  maxGroups?: number;
  /** The most rows each part reads. Default 100,000. */
  scanCap?: number;
}

/** A count of jobs in one status, queue and type. */
export interface OverviewGroup {
  status: JobStatus;
  queue: string;
  type: string;
  count: number;
}

/** What the overview shows. */
export interface Overview {
  /** The largest groups of PENDING, RUNNING, WAITING, PAUSED and DEAD jobs. */
  groups: OverviewGroup[];
  /** Totals by status (over every row read, not only the groups returned). */
  byStatus: Partial<Record<JobStatus, number>>;
  /** The statuses whose read reached the cap: their counts (and their groups') are lower bounds. */
  capped: JobStatus[];
  /** How long the oldest due PENDING job has waited since its scheduled time (null: none is due). */
  oldestPendingMs: number | null;
  /** The oldest due PENDING job's id. */
  oldestPendingId: string | null;
  /** Jobs that finished in the last hour, by outcome (at most `scanCap` SUCCEEDED and CANCELED together, and `scanCap` DEAD). */
  lastHour: { succeeded: number; dead: number; canceled: number };
  /** The database's time of the read. */
  at: Date;
}

/** Reads the overview in one statement. */
export async function readOverview(db: Queryable, t: Tables, bounds: OverviewBounds = {}): Promise<Overview> {
  const maxGroups = Math.min(1000, Math.max(1, Math.floor(bounds.maxGroups ?? 50)));
  const cap = Math.min(10_000_000, Math.max(1, Math.floor(bounds.scanCap ?? 100_000)));
  const res = await db.query<{
    groups: { status: JobStatus; queue: string; type: string; count: number }[] | null;
    by_status: Partial<Record<JobStatus, number>> | null;
    capped: JobStatus[];
    oldest_id: string | null;
    oldest_ms: string | null;
    succeeded: string;
    canceled: string;
    dead: string;
    at: Date;
  }>(
    `WITH live AS (
       -- A running job is a leased PENDING row (./lease-sql.ts). No index finds leased rows, so RUNNING
       -- reads the PENDING rows until it has $1 (a backlog costs this read a scan of its PENDING rows).
       (SELECT 'PENDING' AS status, queue, type FROM ${t.jobs} WHERE ${claimableSql()} LIMIT $1)
       UNION ALL
       (SELECT 'RUNNING', queue, type FROM ${t.jobs} WHERE ${leasedSql()} LIMIT $1)
       UNION ALL
       (SELECT status, queue, type FROM ${t.jobs} WHERE status = 'PAUSED' LIMIT $1)
       UNION ALL
       -- WAITING has no index of its own: its rows are flow members (the flow index) or parked for a
       -- signal (the signal index), so each half is read through one, never by a scan of the table.
       (SELECT status, queue, type FROM ${t.jobs} WHERE status = 'WAITING' AND flow_id IS NOT NULL LIMIT $1)
       UNION ALL
       (SELECT status, queue, type FROM ${t.jobs}
        WHERE status = 'WAITING' AND signal_state = 'waiting' AND flow_id IS NULL LIMIT $1)
     ),
     dead AS (
       SELECT status, queue, type FROM ${t.finished} WHERE status = 'DEAD' ORDER BY finished_at DESC LIMIT $1
     ),
     grouped AS (
       SELECT status, queue, type, count(*)::int AS count
       FROM (SELECT * FROM live UNION ALL SELECT * FROM dead) r
       GROUP BY status, queue, type
     ),
     hour AS (
       -- SUCCEEDED and CANCELED together: the predicate is the pruning index's own, so the planner reads
       -- it (one status alone, when it has no recent rows, was planned as a scan of the whole table).
       SELECT count(*) FILTER (WHERE s.status = 'SUCCEEDED') AS succeeded,
              count(*) FILTER (WHERE s.status = 'CANCELED') AS canceled,
              (SELECT count(*) FROM (SELECT 1 FROM ${t.finished}
                 WHERE status = 'DEAD' AND finished_at > now() - interval '1 hour' LIMIT $1) d) AS dead
       FROM (SELECT status FROM ${t.finished}
             WHERE status IN ('SUCCEEDED', 'CANCELED') AND finished_at > now() - interval '1 hour' LIMIT $1) s
     )
     SELECT
       (SELECT json_agg(g) FROM (SELECT * FROM grouped ORDER BY count DESC, status, queue, type LIMIT $2) g) AS groups,
       (SELECT json_object_agg(status, n) FROM (SELECT status, sum(count)::int AS n FROM grouped GROUP BY status) s)
         AS by_status,
       (SELECT coalesce(array_agg(status), '{}') FROM (SELECT status FROM live GROUP BY status HAVING count(*) >= $1
          UNION SELECT 'DEAD' FROM dead HAVING count(*) >= $1) c) AS capped,
       o.id AS oldest_id,
       (extract(epoch FROM now() - o.scheduled_time) * 1000)::bigint AS oldest_ms,
       hour.succeeded, hour.canceled, hour.dead, now() AS at
     FROM hour LEFT JOIN LATERAL (${oldestPendingSql(t)}) o ON true`,
    [cap, maxGroups],
  );
  const r = res.rows[0];
  if (!r) throw new Error("readOverview: no row");
  const groups = r.groups ?? [];
  return {
    groups,
    byStatus: r.by_status ?? {},
    capped: r.capped,
    oldestPendingMs: r.oldest_ms === null ? null : Number(r.oldest_ms),
    oldestPendingId: r.oldest_id,
    lastHour: { succeeded: Number(r.succeeded), dead: Number(r.dead), canceled: Number(r.canceled) },
    at: r.at,
  };
}

/**
 * The oldest due PENDING row: the first row of each priority level in the claim index's order, found
 * level by level (a recursive walk over the distinct priorities, each step one index probe), then the
 * earliest of those. A plain min(scheduled_time) would scan every PENDING row, since the index leads
 * with priority.
 */
function oldestPendingSql(t: Tables): string {
  return `WITH RECURSIVE levels(p) AS (
       (SELECT priority FROM ${t.jobs} WHERE status = 'PENDING' ORDER BY priority DESC LIMIT 1)
       UNION ALL
       SELECT (SELECT j.priority FROM ${t.jobs} j WHERE j.status = 'PENDING' AND j.priority < levels.p
               ORDER BY j.priority DESC LIMIT 1)
       FROM levels WHERE levels.p IS NOT NULL
     )
     SELECT f.id::text AS id, f.scheduled_time
     FROM levels CROSS JOIN LATERAL (
       SELECT j.id, j.scheduled_time FROM ${t.jobs} j
       WHERE ${claimableSql("j")} AND j.priority = levels.p AND j.scheduled_time <= now()
       ORDER BY j.scheduled_time, j.id LIMIT 1
     ) f
     WHERE levels.p IS NOT NULL
     ORDER BY f.scheduled_time, f.id LIMIT 1`;
}
