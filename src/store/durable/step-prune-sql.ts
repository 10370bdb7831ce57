/**
 * The pruner's pass over the durable tables: steps, signals and machines (a machine's row and its events)
 * of jobs that no longer exist anywhere.
 *
 * These rows have no foreign key to their job, because the job's row has no single home: it moves
 * from the live table to the finished one, is pruned row by row there or dropped with a whole time
 * partition (migration 0016), or deleted at success (`keepSucceeded: false`), by a node of this release or
 * of the previous one. Rather than a second delete beside each of those paths (and none for a 0.2.0
 * node's pruner), one pass finds the rows whose job is gone, whoever removed it, so steps always follow
 * their job's history. It walks the table in job id order, a bounded batch of jobs per statement, from a
 * cursor the caller keeps; each job costs one probe of the live table's key and one of the finished
 * table's id index per partition.
 */
import { named, type Queryable, type Tables } from "../../db/sql.js";
import { durableTables } from "./durable-tables.js";

/** The tables the pass walks; "machines" walks the machine rows and deletes their events with them. */
export type DurablePrunable = "steps" | "signals" | "machines";

/** What one batch of the pass did. */
export interface DurablePruneBatch {
  /** The highest job id looked at, or null when there was none past the cursor (the pass is over). */
  lastJobId: string | null;
  /** Rows deleted. */
  deleted: number;
}

/**
 * Deletes the rows of `table` whose job is gone, among the next `limit` distinct job ids after
 * `afterJobId`. For "machines", a gone job's events go with its machine row (every event has one: a send
 * creates the row before it stores the event).
 */
export async function pruneOrphans(
  db: Queryable,
  t: Tables,
  table: DurablePrunable,
  afterJobId: string,
  limit: number,
): Promise<DurablePruneBatch> {
  const d = durableTables(t);
  const walked = table === "machines" ? d.machines : d[table];
  const targets = table === "machines" ? [d.machineEvents, d.machines] : [walked];
  const deletes = targets
    .map(
      (target, i) =>
        `, del${i} AS (DELETE FROM ${target} x USING gone g WHERE x.job_id = g.job_id RETURNING 1)`,
    )
    .join("");
  const counted = targets.map((_, i) => `(SELECT count(*) FROM del${i})`).join(" + ");
  const stmt = named(
    t,
    `durable_prune_${table}`,
    `WITH batch AS (
       SELECT DISTINCT x.job_id FROM (
         SELECT job_id FROM ${walked} WHERE job_id > $1::bigint ORDER BY job_id LIMIT $2 * 8
       ) x ORDER BY x.job_id LIMIT $2
     ), gone AS (
       SELECT b.job_id FROM batch b
       WHERE NOT EXISTS (SELECT 1 FROM ${t.jobs} j WHERE j.id = b.job_id)
         AND NOT EXISTS (SELECT 1 FROM ${t.finished} f WHERE f.id = b.job_id)
     )${deletes}
     SELECT (SELECT max(job_id)::text FROM batch) AS last, ${counted} AS deleted`,
  );
  const row = (await db.query<{ last: string | null; deleted: string }>(stmt([afterJobId, limit]))).rows[0];
  return { lastJobId: row?.last ?? null, deleted: Number(row?.deleted ?? 0) };
}
