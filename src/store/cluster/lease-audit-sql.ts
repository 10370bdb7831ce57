/**
 * The lease audit's statements (src/cluster/lease-audit.ts): the rows leased to one node, and the release
 * of those of them the node does not run.
 *
 * A claim whose reply was lost (the connection reset after the commit) leaves rows leased to a node that
 * never heard of them: PENDING with its `picked_by`. The orphan sweep rescues dead nodes only, and this
 * node keeps beating, so nobody else would ever free them. The node itself is the one that can tell: it
 * reads its leases here, compares them with what it holds in memory, and releases the rest.
 *
 * Like the orphan sweep, the read has no index to use (one on `picked_by` would make every claim a non-HOT
 * update, migration 0008): it reads the live table's PENDING rows, which is why the audit runs after a
 * failed claim and otherwise rarely (see `leaseAuditIntervalMs`).
 *
 * The release is the claim undone: lease cleared, the attempt the claim counted taken back (the job never
 * reached a handler), the scheduled time kept, so the job keeps its place in line. A concurrency key's
 * running count follows by itself: the lease triggers (migrations 0011, 0013) count every change of
 * `picked_by`. Each row is re-checked under its lock: still this node's, and picked before the cutoff the
 * read used, so a lease taken after the read (this node claimed the row again) is never touched.
 */
import { clearLeaseSql, leasedSql } from "../jobs/lease-sql.js";
import { named, type Queryable, type Tables } from "../../db/sql.js";

/** What {@link readNodeLeases} found. */
export interface NodeLeases {
  /** The job ids leased to the node before the cutoff. */
  ids: string[];
  /**
   * The cutoff: the database's now() minus the grace, as PostgreSQL prints it (microseconds kept, so the
   * release compares the same instant).
   */
  cutoff: string;
}

/**
 * The ids of the rows leased to `nodeId` that were picked more than `graceMs` ago (by the database's clock,
 * or `now` when given), and that cutoff. Rows picked within the grace may belong to a claim whose reply is
 * on its way.
 */
export async function readNodeLeases(
  db: Queryable,
  t: Tables,
  nodeId: string,
  graceMs: number,
  now: Date | null = null,
): Promise<NodeLeases> {
  const res = await db.query<{ id: string | null; cutoff: string }>(
    named(
      t,
      "lease_audit_read",
      `WITH c AS (SELECT coalesce($3::timestamptz, now()) - $2::bigint * interval '1 millisecond' AS cutoff)
       SELECT j.id, c.cutoff::text AS cutoff
       FROM c LEFT JOIN ${t.jobs} j ON ${leasedSql("j")} AND j.picked_by = $1 AND j.picked_at < c.cutoff`,
    )([nodeId, graceMs, now]),
  );
  const first = res.rows[0];
  if (!first) throw new Error("pawl: the lease audit's read returned no row");
  return { ids: res.rows.flatMap((r) => (r.id === null ? [] : [r.id])), cutoff: first.cutoff };
}

/** A lease released by {@link releaseNodeLeases}. */
export interface ReleasedLease {
  id: string;
  type: string;
  queue: string;
  priority: number;
}

/**
 * Releases the leases `nodeId` holds on `ids` that were taken before `cutoff` ({@link NodeLeases.cutoff}):
 * PENDING again, unleased, the attempt not counted. Returns the rows it released; rows that changed
 * meanwhile (their outcome landed, they were claimed again, canceled) are left alone.
 */
export async function releaseNodeLeases(
  db: Queryable,
  t: Tables,
  nodeId: string,
  ids: readonly string[],
  cutoff: string,
): Promise<ReleasedLease[]> {
  if (ids.length === 0) return [];
  const res = await db.query<ReleasedLease>(
    named(
      t,
      "lease_audit_release",
      `UPDATE ${t.jobs} j
       SET attempts = greatest(0, j.attempts - 1), ${clearLeaseSql}, updated_at = now()
       WHERE j.id = ANY($1::bigint[]) AND ${leasedSql("j")} AND j.picked_by = $2
         AND j.picked_at < $3::timestamptz
       RETURNING j.id, j.type, j.queue, j.priority`,
    )([ids, nodeId, cutoff]),
  );
  return res.rows;
}
