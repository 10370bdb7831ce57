/**
 * Writing running jobs' progress (`ctx.progress`, migration 0006): one statement for any number of jobs,
 * guarded like an outcome (RUNNING and picked by the writing node), so a late value never lands on a row
 * that was canceled, recovered by another node, or has ended. The value rides along when the job moves to
 * the finished table, because the move copies every column (./finished-sql.ts).
 */
import { idBatchParams, inIdBatchSql, valueAtRowSql } from "../jobs/id-batch-sql.js";
import { heldBySql } from "../jobs/lease-sql.js";
import { named, type Queryable, type Tables } from "../../db/sql.js";

/** The newest progress of one running job, as JSON text (validated by `progressJson`). */
export interface ProgressWrite {
  id: string;
  progressJson: string;
}

/**
 * Stores the progress of jobs still RUNNING under `nodeId`; returns the ids it wrote.
 *
 * @example
 * ```ts
 * await writeProgress(pool, tables, "node-a", [{ id: "7", progressJson: "42" }]);
 * ```
 */
export async function writeProgress(
  db: Queryable,
  t: Tables,
  nodeId: string,
  items: readonly ProgressWrite[],
): Promise<Set<string>> {
  if (items.length === 0) return new Set();
  // updated_at is left alone: it tells when the job's status last changed, which progress does not.
  const stmt = named(
    t,
    "progress",
    `UPDATE ${t.jobs} j SET progress = ${valueAtRowSql("j", "$2::jsonb[]", "$1::bigint[]")}
     WHERE ${inIdBatchSql("j", "$1::bigint[]")} AND ${heldBySql("j", "$3")}
     RETURNING j.id`,
  );
  const res = await db.query<{ id: string }>(stmt([...idBatchParams(items, (i) => i.progressJson), nodeId]));
  return new Set(res.rows.map((r) => r.id));
}
