/**
 * Pruning scheduler_job_finished (migration 0005): finished rows are deleted after their retention, in
 * small batches.
 * Each batch is one short statement (`DELETE ... WHERE id = ANY(ARRAY(SELECT ... LIMIT n FOR UPDATE SKIP
 * LOCKED))`) that walks a partial index by `finished_at`, so it never scans the live rows, never waits
 * on a row another statement holds, and holds its own locks for milliseconds. The status is a literal in
 * each statement so the planner can match the partial indexes.
 */
import { named, type Queryable, type Tables } from "../../db/sql.js";

/** The terminal statuses that are pruned. */
export type PrunableStatus = "SUCCEEDED" | "CANCELED" | "DEAD";

/** The statement for one status (exported for EXPLAIN tests). Parameters: retention ms, batch size, now. */
export function pruneSql(t: Tables, status: PrunableStatus): string {
  // DEAD rows are indexed newest first (the dead letter queue's order); ordering by (finished_at, id)
  // ascending scans that index backwards.
  const order = status === "DEAD" ? "finished_at, id" : "finished_at";
  return `
    DELETE FROM ${t.finished}
    WHERE id = ANY(ARRAY(
      SELECT id FROM ${t.finished}
      WHERE status = '${status}'
        AND finished_at < coalesce($3::timestamptz, now()) - $1::bigint * interval '1 millisecond'
      ORDER BY ${order}
      LIMIT $2
      FOR UPDATE SKIP LOCKED
    ))`;
}

/** Deletes one batch of `status` rows finished more than `retentionMs` ago; returns how many. */
export async function pruneBatch(
  db: Queryable,
  t: Tables,
  status: PrunableStatus,
  retentionMs: number,
  batchSize: number,
  now: Date | null = null,
): Promise<number> {
  const res = await db.query(
    named(t, `prune_${status.toLowerCase()}`, pruneSql(t, status))([retentionMs, batchSize, now]),
  );
  return res.rowCount ?? 0;
}
