/**
 * The time partitions of SUCCEEDED history (migration 0016): reading the list, and making or dropping one
 * partition through the schema's SECURITY DEFINER functions, which run the DDL as the schema's owner so a
 * node needs no more than the application role's grants (docs/deployment.md#roles).
 */
import { named, type Queryable, type Tables } from "../../db/sql.js";

/** A time partition: its range of finished_at, [start, end). */
export interface HistoryPartitionRow {
  start: Date;
  end: Date;
}

/** The partitions that exist, and the database's time as the same statement read it. */
export interface HistoryPartitionList {
  now: Date;
  partitions: HistoryPartitionRow[];
}

/** Lists the time partitions, oldest first, with the database's now(). */
export async function listHistoryPartitions(db: Queryable, t: Tables): Promise<HistoryPartitionList> {
  const res = await db.query<{ now: Date; start: Date | null; end: Date | null }>(
    named(
      t,
      "history_partitions",
      // A LEFT JOIN from now() so the time comes back even when there is no partition yet.
      `SELECT n.now, p.range_start AS start, p.range_end AS end
       FROM (SELECT now() AS now) n
       LEFT JOIN ${t.finishedPartitions} p ON true
       ORDER BY p.range_start`,
    )([]),
  );
  const partitions: HistoryPartitionRow[] = [];
  for (const r of res.rows) if (r.start && r.end) partitions.push({ start: r.start, end: r.end });
  return { now: res.rows[0]!.now, partitions };
}

/** Makes the partition for [start, end). */
export async function addHistoryPartition(db: Queryable, t: Tables, start: Date, end: Date): Promise<void> {
  await db.query(
    named(t, "history_partition_add", `SELECT ${t.s}.pawl_finished_partition_add($1, $2)`)([start, end]),
  );
}

/** Drops the partition that starts at `start`; returns how many rows it held. */
export async function dropHistoryPartition(db: Queryable, t: Tables, start: Date): Promise<number> {
  const res = await db.query<{ n: string }>(
    named(t, "history_partition_drop", `SELECT ${t.s}.pawl_finished_partition_drop($1) AS n`)([start]),
  );
  return Number(res.rows[0]?.n ?? 0);
}
