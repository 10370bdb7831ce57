/**
 * The step statements (scheduler_job_step, migration 0018): what a durable handler's run reads once and
 * writes per step.
 *
 * - **load**: every step of a job, with the database's time (the one clock durable decisions use).
 * - **record**: a step's outcome. The first success recorded wins: a second run of the same step (a node
 *   that lost its lease kept running) gets the recorded row back instead of its own, so every run after
 *   it sees one answer. A failure never overwrites a success.
 * - **begin wait**: the waiting row of a sleep, signal or children wait, written once (its due time and
 *   timeout are fixed by the first run that reached the wait), and returned as it is on later runs.
 * - **children**: the state of awaited children, read from live and finished rows alike.
 */
import { named, type Queryable, type Tables } from "../../db/sql.js";
import { statusSql } from "../jobs/lease-sql.js";
import { durableTables } from "./durable-tables.js";
import { stepColumns, stepFromRow, type StepKind, type StepRecord, type StepRow } from "./step-row.js";

/** A job's recorded steps and the database's time when they were read. */
export interface LoadedSteps {
  steps: StepRecord[];
  now: Date;
}

/** Reads every step of a job, and now(). */
export async function loadSteps(db: Queryable, t: Tables, jobId: string): Promise<LoadedSteps> {
  const d = durableTables(t);
  const stmt = named(
    t,
    "durable_load_steps",
    `SELECT n.now AS db_now, ${stepColumns("s")}
     FROM (SELECT now() AS now) n LEFT JOIN ${d.steps} s ON s.job_id = $1
     ORDER BY s.started_at, s.name`,
  );
  const res = await db.query<StepRow & { db_now: Date }>(stmt([jobId]));
  const now = res.rows[0]?.db_now ?? new Date();
  return { now, steps: res.rows.filter((r) => r.job_id !== null).map(stepFromRow) };
}

/** Reads one step. */
export async function readStep(
  db: Queryable,
  t: Tables,
  jobId: string,
  name: string,
): Promise<StepRecord | null> {
  const d = durableTables(t);
  const stmt = named(
    t,
    "durable_read_step",
    `SELECT ${stepColumns("s")} FROM ${d.steps} s WHERE s.job_id = $1 AND s.name = $2`,
  );
  const row = (await db.query<StepRow>(stmt([jobId, name]))).rows[0];
  return row ? stepFromRow(row) : null;
}

/** A step outcome to record. */
export interface StepWrite {
  jobId: string;
  name: string;
  kind: StepKind;
  attempt: number;
  /** When the run of the step began (a waiting row keeps its own start). */
  startedAt: Date;
  status: "succeeded" | "failed";
  /** The result's JSON text (succeeded), or null. */
  resultJson: string | null;
  /** `{ name, message }` of the failure, or null. */
  error: { name: string; message: string } | null;
  /** A spawn's child id. */
  children?: readonly string[] | null;
}

/**
 * Records a step's outcome and returns the recorded row: this write's, or the success another run
 * recorded first (then this write changed nothing).
 */
export async function recordStep(db: Queryable, t: Tables, w: StepWrite): Promise<StepRecord> {
  const d = durableTables(t);
  const stmt = named(
    t,
    "durable_record_step",
    `INSERT INTO ${d.steps} AS s
       (job_id, name, kind, status, attempt, started_at, finished_at, result, error, children)
     VALUES ($1, $2, $3, $4, $5, $6, now(), $7::jsonb, $8::jsonb, $9::bigint[])
     ON CONFLICT (job_id, name) DO UPDATE
     SET status = excluded.status, attempt = excluded.attempt,
         started_at = CASE WHEN s.status = 'waiting' THEN s.started_at ELSE excluded.started_at END,
         finished_at = excluded.finished_at, result = excluded.result, error = excluded.error,
         children = coalesce(excluded.children, s.children)
     WHERE s.status <> 'succeeded'
     RETURNING ${stepColumns("s")}`,
  );
  const res = await db.query<StepRow>(
    stmt([
      w.jobId,
      w.name,
      w.kind,
      w.status,
      w.attempt,
      w.startedAt,
      w.resultJson,
      w.error === null ? null : JSON.stringify(w.error),
      w.children ?? null,
    ]),
  );
  const row = res.rows[0];
  if (row) return stepFromRow(row);
  const recorded = await readStep(db, t, w.jobId, w.name);
  if (!recorded) throw new Error(`step ${JSON.stringify(w.name)} of job ${w.jobId} vanished while recorded`);
  return recorded;
}

/** The waiting row of a wait, written by the first run that reaches it. */
export interface WaitBegin {
  jobId: string;
  name: string;
  kind: "sleep" | "signal" | "wait";
  attempt: number;
  /** A fixed due time (a sleep until a Date). */
  at: Date | null;
  /** Or a due time this many ms after the database's now (a sleep's ms, a wait's timeout). */
  afterMs: number | null;
  /** The ids a children wait awaits. */
  children?: readonly string[] | null;
}

/**
 * Writes a wait's waiting row unless the step is recorded already, and returns the step as it stands
 * (the row just written, or the one an earlier run wrote, whatever its status) with the database's time.
 */
export async function beginWait(
  db: Queryable,
  t: Tables,
  w: WaitBegin,
): Promise<{ step: StepRecord; now: Date }> {
  const d = durableTables(t);
  const stmt = named(
    t,
    "durable_begin_wait",
    `WITH ins AS (
       INSERT INTO ${d.steps} AS s (job_id, name, kind, status, attempt, wake_at, children)
       VALUES ($1, $2, $3, 'waiting', $4,
               coalesce($5::timestamptz, now() + $6::float8 * interval '1 millisecond'), $7::bigint[])
       ON CONFLICT (job_id, name) DO NOTHING
       RETURNING ${stepColumns("s")}
     )
     SELECT *, now() AS db_now FROM ins
     UNION ALL
     SELECT ${stepColumns("s")}, now() FROM ${d.steps} s
     WHERE s.job_id = $1 AND s.name = $2 AND NOT EXISTS (SELECT 1 FROM ins)`,
  );
  const params = [w.jobId, w.name, w.kind, w.attempt, w.at, w.afterMs, w.children ?? null];
  for (let tries = 0; ; tries++) {
    const row = (await db.query<StepRow & { db_now: Date }>(stmt(params))).rows[0];
    if (row) return { step: stepFromRow(row), now: row.db_now };
    // A concurrent run inserted it after this statement's snapshot: read it once more.
    if (tries >= 2) throw new Error(`wait ${JSON.stringify(w.name)} of job ${w.jobId} could not be read`);
  }
}

/** An awaited child's state. */
export interface ChildState {
  id: string;
  type: string;
  /** As users see it (RUNNING for a leased row). */
  status: string;
  result: unknown;
  /** The last error's `{ name, message }`, or null. */
  error: { name?: string; message?: string } | null;
}

/** The states of `ids` (ids with no job are left out). */
export async function childStates(db: Queryable, t: Tables, ids: readonly string[]): Promise<ChildState[]> {
  const stmt = named(
    t,
    "durable_child_states",
    `SELECT j.id, j.type, ${statusSql("j")} AS status, j.result, j.errors -> -1 AS error
     FROM ${t.all} j WHERE j.id = ANY($1::bigint[])`,
  );
  const res = await db.query<ChildState>(stmt([ids]));
  return res.rows;
}

/** Links a child to the job that spawned it (in the spawn's transaction). */
export async function linkChild(db: Queryable, t: Tables, parentId: string, childId: string): Promise<void> {
  const stmt = named(t, "durable_link_child", `UPDATE ${t.jobs} SET parent_job_id = $1 WHERE id = $2`);
  await db.query(stmt([parentId, childId]));
}

/**
 * Claims a spawn's name in the spawn's transaction: true when this transaction wrote the row (it enqueues
 * the child next), false when the spawn is recorded already (read it instead). A concurrent spawn of the
 * same name waits here for the first one's transaction.
 */
export async function claimSpawn(
  db: Queryable,
  t: Tables,
  jobId: string,
  name: string,
  attempt: number,
): Promise<boolean> {
  const d = durableTables(t);
  const stmt = named(
    t,
    "durable_claim_spawn",
    `INSERT INTO ${d.steps} (job_id, name, kind, status, attempt, finished_at)
     VALUES ($1, $2, 'spawn', 'succeeded', $3, now())
     ON CONFLICT (job_id, name) DO NOTHING RETURNING 1`,
  );
  return ((await db.query(stmt([jobId, name, attempt]))).rowCount ?? 0) > 0;
}

/** Stores the spawned child's id on the spawn's row (its result is `{ jobId }`). */
export async function recordSpawn(
  db: Queryable,
  t: Tables,
  jobId: string,
  name: string,
  childId: string,
): Promise<StepRecord> {
  const d = durableTables(t);
  const stmt = named(
    t,
    "durable_record_spawn",
    `UPDATE ${d.steps} s SET children = ARRAY[$3::bigint], result = jsonb_build_object('jobId', $3::text)
     WHERE s.job_id = $1 AND s.name = $2 RETURNING ${stepColumns("s")}`,
  );
  const row = (await db.query<StepRow>(stmt([jobId, name, childId]))).rows[0];
  if (!row) throw new Error(`spawn ${JSON.stringify(name)} of job ${jobId} vanished while recorded`);
  return stepFromRow(row);
}

/**
 * Deletes every step of those of the jobs that are DEAD (a `dlq.retry` that starts them over; a live
 * job's steps are never touched). Returns how many rows went.
 */
/**
 * Locks the finished rows of those of `jobIds` that are DEAD, in id order, and returns their ids: a
 * discarding retry resets steps and machines of exactly these, and a retry of the same job committing
 * meanwhile (which moves the row out) is waited for and then left out, instead of having its fresh state
 * wiped by a statement that read the row before it moved.
 */
export async function lockDead(db: Queryable, t: Tables, jobIds: readonly string[]): Promise<string[]> {
  const stmt = named(
    t,
    "durable_lock_dead",
    `SELECT f.id::text AS id FROM ${t.finished} f
     WHERE f.id = ANY($1::bigint[]) AND f.status = 'DEAD' ORDER BY f.id FOR UPDATE`,
  );
  return (await db.query<{ id: string }>(stmt([jobIds]))).rows.map((r) => r.id);
}

export async function discardSteps(db: Queryable, t: Tables, jobIds: readonly string[]): Promise<number> {
  const d = durableTables(t);
  const stmt = named(
    t,
    "durable_discard_steps",
    `DELETE FROM ${d.steps} s WHERE s.job_id = ANY($1::bigint[])
       AND EXISTS (SELECT 1 FROM ${t.finished} f WHERE f.id = s.job_id AND f.status = 'DEAD')`,
  );
  return (await db.query(stmt([jobIds]))).rowCount ?? 0;
}
