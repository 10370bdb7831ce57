/**
 * The statements of durable machines (migration 0020, docs/durable-machines.md): the machine row (its
 * persisted snapshot, timers and invoke occurrences) and its event inbox.
 *
 * The machine row is the machine's lock. A send takes it to number its event (so numbers follow commit
 * order), then the live job row (so the job cannot end before the send commits), then stores the event and
 * wakes the parked job, in one transaction. The machine's runner takes it to consume an event together with
 * the snapshot that event produced, to park (after a last look at the inbox) and to finish. Lock order,
 * wherever both are taken: the machine row first, then the job row (the send; the runner's park); whatever
 * ends a job (an outcome, a cancel, a sweep) takes the job row only. So a send either commits before the
 * park, which then sees its event and does not park, or after it, and then finds the job parked and wakes
 * it: no event waits on a sleeping machine.
 *
 * Every write of the runner is guarded by the job's lease ({@link heldBySql}): a node that lost the job (its
 * lease swept after a missed heartbeat) can no longer change the machine.
 */
import { named, type Queryable, type Tables } from "../../db/sql.js";
import { heldBySql } from "../jobs/lease-sql.js";

const machines = (t: Tables) => `${t.s}.scheduler_machine`;
const events = (t: Tables) => `${t.s}.scheduler_machine_event`;
const machineTypes = (t: Tables) => `${t.s}.scheduler_machine_type`;

/** A machine's row, as its runner reads it. */
export interface MachineRow {
  jobId: string;
  type: string;
  version: string | null;
  snapshot: unknown;
  timers: unknown;
  occurrences: Record<string, number>;
  lastSeq: number;
  finishedAt: Date | null;
}

interface RawMachineRow {
  job_id: string;
  type: string;
  version: string | null;
  snapshot: unknown;
  timers: unknown;
  occurrences: Record<string, number> | null;
  last_seq: string;
  finished_at: Date | null;
}

const machineRow = (r: RawMachineRow): MachineRow => ({
  jobId: r.job_id,
  type: r.type,
  version: r.version,
  snapshot: r.snapshot,
  timers: r.timers,
  occurrences: r.occurrences ?? {},
  lastSeq: Number(r.last_seq),
  finishedAt: r.finished_at,
});

const machineColumns =
  "m.job_id, m.type, m.version, m.snapshot, m.timers, m.occurrences, m.last_seq, m.finished_at";

/**
 * Reads a machine's row for its runner on `nodeId` at the start of a run, creating it (no snapshot yet)
 * on the first run and setting its version when a send created it first. Only those two cases write: a
 * resumed machine's row is read, not rewritten (its snapshot changes only under this node's lease).
 * Returns null when the job is no longer held by the node.
 */
export async function lockMachine(
  db: Queryable,
  t: Tables,
  jobId: string,
  type: string,
  version: string,
  nodeId: string,
): Promise<MachineRow | null> {
  const stmt = named(
    t,
    "machine_open",
    `WITH held AS (SELECT 1 FROM ${t.jobs} j WHERE j.id = $1 AND ${heldBySql("j", "$4")}),
     existing AS (
       SELECT ${machineColumns} FROM ${machines(t)} m
       WHERE m.job_id = $1 AND m.version IS NOT NULL AND EXISTS (SELECT 1 FROM held)
     ),
     created AS (
       INSERT INTO ${machines(t)} AS m (job_id, type, version)
       SELECT $1, $2, $3 FROM held WHERE NOT EXISTS (SELECT 1 FROM existing)
       ON CONFLICT (job_id) DO UPDATE SET version = coalesce(m.version, EXCLUDED.version)
       RETURNING ${machineColumns}
     )
     SELECT * FROM existing UNION ALL SELECT * FROM created`,
  );
  const res = await db.query<RawMachineRow>(stmt([jobId, type, version, nodeId]));
  const row = res.rows[0];
  return row ? machineRow(row) : null;
}

/**
 * Locks an existing machine row for its runner (no write: the save that follows is the transaction's one
 * row version). Returns false when the row is missing or the job is no longer held by the node.
 */
export async function relockMachine(
  db: Queryable,
  t: Tables,
  jobId: string,
  nodeId: string,
): Promise<boolean> {
  const stmt = named(
    t,
    "machine_relock",
    `SELECT 1 FROM ${machines(t)} m
     WHERE m.job_id = $1 AND EXISTS (SELECT 1 FROM ${t.jobs} j WHERE j.id = $1 AND ${heldBySql("j", "$2")})
     FOR UPDATE OF m`,
  );
  const res = await db.query(stmt([jobId, nodeId]));
  return res.rows.length === 1;
}

/** An event waiting in a machine's inbox. */
export interface PendingEvent {
  seq: number;
  event: unknown;
  /** When its send committed (epoch ms, database clock). */
  sentAt: number;
}

/** The oldest `limit` pending events of a machine, in sequence (commit) order. */
export async function pendingEvents(
  db: Queryable,
  t: Tables,
  jobId: string,
  limit: number,
): Promise<PendingEvent[]> {
  const stmt = named(
    t,
    "machine_pending",
    `SELECT seq, event, (extract(epoch FROM sent_at) * 1000)::float8 AS sent_ms
     FROM ${events(t)} WHERE job_id = $1 AND status = 'pending' ORDER BY seq LIMIT $2`,
  );
  const res = await db.query<{ seq: string; event: unknown; sent_ms: number }>(stmt([jobId, limit]));
  return res.rows.map((r) => ({ seq: Number(r.seq), event: r.event, sentAt: r.sent_ms }));
}

/** What a runner saves of its machine after an input. */
export interface MachineSave {
  snapshotJson: string;
  timersJson: string;
  occurrencesJson: string;
  /** True when the machine ended: later sends are refused. */
  finished: boolean;
}

/**
 * Saves a machine's snapshot, guarded by the job's lease. With `finished`, the machine is marked ended and
 * its still-pending events ignored. Returns false when the node no longer holds the job.
 */
export async function saveMachine(
  db: Queryable,
  t: Tables,
  jobId: string,
  nodeId: string,
  save: MachineSave,
): Promise<boolean> {
  const stmt = named(
    t,
    "machine_save",
    `UPDATE ${machines(t)} m
     SET snapshot = $3::jsonb, timers = $4::jsonb, occurrences = $5::jsonb, updated_at = now(),
         finished_at = CASE WHEN $6::boolean THEN now() ELSE NULL END
     WHERE m.job_id = $1 AND EXISTS (SELECT 1 FROM ${t.jobs} j WHERE j.id = $1 AND ${heldBySql("j", "$2")})`,
  );
  const res = await db.query(
    stmt([jobId, nodeId, save.snapshotJson, save.timersJson, save.occurrencesJson, save.finished]),
  );
  if (res.rowCount !== 1) return false;
  if (save.finished) {
    const ignore = named(
      t,
      "machine_ignore_rest",
      `UPDATE ${events(t)} SET status = 'ignored', handled_at = now()
       WHERE job_id = $1 AND status = 'pending'`,
    );
    await db.query(ignore([jobId]));
  }
  return true;
}

/**
 * Marks a pending event consumed or ignored, with the state value after it. Returns false when it was
 * not pending (it was handled already: the caller's transaction must not go on).
 */
export async function markEvent(
  db: Queryable,
  t: Tables,
  jobId: string,
  seq: number,
  status: "consumed" | "ignored",
  stateAfterJson: string,
): Promise<boolean> {
  const stmt = named(
    t,
    "machine_mark_event",
    `UPDATE ${events(t)} SET status = $3, handled_at = now(), state_after = $4::jsonb
     WHERE job_id = $1 AND seq = $2 AND status = 'pending'`,
  );
  const res = await db.query(stmt([jobId, seq, status, stateAfterJson]));
  return res.rowCount === 1;
}

/** Whether a machine has a pending event (its runner's last look before it parks, under the row lock). */
export async function hasPendingEvent(db: Queryable, t: Tables, jobId: string): Promise<boolean> {
  const stmt = named(
    t,
    "machine_has_pending",
    `SELECT EXISTS (SELECT 1 FROM ${events(t)} WHERE job_id = $1 AND status = 'pending') AS pending`,
  );
  const res = await db.query<{ pending: boolean }>(stmt([jobId]));
  return res.rows[0]?.pending === true;
}

/** What a send found: the event's number, or why it was refused. */
export type SendOutcome =
  | { seq: number; status: string }
  | { refused: "not-found" }
  | { refused: "not-a-machine"; type: string }
  | { refused: "finished"; status: string };

/** Records that `types` are durable machines (a node's start; idempotent, see migration 0021). */
export async function recordMachineTypes(db: Queryable, t: Tables, types: string[]): Promise<void> {
  const stmt = named(
    t,
    "machine_types_record",
    `INSERT INTO ${machineTypes(t)} (type) SELECT unnest($1::text[]) ON CONFLICT (type) DO NOTHING`,
  );
  await db.query(stmt([types]));
}

/**
 * Stores an event for a machine (in the caller's transaction): locks the machine's row (creating it when
 * the machine has not run yet), numbers the event, and inserts it pending. A machine that ended, a job
 * that is no machine, or one that is finished or unknown, refuses it (the caller rolls back).
 */
export async function storeEvent(
  db: Queryable,
  t: Tables,
  jobId: string,
  eventJson: string,
): Promise<SendOutcome> {
  const job = named(t, "machine_send_job", `SELECT j.type, j.status FROM ${t.all} j WHERE j.id = $1`);
  const found = (await db.query<{ type: string; status: string }>(job([jobId]))).rows[0];
  if (!found) return { refused: "not-found" };
  // A machine's job is one whose machine has run (its row has a version), or of a type some node
  // registered as a machine (it has not run yet). Anything else would never consume the event.
  const isMachine = named(
    t,
    "machine_send_is_machine",
    `SELECT EXISTS (SELECT 1 FROM ${machines(t)} m WHERE m.job_id = $1 AND m.version IS NOT NULL)
         OR EXISTS (SELECT 1 FROM ${machineTypes(t)} k WHERE k.type = $2) AS machine`,
  );
  const kind = (await db.query<{ machine: boolean }>(isMachine([jobId, found.type]))).rows[0];
  if (kind?.machine !== true) return { refused: "not-a-machine", type: found.type };
  const lock = named(
    t,
    "machine_send_lock",
    `INSERT INTO ${machines(t)} AS m (job_id, type, last_seq) VALUES ($1, $2, 1)
     ON CONFLICT (job_id) DO UPDATE SET last_seq = m.last_seq + 1
     RETURNING m.last_seq, m.finished_at`,
  );
  const row = (await db.query<{ last_seq: string; finished_at: Date | null }>(lock([jobId, found.type])))
    .rows[0];
  // Then the live job row, locked until this send commits: a kill, cancel or DEAD that commits first is
  // seen here (the lock waits for it, and the row it moved to the finished table is gone from the live
  // one), and one that comes later waits for this send, so an event is never accepted for a job that
  // ended before it committed. The order is the runner's (machine row, then job row: its park), and the
  // paths that end a job lock only the job row, so no deadlock can form.
  const live = named(
    t,
    "machine_send_lock_job",
    `SELECT j.status FROM ${t.jobs} j WHERE j.id = $1 FOR NO KEY UPDATE`,
  );
  const locked = (await db.query<{ status: string }>(live([jobId]))).rows[0];
  const now = locked ?? (await db.query<{ type: string; status: string }>(job([jobId]))).rows[0];
  if (!now) return { refused: "not-found" }; // deleted since the first read (pruned, or deleted at success)
  const status = now.status;
  if (!row || row.finished_at !== null || ["SUCCEEDED", "DEAD", "CANCELED"].includes(status)) {
    return { refused: "finished", status: row?.finished_at ? "SUCCEEDED" : status };
  }
  const seq = Number(row.last_seq);
  const insert = named(
    t,
    "machine_send_insert",
    `INSERT INTO ${events(t)} (job_id, seq, event) VALUES ($1, $2, $3::jsonb)`,
  );
  await db.query(insert([jobId, seq, eventJson]));
  return { seq, status };
}

/**
 * Starts afresh the machines of those of the jobs that are DEAD (a `dlq.retry` with `steps: "discard"`, in
 * its transaction, before the jobs move back to the live table): no snapshot, no timers, no invoke
 * occurrences, and no version, so the next run starts the type's current definition from the job's payload,
 * as a new job would. The event numbers go on and the history stays; events still pending (accepted, never
 * delivered) stay pending, delivered to the fresh machine in their order. A live job's machine is never
 * touched. Returns how many machines were reset.
 */
export async function restartMachines(db: Queryable, t: Tables, jobIds: readonly string[]): Promise<number> {
  const stmt = named(
    t,
    "machine_restart",
    `UPDATE ${machines(t)} m
     SET snapshot = NULL, timers = '[]', occurrences = '{}', version = NULL, finished_at = NULL,
         updated_at = now()
     WHERE m.job_id = ANY($1::bigint[])
       AND EXISTS (SELECT 1 FROM ${t.finished} f WHERE f.id = m.job_id AND f.status = 'DEAD')`,
  );
  return (await db.query(stmt([jobIds]))).rowCount ?? 0;
}

/** One event of a machine's history. */
export interface MachineEventRecord {
  seq: number;
  type: string;
  status: "pending" | "consumed" | "ignored";
  sentAt: Date;
  handledAt: Date | null;
  stateAfter: unknown;
}

/** A machine's row and its latest `limit` events (newest first), for inspection. */
export async function readMachine(
  db: Queryable,
  t: Tables,
  jobId: string,
  limit: number,
): Promise<{ row: MachineRow; events: MachineEventRecord[] } | null> {
  const one = named(t, "machine_read", `SELECT ${machineColumns} FROM ${machines(t)} m WHERE m.job_id = $1`);
  const row = (await db.query<RawMachineRow>(one([jobId]))).rows[0];
  if (!row) return null;
  const list = named(
    t,
    "machine_read_events",
    `SELECT seq, event->>'type' AS type, status, sent_at, handled_at, state_after
     FROM ${events(t)} WHERE job_id = $1 ORDER BY seq DESC LIMIT $2`,
  );
  const res = await db.query<{
    seq: string;
    type: string;
    status: MachineEventRecord["status"];
    sent_at: Date;
    handled_at: Date | null;
    state_after: unknown;
  }>(list([jobId, limit]));
  return {
    row: machineRow(row),
    events: res.rows.map((r) => ({
      seq: Number(r.seq),
      type: r.type,
      status: r.status,
      sentAt: r.sent_at,
      handledAt: r.handled_at,
      stateAfter: r.state_after,
    })),
  };
}
