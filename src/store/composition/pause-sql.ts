/**
 * The pause statements (scheduler_pause, and PAUSED rows of scheduler_job_queue).
 *
 * A paused job is status PAUSED, so no claim can see it: the claim statements read PENDING rows only and
 * need no change. Pausing a queue or a job type, in one transaction that holds the job table in SHARE ROW
 * EXCLUSIVE mode (writers wait; readers do not):
 *
 * 1. records the pause in scheduler_pause;
 * 2. creates, if missing, the two statement triggers that call `pawl_hold_paused()` (migration 0004), so
 *    any statement that makes a row of a paused queue or type PENDING turns it PAUSED before it commits;
 * 3. moves the queue's (or type's) PENDING rows to PAUSED.
 *
 * The lock is what makes "never claimed" exact: no write can be in flight between steps 1 and 3, and
 * every write after the commit sees the triggers. The triggers exist only while a pause does (the last
 * resume drops them), so the write path pays nothing for pauses nobody uses. Because they are DDL, pausing
 * needs the role that owns the tables (the one that ran the migrations), and waits at most
 * {@link pauseLockTimeoutMs} for the lock. Resuming reverses the three steps for the rows whose pause
 * it lifts; rows still held by another pause (the job's type as well as its queue) stay PAUSED, and rows
 * whose unique key a live job holds are CANCELED (the rule of ./return-to-pending.ts).
 */
import { jobColumns, jobFromRow, type Job, type JobRow } from "../jobs/job-row.js";
import {
  duplicateOf,
  returnCtes,
  runReturn,
  type DuplicateCanceled,
  type ReturnedRow,
} from "../jobs/return-to-pending.js";
import type { Queryable, Tables } from "../../db/sql.js";
import { claimableSql } from "../jobs/lease-sql.js";

/** The pause table of a schema. */
export const pauseTable = (t: Tables): string => `${t.s}.scheduler_pause`;

/** What a pause applies to. */
export type PauseKind = "queue" | "type";

/** How long pausing or resuming waits for the job table's lock before failing (ms). */
export const pauseLockTimeoutMs = 5000;

const triggerNames = ["pawl_hold_paused_insert", "pawl_hold_paused_update"] as const;

/**
 * Statements that lock the job table for a pause change (run first in the transaction). A pause creates
 * the triggers (SHARE ROW EXCLUSIVE is what CREATE TRIGGER takes). A resume may drop them, which takes
 * ACCESS EXCLUSIVE: it takes that at once, because upgrading later deadlocks with any claim or outcome
 * that got its ACCESS SHARE lock meanwhile and waits for its ROW EXCLUSIVE one.
 */
function lockSql(t: Tables, mode: "SHARE ROW EXCLUSIVE" | "ACCESS EXCLUSIVE"): string[] {
  return [`SET LOCAL lock_timeout = '${pauseLockTimeoutMs}ms'`, `LOCK TABLE ${t.jobs} IN ${mode} MODE`];
}

async function ensureTriggers(db: Queryable, t: Tables): Promise<void> {
  const res = await db.query<{ tgname: string }>(
    `SELECT tgname FROM pg_trigger WHERE tgrelid = $1::regclass AND tgname = ANY($2::text[])`,
    [t.jobs, triggerNames],
  );
  const have = new Set(res.rows.map((r) => r.tgname));
  for (const [name, event] of [
    [triggerNames[0], "INSERT"],
    [triggerNames[1], "UPDATE"],
  ] as const) {
    if (have.has(name)) continue;
    await db.query(
      `CREATE TRIGGER ${name} AFTER ${event} ON ${t.jobs} REFERENCING NEW TABLE AS pawl_changed
       FOR EACH STATEMENT EXECUTE FUNCTION ${t.s}.pawl_hold_paused()`,
    );
  }
}

async function dropTriggersIfUnused(db: Queryable, t: Tables): Promise<void> {
  const left = await db.query(`SELECT 1 FROM ${pauseTable(t)} LIMIT 1`);
  if ((left.rowCount ?? 0) > 0) return;
  for (const name of triggerNames) await db.query(`DROP TRIGGER IF EXISTS ${name} ON ${t.jobs}`);
}

/**
 * The return rule of a resume (./return-to-pending.ts) for the rows `where` picks: PENDING, due no earlier
 * than now (the time spent paused is not waiting time for the age boost, and a due time past the claim
 * cursors' floors lets every node's next discovery pass find it); still PAUSED (attributed to the pause
 * that still holds it); or CANCELED when a live job holds its unique key.
 */
function resumeCtes(t: Tables, where: string): string {
  return returnCtes(t, {
    pick: `FROM ${t.jobs} j WHERE ${where}`,
    set: {
      scheduled_time:
        "CASE WHEN d.pause IS NULL THEN greatest(j.scheduled_time, now()) ELSE j.scheduled_time END",
      updated_at: "now()",
    },
    returning: jobColumns("j"),
  });
}

/** What a pause or resume of a queue or type did. */
export interface PauseChange {
  /** Whether the pause was created (pause) or removed (resume) by this call. */
  changed: boolean;
  /** Jobs moved to PAUSED (pause) or back to PENDING (resume). */
  jobs: number;
  /** The job types of the rows made PENDING (resume only). */
  types: string[];
  /** Jobs CANCELED instead of resumed because a live job holds their unique key (resume only). */
  duplicates: DuplicateCanceled[];
}

/**
 * Pauses a queue or a job type. `db` must be a client inside a transaction the caller commits (the lock
 * and the triggers are transactional).
 */
export async function pauseRule(
  db: Queryable,
  t: Tables,
  kind: PauseKind,
  name: string,
  by: string,
): Promise<PauseChange> {
  for (const sql of lockSql(t, "SHARE ROW EXCLUSIVE")) await db.query(sql);
  const ins = await db.query(
    `INSERT INTO ${pauseTable(t)} (kind, name, paused_by) VALUES ($1, $2, $3) ON CONFLICT (kind, name) DO NOTHING`,
    [kind, name, by],
  );
  await ensureTriggers(db, t);
  const column = kind === "queue" ? "queue" : "type";
  const moved = await db.query(
    `UPDATE ${t.jobs} SET status = 'PAUSED', paused_by = $2, updated_at = now()
     WHERE ${claimableSql()} AND ${column} = $1`,
    [name, kind],
  );
  return { changed: (ins.rowCount ?? 0) > 0, jobs: moved.rowCount ?? 0, types: [], duplicates: [] };
}

/** Resumes a queue or a job type (same transaction rule as {@link pauseRule}). */
export async function resumeRule(
  db: Queryable,
  t: Tables,
  kind: PauseKind,
  name: string,
): Promise<PauseChange> {
  for (const sql of lockSql(t, "ACCESS EXCLUSIVE")) await db.query(sql);
  const del = await db.query(`DELETE FROM ${pauseTable(t)} WHERE kind = $1 AND name = $2`, [kind, name]);
  const column = kind === "queue" ? "queue" : "type";
  // Rows another pause still holds stay PAUSED (and are re-attributed to it). The job table is locked, so
  // no enqueue can race the rule here; the savepoint retry is there all the same.
  const rows = await runReturn<JobRow & ReturnedRow>(
    db,
    {
      text: `${resumeCtes(t, `j.status = 'PAUSED' AND j.paused_by IN ('queue', 'type') AND j.${column} = $1`)}
             SELECT * FROM returned UNION ALL SELECT * FROM duplicates`,
      values: [name],
    },
    true,
  );
  await dropTriggersIfUnused(db, t);
  const pending = rows.filter((r) => r.status === "PENDING");
  return {
    changed: (del.rowCount ?? 0) > 0,
    jobs: pending.length,
    types: [...new Set(pending.map((r) => r.type))],
    duplicates: rows.map(duplicateOf).filter((d) => d !== null),
  };
}

/** A pause of a queue or a job type, with how many jobs it holds. */
export interface PauseRow {
  kind: PauseKind;
  name: string;
  paused_at: Date;
  paused_by: string | null;
  jobs: string;
}

/** Every pause, with the PAUSED jobs each holds. */
export async function listPauses(db: Queryable, t: Tables): Promise<PauseRow[]> {
  const res = await db.query<PauseRow>(
    `SELECT p.kind, p.name, p.paused_at, p.paused_by,
            (SELECT count(*) FROM ${t.jobs} j
             WHERE j.status = 'PAUSED' AND j.paused_by = p.kind
               AND ((p.kind = 'queue' AND j.queue = p.name) OR (p.kind = 'type' AND j.type = p.name))) AS jobs
     FROM ${pauseTable(t)} p ORDER BY p.kind, p.name`,
  );
  return res.rows;
}

/**
 * The result of pausing or resuming one job: the job after the call (CANCELED, with `duplicate` set, when
 * a resume found its unique key held by a live job), or the status that refused it (null: no such job).
 */
export type JobPauseResult = { job: Job; duplicate: DuplicateCanceled | null } | { refused: string | null };

/** Pauses one PENDING job (PAUSED by `job`). */
export async function pauseOneJob(db: Queryable, t: Tables, id: string): Promise<JobPauseResult> {
  return onOne(
    db,
    t,
    id,
    `WITH moved AS (
       UPDATE ${t.jobs} j SET status = 'PAUSED', paused_by = 'job', updated_at = now()
       WHERE j.id = $1 AND ${claimableSql("j")}
       RETURNING ${jobColumns("j")}, NULL::text AS live_job_id)`,
  );
}

/**
 * Resumes one job paused by pauseJob: PENDING, or still PAUSED (by the rule) when a queue or type pause
 * holds it, or CANCELED when a live job holds its unique key.
 */
export async function resumeOneJob(db: Queryable, t: Tables, id: string): Promise<JobPauseResult> {
  return onOne(
    db,
    t,
    id,
    `${resumeCtes(t, `j.id = $1 AND j.status = 'PAUSED' AND j.paused_by = 'job'`)},
     moved AS (SELECT * FROM returned UNION ALL SELECT * FROM duplicates)`,
  );
}

/**
 * Runs `ctes` (whose CTE `moved` returns the job's row if it changed, with `live_job_id`) and, when it did
 * not change, reads the status that refused it, in the same statement. A resume that lost a unique key
 * to a concurrent enqueue runs again (see {@link runReturn}).
 */
async function onOne(db: Queryable, t: Tables, id: string, ctes: string): Promise<JobPauseResult> {
  const rows = await runReturn<JobRow & ReturnedRow & { current: string | null }>(db, {
    text: `${ctes}
     SELECT m.*, NULL AS current FROM moved m
     UNION ALL
     SELECT ${jobColumns("j")}, NULL::text,
            CASE WHEN j.status = 'PAUSED' THEN 'PAUSED by its ' || j.paused_by ELSE j.status END
     FROM ${t.all} j WHERE j.id = $1 AND NOT EXISTS (SELECT 1 FROM moved)`,
    values: [id],
  });
  const row = rows[0];
  if (!row) return { refused: null };
  if (row.current !== null) return { refused: row.current };
  return { job: jobFromRow(row), duplicate: duplicateOf(row) };
}
