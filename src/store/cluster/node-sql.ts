/**
 * scheduler_node: one row per node, its heartbeat and what it runs. Every time comes from the database
 * (`now()`, or an explicit override in tests passed as `coalesce($n::timestamptz, now())`), so nodes
 * with skewed clocks still agree on who is alive.
 */
import type { NodeRegistry } from "../../logic/explain-facts.js";
import { named, type Queryable, type Tables } from "../../db/sql.js";
import { heldBySql } from "../jobs/lease-sql.js";

/** What a node tells the cluster about itself (stored as `node_info`). */
export interface NodeInfo {
  /** pawl's version (its package.json). */
  version: string;
  /**
   * The newest schema migration the node's release knows, so operators see which releases run side by
   * side during a rolling upgrade. Absent on nodes from before it was added (59bb164 and older).
   */
  schemaVersion?: number;
  host: string;
  pid: number;
  /** Jobs run at once. */
  concurrency: number;
  /** The wakeup transport: none, in-memory, postgres, amqp or hazelcast. */
  coordinator: string;
  /** A random id per start(): tells this run of a node id from a previous one. */
  instance: string;
  /**
   * This run holds its node id's session lock (cluster/node-id-guard.ts), so a free lock means the run
   * has ended. Absent on nodes of 0.2.0 and older, and false behind a transaction pooler.
   */
  idLock?: boolean;
  /** Set by the orphan sweep when the node was declared dead (database time, ISO 8601). */
  deadAt?: string;
  /**
   * What the node runs, as of this beat: its types (with queue, service, resource), its lanes and their
   * load, its breakers and its resource capacities. Read by `pawl.explain` (docs/console.md#explain).
   * Kept in `node_info` rather than a column of its own: the heartbeat rewrites the document on every
   * beat anyway, and nothing else reads it.
   */
  registry?: NodeRegistry;
}

/** One row of scheduler_node. */
export interface NodeRow {
  nodeId: string;
  heartbeatAt: Date;
  startedAt: Date;
  info: NodeInfo;
}

/** What a heartbeat learned. */
export interface HeartbeatRow {
  heartbeatAt: Date;
  startedAt: Date;
  /** The sweep had declared this node dead before this beat (its jobs may have been recovered). */
  wasDeclaredDead: boolean;
  /** The schema's newest applied migration, read with the beat (null when the version table is absent). */
  schemaVersion: number | null;
  /** The newest migration recorded as breaking (pawl_migrations.breaking), or null: see migration 0012. */
  newestBreaking: number | null;
}

interface RawNode {
  node_id: string;
  heartbeat_ts: Date;
  started_at: Date;
  node_info: NodeInfo;
}

const toNode = (r: RawNode): NodeRow => ({
  nodeId: r.node_id,
  heartbeatAt: r.heartbeat_ts,
  startedAt: r.started_at,
  info: r.node_info,
});

/**
 * Writes this node's heartbeat: inserts the row on the first beat, updates it afterwards. `started_at`
 * is kept while the instance is the same and reset when a new run of the node id takes over. Writing
 * `node_info` afresh also clears a `deadAt` mark: a node that was declared dead and beats again is alive.
 */
export async function upsertHeartbeat(
  db: Queryable,
  t: Tables,
  nodeId: string,
  info: NodeInfo,
  now: Date | null = null,
): Promise<HeartbeatRow> {
  const stmt = named(
    t,
    "node_heartbeat",
    `WITH prev AS (SELECT node_info ? 'deadAt' AS dead FROM ${t.nodes} WHERE node_id = $1)
     INSERT INTO ${t.nodes} AS n (node_id, heartbeat_ts, started_at, node_info)
     VALUES ($1, coalesce($3::timestamptz, now()), coalesce($3::timestamptz, now()), $2::jsonb)
     ON CONFLICT (node_id) DO UPDATE SET
       heartbeat_ts = EXCLUDED.heartbeat_ts,
       started_at = CASE WHEN n.node_info->>'instance' IS NOT DISTINCT FROM EXCLUDED.node_info->>'instance'
                         THEN n.started_at ELSE EXCLUDED.started_at END,
       node_info = EXCLUDED.node_info
     RETURNING n.heartbeat_ts, n.started_at, coalesce((SELECT dead FROM prev), false) AS was_dead,
       (SELECT max(version) FROM ${t.s}.pawl_migrations) AS schema_version,
       -- to_jsonb reads the column whether or not 0012 added it yet.
       (SELECT max(version) FROM ${t.s}.pawl_migrations m
         WHERE (to_jsonb(m) ->> 'breaking')::boolean IS TRUE) AS newest_breaking`,
  );
  const { deadAt: _dropped, ...clean } = info;
  type Row = {
    heartbeat_ts: Date;
    started_at: Date;
    was_dead: boolean;
    schema_version: number | null;
    newest_breaking: number | null;
  };
  const res = await db.query<Row>(stmt([nodeId, JSON.stringify(clean), now]));
  const row = res.rows[0] as Row;
  return {
    heartbeatAt: row.heartbeat_ts,
    startedAt: row.started_at,
    wasDeclaredDead: row.was_dead,
    schemaVersion: row.schema_version,
    newestBreaking: row.newest_breaking,
  };
}

/** Reads one node's row and the database's time; `node` is null when the node has no row. */
export async function getNode(
  db: Queryable,
  t: Tables,
  nodeId: string,
  now: Date | null = null,
): Promise<{ node: NodeRow | null; databaseTime: Date }> {
  const res = await db.query<Partial<RawNode> & { db_now: Date }>(
    named(
      t,
      "node_get",
      `SELECT n.node_id, n.heartbeat_ts, n.started_at, n.node_info, coalesce($2::timestamptz, now()) AS db_now
       FROM (SELECT 1) one LEFT JOIN ${t.nodes} n ON n.node_id = $1`,
    )([nodeId, now]),
  );
  const row = res.rows[0] as Partial<RawNode> & { db_now: Date };
  return { node: row.node_id ? toNode(row as RawNode) : null, databaseTime: row.db_now };
}

/** A node as {@link listNodes} reports it. */
export interface NodeStatus extends NodeRow {
  /** Database time minus the last heartbeat (ms). */
  ageMs: number;
  /** Whether the heartbeat is within the dead-node threshold. */
  alive: boolean;
}

/** Every node row, with its heartbeat's age by the database's clock; oldest first. */
export async function listNodes(
  db: Queryable,
  t: Tables,
  thresholdMs: number,
  now: Date | null = null,
): Promise<NodeStatus[]> {
  const res = await db.query<RawNode & { age_ms: number; alive: boolean }>(
    named(
      t,
      "node_list",
      `SELECT node_id, heartbeat_ts, started_at, node_info,
              (extract(epoch FROM coalesce($2::timestamptz, now()) - heartbeat_ts) * 1000)::float8 AS age_ms,
              heartbeat_ts >= coalesce($2::timestamptz, now()) - $1::bigint * interval '1 millisecond' AS alive
       FROM ${t.nodes} ORDER BY started_at, node_id`,
    )([thresholdMs, now]),
  );
  return res.rows.map((r) => ({ ...toNode(r), ageMs: Math.round(r.age_ms), alive: r.alive }));
}

/** A node the sweep found dead. */
export interface DeadNode {
  nodeId: string;
  heartbeatAt: Date;
  /** First seen dead by this sweep (it was marked now); false for nodes marked earlier. */
  newlyDead: boolean;
  /** Resource permits of the node that were freed. */
  permitsFreed: number;
}

/**
 * Finds the nodes whose heartbeat is older than `thresholdMs`, frees their resource permits and marks the
 * new ones dead (`node_info.deadAt`), in one statement. The node rows are locked while it runs, so a
 * heartbeat that lands meanwhile either commits first (and the node is no longer stale when its row is
 * re-checked under the lock) or waits until the statement is done.
 */
export async function reapDeadNodes(
  db: Queryable,
  t: Tables,
  thresholdMs: number,
  now: Date | null = null,
): Promise<DeadNode[]> {
  const res = await db.query<{
    node_id: string;
    heartbeat_ts: Date;
    newly_dead: boolean;
    permits_freed: number;
  }>(
    named(
      t,
      "node_reap",
      `WITH stale AS (
         SELECT node_id, heartbeat_ts, node_info ? 'deadAt' AS known FROM ${t.nodes}
         WHERE heartbeat_ts < coalesce($2::timestamptz, now()) - $1::bigint * interval '1 millisecond'
         FOR UPDATE
       ),
       freed AS (
         DELETE FROM ${t.permits} p USING stale s WHERE p.node_id = s.node_id RETURNING p.node_id
       ),
       marked AS (
         UPDATE ${t.nodes} n
         SET node_info = n.node_info || jsonb_build_object('deadAt', coalesce($2::timestamptz, now()))
         FROM stale s WHERE n.node_id = s.node_id AND NOT s.known
         RETURNING n.node_id
       )
       SELECT s.node_id, s.heartbeat_ts, s.node_id IN (SELECT node_id FROM marked) AS newly_dead,
              (SELECT count(*) FROM freed f WHERE f.node_id = s.node_id)::int AS permits_freed
       FROM stale s ORDER BY s.node_id`,
    )([thresholdMs, now]),
  );
  return res.rows.map((r) => ({
    nodeId: r.node_id,
    heartbeatAt: r.heartbeat_ts,
    newlyDead: r.newly_dead,
    permitsFreed: r.permits_freed,
  }));
}

/**
 * Deletes node rows whose heartbeat is older than `retentionMs`, except those still named by a RUNNING
 * job (their recovery comes first). Returns the deleted node ids.
 */
export async function deleteExpiredNodes(
  db: Queryable,
  t: Tables,
  retentionMs: number,
  now: Date | null = null,
): Promise<string[]> {
  const res = await db.query<{ node_id: string }>(
    named(
      t,
      "node_expire",
      `DELETE FROM ${t.nodes} n
       WHERE n.heartbeat_ts < coalesce($2::timestamptz, now()) - $1::bigint * interval '1 millisecond'
         AND NOT EXISTS (SELECT 1 FROM ${t.jobs} j WHERE ${heldBySql("j", "n.node_id")})
       RETURNING n.node_id`,
    )([retentionMs, now]),
  );
  return res.rows.map((r) => r.node_id);
}

/** Removes this run's own row when it leaves the cluster (graceful stop); a newer run's row is kept. */
export async function removeNode(
  db: Queryable,
  t: Tables,
  nodeId: string,
  instance: string,
): Promise<boolean> {
  const res = await db.query(
    named(
      t,
      "node_remove",
      `DELETE FROM ${t.nodes} WHERE node_id = $1 AND node_info->>'instance' = $2`,
    )([nodeId, instance]),
  );
  return (res.rowCount ?? 0) > 0;
}

/** The database's clock, read as late as possible in the statement (for skew measurement). */
export async function readDatabaseClock(db: Queryable, t: Tables): Promise<Date> {
  const res = await db.query<{ now: Date }>(named(t, "node_clock", "SELECT clock_timestamp() AS now")([]));
  return (res.rows[0] as { now: Date }).now;
}

/** Of `nodeIds`, those with no row in scheduler_node. */
export async function missingNodes(db: Queryable, t: Tables, nodeIds: readonly string[]): Promise<string[]> {
  if (nodeIds.length === 0) return [];
  const res = await db.query<{ node_id: string }>(
    named(
      t,
      "node_missing",
      `SELECT id AS node_id FROM unnest($1::text[]) AS id
       WHERE NOT EXISTS (SELECT 1 FROM ${t.nodes} n WHERE n.node_id = id)`,
    )([nodeIds]),
  );
  return res.rows.map((r) => r.node_id);
}
