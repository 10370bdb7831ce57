/**
 * The signal inbox (scheduler_job_signal, migration 0018): named signals are stored whether or not the
 * job waits yet, and a named `ctx.waitForSignal(name)` consumes the oldest one of its name.
 *
 * - **send** (`pawl.signal(id, payload, { name })`), in one transaction: lock the job's live row, store
 *   the signal, and wake the job if it is parked on a wait of that name. The lock orders the send against
 *   the job's park (which locks the row, then looks in the inbox): either the park sees the stored signal,
 *   or the send sees the parked job. A finished job refuses the signal (nothing is stored).
 * - **consume**, one statement: take the oldest unconsumed signal of the name (skipping one another run
 *   holds), record it as the wait's step, and mark it consumed only if that record was written: the
 *   consumption and the record commit together, so a signal is consumed exactly once and never lost.
 */
import { named, type Queryable, type Tables } from "../../db/sql.js";
import { durableTables } from "./durable-tables.js";
import { stepColumns, stepFromRow, type StepRecord, type StepRow } from "./step-row.js";

/** A job a signal made runnable. */
export interface SignalWoken {
  id: string;
  type: string;
  queue: string;
  priority: number;
  /** PENDING or PAUSED; WAITING when a live job holds its key (the sweep cancels it). */
  status: string;
}

/** What storing a named signal did. */
export type NamedSignalResult =
  { stored: { signalId: string; woken: SignalWoken | null } } | { refused: string | null };

/**
 * Stores a named signal for a live job (must run inside a transaction: `db` is its client) and wakes the
 * job when it is parked on that name. A job that is not live refuses it with its status (null: no job).
 */
export async function sendNamedSignal(
  db: Queryable,
  t: Tables,
  jobId: string,
  name: string,
  payloadJson: string,
): Promise<NamedSignalResult> {
  const d = durableTables(t);
  const lock = named(
    t,
    "durable_signal_lock",
    `SELECT j.id FROM ${t.jobs} j WHERE j.id = $1 FOR NO KEY UPDATE`,
  );
  if ((await db.query(lock([jobId]))).rows.length === 0) {
    const finished = named(t, "durable_signal_refused", `SELECT status FROM ${t.all} WHERE id = $1`);
    const row = (await db.query<{ status: string }>(finished([jobId]))).rows[0];
    return { refused: row?.status ?? null };
  }
  const insert = named(
    t,
    "durable_signal_insert",
    `INSERT INTO ${d.signals} (job_id, name, payload) VALUES ($1, $2, $3::jsonb) RETURNING id`,
  );
  const signalId = (await db.query<{ id: string }>(insert([jobId, name, payloadJson]))).rows[0]!.id;
  const wake = named(
    t,
    "durable_signal_wake",
    `WITH w AS (
       SELECT ${d.wake}(j.id) FROM ${t.jobs} j
       WHERE j.id = $1 AND j.status = 'WAITING' AND j.signal_state = 'waiting'
         AND EXISTS (SELECT 1 FROM ${d.steps} s
                     WHERE s.job_id = j.id AND s.name = $2 AND s.kind = 'signal' AND s.status = 'waiting')
     )
     SELECT (SELECT count(*) FROM w) AS n`,
  );
  const n = Number((await db.query<{ n: string }>(wake([jobId, name]))).rows[0]?.n ?? 0);
  if (n === 0) return { stored: { signalId, woken: null } };
  const read = named(
    t,
    "durable_signal_woken",
    `SELECT id, type, queue, priority, status FROM ${t.jobs} WHERE id = $1`,
  );
  const woken = (await db.query<SignalWoken>(read([jobId]))).rows[0] ?? null;
  return { stored: { signalId, woken } };
}

/**
 * Consumes the oldest unconsumed signal `name` of the job into the wait's step (result `{ payload, at }`,
 * `at` the time it was sent). Returns the recorded step, or null when no signal was there to take (or
 * another run recorded the step first: read it then).
 */
export async function consumeSignal(
  db: Queryable,
  t: Tables,
  jobId: string,
  name: string,
  attempt: number,
): Promise<StepRecord | null> {
  const d = durableTables(t);
  const stmt = named(
    t,
    "durable_signal_consume",
    `WITH m AS (
       SELECT g.id, g.payload, g.sent_at FROM ${d.signals} g
       WHERE g.job_id = $1 AND g.name = $2 AND g.consumed_at IS NULL
       ORDER BY g.id LIMIT 1 FOR UPDATE SKIP LOCKED
     ), rec AS (
       INSERT INTO ${d.steps} AS s (job_id, name, kind, status, attempt, finished_at, result)
       SELECT $1, $2, 'signal', 'succeeded', $3, now(),
              jsonb_build_object('payload', m.payload, 'at', m.sent_at, 'signalId', m.id::text)
       FROM m
       ON CONFLICT (job_id, name) DO UPDATE
       SET status = 'succeeded', attempt = excluded.attempt, finished_at = excluded.finished_at,
           result = excluded.result
       WHERE s.status = 'waiting'
       RETURNING ${stepColumns("s")}
     ), used AS (
       UPDATE ${d.signals} g SET consumed_at = now()
       FROM rec WHERE g.id = (rec.result ->> 'signalId')::bigint
       RETURNING g.id
     )
     SELECT rec.* FROM rec, (SELECT count(*) FROM used) u`,
  );
  const row = (await db.query<StepRow>(stmt([jobId, name, attempt]))).rows[0];
  return row ? stepFromRow(row) : null;
}

/** The job's signals not consumed yet, oldest first (for `getJob` and explain). */
export async function pendingSignals(
  db: Queryable,
  t: Tables,
  jobId: string,
): Promise<{ name: string; sentAt: Date }[]> {
  const d = durableTables(t);
  const stmt = named(
    t,
    "durable_signal_pending",
    `SELECT name, sent_at FROM ${d.signals} WHERE job_id = $1 AND consumed_at IS NULL ORDER BY id LIMIT 100`,
  );
  const res = await db.query<{ name: string; sent_at: Date }>(stmt([jobId]));
  return res.rows.map((r) => ({ name: r.name, sentAt: r.sent_at }));
}
