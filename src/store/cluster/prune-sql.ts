/**
 * Pruning scheduler_job_finished (migration 0005) row by row: rows are deleted after their retention, in
 * small batches, from the two partitions that are pruned this way (migration 0016): the rows partition
 * (DEAD, CANCELED, and SUCCEEDED rows no time range covered) and the time partitions' default. The time
 * partitions themselves are dropped whole (src/cluster/history-partitioner.ts), never read here.
 * Each batch is one short statement per partition (`DELETE ... WHERE id = ANY(ARRAY(SELECT ... LIMIT n
 * FOR UPDATE SKIP LOCKED))`) that walks a partial index by `finished_at`, so it never scans the live rows,
 * never waits on a row another statement holds, and holds its own locks for milliseconds. The status is a
 * literal in each statement so the planner can match the partial indexes.
 */
import { named, type Queryable, type Tables } from "../../db/sql.js";

/** The terminal statuses that are pruned. */
export type PrunableStatus = "SUCCEEDED" | "CANCELED" | "DEAD";

/** The partitions pruned row by row. */
export type PrunedPartition = "rows" | "default";

/**
 * The statement for one status in one partition (exported for EXPLAIN tests). Parameters: retention ms,
 * batch size, now.
 */
export function pruneSql(t: Tables, status: PrunableStatus, part: PrunedPartition = "rows"): string {
  const table = part === "rows" ? t.finishedRows : t.finishedDefault;
  // DEAD rows are indexed newest first (the dead letter queue's order); ordering by (finished_at, id)
  // ascending scans that index backwards.
  const order = status === "DEAD" ? "finished_at, id" : "finished_at";
  return `
    DELETE FROM ${table}
    WHERE id = ANY(ARRAY(
      SELECT id FROM ${table}
      WHERE status = '${status}'
        AND finished_at < coalesce($3::timestamptz, now()) - $1::bigint * interval '1 millisecond'
      ORDER BY ${order}
      LIMIT $2
      FOR UPDATE SKIP LOCKED
    ))`;
}

/**
 * Deletes one batch of `status` rows finished more than `retentionMs` ago; returns how many. The rows
 * partition first, then the default (nearly always empty: one index probe) for what the batch has left.
 */
export async function pruneBatch(
  db: Queryable,
  t: Tables,
  status: PrunableStatus,
  retentionMs: number,
  batchSize: number,
  now: Date | null = null,
): Promise<number> {
  let deleted = 0;
  for (const part of ["rows", "default"] as const) {
    const name = `prune_${status.toLowerCase()}_${part}`;
    const res = await db.query(
      named(t, name, pruneSql(t, status, part))([retentionMs, batchSize - deleted, now]),
    );
    deleted += res.rowCount ?? 0;
    if (deleted >= batchSize) break;
  }
  return deleted;
}
