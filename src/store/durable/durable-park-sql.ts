/**
 * Parking a durable handler's attempt on a wait (sleep, named signal, children), and the check that
 * follows it.
 *
 * The park is the signal park of ./../composition/signal-sql.ts with a fixed deadline: WAITING,
 * `signal_state = 'waiting'`, the attempt given back, no node holding it, `signal_deadline` the time the
 * wait ends on its own (the signal sweep wakes it then, on any node). It commits on its own; then the
 * check, a second statement with a fresh snapshot, wakes the job at once if what it waits for came while
 * it was parking: a signal stored, the last child ended, the due time passed. A sender or an ending
 * child that committed before the park's row lock was taken is seen by the check; one that comes after
 * sees the parked row and wakes it itself (./signal-inbox-sql.ts, migration 0018's child trigger).
 */
import { named, type Queryable, type Tables } from "../../db/sql.js";
import { clearLeaseSql, heldBySql } from "../jobs/lease-sql.js";
import { durableTables } from "./durable-tables.js";

/** A durable park: the job, and when its wait ends on its own (null: never). */
export interface DurablePark {
  id: string;
  deadline: Date | null;
}

/** Parks a RUNNING job of `nodeId`. Returns false when the node no longer held it (nothing written). */
export async function parkDurable(
  db: Queryable,
  t: Tables,
  nodeId: string,
  park: DurablePark,
): Promise<boolean> {
  const stmt = named(
    t,
    "durable_park",
    `UPDATE ${t.jobs} j
     SET status = 'WAITING', signal_state = 'waiting', signal_payload = NULL, signaled_at = NULL,
         signal_deadline = $2::timestamptz, attempts = greatest(0, j.attempts - 1), ${clearLeaseSql},
         updated_at = now()
     WHERE j.id = $1 AND ${heldBySql("j", "$3")}
     RETURNING j.id`,
  );
  return (await db.query(stmt([park.id, park.deadline, nodeId]))).rows.length > 0;
}

/**
 * Wakes a durably parked job whose wait is already over (a stored signal of its name, no awaited child
 * live, the deadline passed). Returns whether it woke it. Run after {@link parkDurable} committed.
 */
export async function recheckDurable(db: Queryable, t: Tables, id: string): Promise<boolean> {
  const d = durableTables(t);
  const stmt = named(
    t,
    "durable_recheck",
    `WITH w AS (
       SELECT ${d.wake}(j.id) FROM ${t.jobs} j
       WHERE j.id = $1 AND j.status = 'WAITING' AND j.signal_state = 'waiting' AND (
         j.signal_deadline <= now()
         OR EXISTS (
           SELECT 1 FROM ${d.steps} s
           WHERE s.job_id = j.id AND s.status = 'waiting' AND (
             (s.kind = 'signal' AND EXISTS (
                SELECT 1 FROM ${d.signals} g
                WHERE g.job_id = j.id AND g.name = s.name AND g.consumed_at IS NULL))
             OR (s.kind = 'wait' AND NOT EXISTS (
                SELECT 1 FROM ${t.jobs} c WHERE c.id = ANY(s.children))))))
     )
     SELECT (SELECT count(*) FROM w) AS n`,
  );
  const res = await db.query<{ n: string }>(stmt([id]));
  return Number(res.rows[0]?.n ?? 0) > 0;
}

/**
 * Wakes the durably parked jobs whose wait ends by `at` (pawl/testing's drain with a time ahead: its sleeps
 * and timeouts skip ahead). Returns how many it woke.
 */
export async function wakeDue(db: Queryable, t: Tables, at: Date): Promise<number> {
  const d = durableTables(t);
  const stmt = named(
    t,
    "durable_wake_due",
    `WITH w AS (
       SELECT ${d.wake}(j.id) FROM ${t.jobs} j
       WHERE j.status = 'WAITING' AND j.signal_state = 'waiting' AND j.signal_deadline <= $1::timestamptz
         AND EXISTS (SELECT 1 FROM ${d.steps} s WHERE s.job_id = j.id AND s.status = 'waiting')
     )
     SELECT (SELECT count(*) FROM w) AS n`,
  );
  return Number((await db.query<{ n: string }>(stmt([at]))).rows[0]?.n ?? 0);
}
