/**
 * The signal statements (the signal columns of scheduler_job_queue):
 *
 * - **park**: a RUNNING attempt whose handler called `ctx.waitForSignal()` leaves its node: WAITING, the
 *   attempt not counted, no node holding it, with its timeout as `signal_deadline`. Guarded like every
 *   outcome write (still RUNNING, still picked by the writing node).
 * - **deliver**: `pawl.signal(id, payload)` makes a job parked for a signal runnable (PENDING, or PAUSED
 *   when a queue or type pause holds it), due now, with the payload stored for its next run.
 * - **time out**: the sweep makes parked jobs whose deadline passed runnable the same way, with no
 *   payload. A partial index holds only parked rows, so the sweep costs nothing when none waits.
 *
 * Deliver and time out follow the unique-key rule of ./return-to-pending.ts: a parked job whose key a live
 * job took meanwhile is CANCELED instead of woken.
 */
import {
  duplicateOf,
  returnCtes,
  runReturn,
  type DuplicateCanceled,
  type ReturnedRow,
} from "../jobs/return-to-pending.js";
import type { ColumnValues } from "../jobs/finished-sql.js";
import { idBatchParams, inIdBatchSql, valueAtRowSql } from "../jobs/id-batch-sql.js";
import { clearLeaseSql, heldBySql } from "../jobs/lease-sql.js";
import { named, type Queryable, type Tables } from "../../db/sql.js";
import { durableTables } from "../durable/durable-tables.js";

/** A job to park: its id and how long it may wait (null: until a signal comes). */
export interface Park {
  id: string;
  timeoutMs: number | null;
}

/** Parks RUNNING jobs of `nodeId` (WAITING for a signal). Returns the ids that were still held. */
export async function parkJobs(
  db: Queryable,
  t: Tables,
  nodeId: string,
  items: readonly Park[],
): Promise<Set<string>> {
  if (items.length === 0) return new Set();
  const stmt = named(
    t,
    "signal_park",
    `UPDATE ${t.jobs} j
     SET status = 'WAITING', signal_state = 'waiting', signal_payload = NULL, signaled_at = NULL,
         signal_deadline = now() + ${valueAtRowSql("j", "$2::bigint[]", "$1::bigint[]")} * interval '1 millisecond',
         attempts = greatest(0, j.attempts - 1), ${clearLeaseSql}, updated_at = now()
     WHERE ${inIdBatchSql("j", "$1::bigint[]")} AND ${heldBySql("j", "$3")}
     RETURNING j.id`,
  );
  const res = await db.query<{ id: string }>(stmt([...idBatchParams(items, (i) => i.timeoutMs), nodeId]));
  return new Set(res.rows.map((r) => r.id));
}

/** A job made runnable by a signal or a timeout: what a wakeup needs. */
export interface WokenJob {
  id: string;
  type: string;
  queue: string;
  priority: number;
  status: "PENDING" | "PAUSED";
}

/**
 * The result of {@link deliverSignal}: the woken job; or the job CANCELED instead because a live job holds
 * its unique key; or the status that refused the signal (null: no job).
 */
export type DeliverResult =
  { woken: WokenJob } | { duplicate: DuplicateCanceled } | { refused: string | null };

/** What one timeout statement did: the jobs woken, and those CANCELED because a live job holds their key. */
export interface TimedOutWaits {
  woken: WokenJob[];
  duplicates: DuplicateCanceled[];
}

const wokenColumns = "j.id, j.type, j.queue, j.priority, j.status, j.unique_key";

/**
 * The return statement (./return-to-pending.ts) of parked jobs picked by `pick`: runnable (PENDING, or
 * PAUSED when a pause holds it), due now, with `signalSet` applied; CANCELED when a live job holds its
 * unique key.
 */
function releaseCtes(t: Tables, pick: string, signalSet: ColumnValues, skipLocked = false): string {
  return returnCtes(t, {
    pick,
    skipLocked,
    set: {
      scheduled_time: "now()",
      signal_deadline: "NULL",
      signaled_at: "now()",
      updated_at: "now()",
      ...signalSet,
    },
    returning: wokenColumns,
  });
}

type WokenRow = WokenJob & ReturnedRow;

const woken = (r: WokenRow): WokenJob => ({
  id: r.id,
  type: r.type,
  queue: r.queue,
  priority: r.priority,
  status: r.status,
});

/** Delivers a signal to a job parked for one. One statement; a refused signal reports the job's status. */
export async function deliverSignal(
  db: Queryable,
  t: Tables,
  id: string,
  payloadJson: string,
): Promise<DeliverResult> {
  const ctes = releaseCtes(
    t,
    // A durable wait (a waiting step, migration 0018) takes named signals only (../durable/signal-inbox-sql.ts).
    `FROM ${t.jobs} j WHERE j.id = $1 AND j.status = 'WAITING' AND j.signal_state = 'waiting'
       AND NOT EXISTS (SELECT 1 FROM ${durableTables(t).steps} s WHERE s.job_id = j.id AND s.status = 'waiting')`,
    { signal_state: "'delivered'", signal_payload: "$2::jsonb" },
  );
  const stmt = named(
    t,
    "signal_deliver",
    `${ctes}, moved AS (SELECT * FROM returned UNION ALL SELECT * FROM duplicates)
     SELECT m.*, NULL AS current FROM moved m
     UNION ALL
     SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL,
            CASE WHEN j.status = 'WAITING' AND j.signal_state = 'waiting' THEN 'WAITING (on a durable wait)'
                 WHEN j.status = 'WAITING' THEN 'WAITING (for its flow dependencies)' ELSE j.status END
     FROM ${t.all} j WHERE j.id = $1 AND NOT EXISTS (SELECT 1 FROM moved)`,
  );
  const rows = await runReturn<WokenRow & { current: string | null; id: string | null }>(
    db,
    stmt([id, payloadJson]),
  );
  const row = rows[0];
  if (!row) return { refused: null };
  if (row.id === null) return { refused: row.current };
  const duplicate = duplicateOf(row as WokenRow);
  return duplicate ? { duplicate } : { woken: woken(row as WokenRow) };
}

/**
 * Wakes up to `limit` parked jobs whose deadline passed (no payload); those whose unique key a live job
 * holds are CANCELED instead, so they never hold up the jobs due after them. Concurrent sweeps skip each
 * other's rows.
 */
export async function timeOutWaits(db: Queryable, t: Tables, limit: number): Promise<TimedOutWaits> {
  const ctes = releaseCtes(
    t,
    `FROM ${t.jobs} j
     WHERE j.status = 'WAITING' AND j.signal_state = 'waiting' AND j.signal_deadline <= now()
     ORDER BY j.signal_deadline LIMIT $1`,
    { signal_state: "'timeout'", signal_payload: "NULL" },
    true,
  );
  const stmt = named(
    t,
    "signal_timeout",
    `${ctes} SELECT * FROM returned UNION ALL SELECT * FROM duplicates`,
  );
  const rows = await runReturn<WokenRow>(db, stmt([limit]));
  const out: TimedOutWaits = { woken: [], duplicates: [] };
  for (const row of rows) {
    const duplicate = duplicateOf(row);
    if (duplicate) out.duplicates.push(duplicate);
    else out.woken.push(woken(row));
  }
  return out;
}

/** Milliseconds (database time) until the earliest parked job's deadline, or null when none has one. */
export async function nextWaitDeadlineMs(db: Queryable, t: Tables): Promise<number | null> {
  const stmt = named(
    t,
    "signal_next_deadline",
    `SELECT (extract(epoch FROM min(signal_deadline) - now()) * 1000)::float8 AS ms
     FROM ${t.jobs} WHERE status = 'WAITING' AND signal_state = 'waiting' AND signal_deadline IS NOT NULL`,
  );
  const res = await db.query<{ ms: number | null }>(stmt([]));
  return res.rows[0]?.ms ?? null;
}
