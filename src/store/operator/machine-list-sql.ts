/**
 * The durable machines that have not ended (migration 0020), for the actor inspector: which are running
 * on a node now and which are parked, with each one's state value and its next timer. Bounded: the newest
 * `limit` machines by job id, read backwards along the machine table's primary key, so the cost is the
 * rows shown (plus the ended machines the scan passes over), never the whole table.
 */
import { named, type Queryable, type Tables } from "../../db/sql.js";
import { statusSql } from "../jobs/lease-sql.js";

/** One machine that has not ended, as the inspector lists it. */
export interface MachineSummary {
  jobId: string;
  type: string;
  /** The registered version it runs on (null before its first run). */
  version: string | null;
  /** The persisted state value (null before its first run). */
  value: unknown;
  /** The persisted context, raw (not sanitized), when asked for ({@link MachineListOptions}); else null. */
  context: unknown;
  /** The job's status: RUNNING (live on `pickedBy`), WAITING (parked), PENDING (due to run). */
  jobStatus: string;
  /** The node running it, while it runs. */
  pickedBy: string | null;
  /** Its earliest pending `after` timer, or null. */
  nextTimerAt: Date | null;
  /** Events sent to it so far. */
  lastSeq: number;
  /** When its row last changed (a saved snapshot, a send). */
  updatedAt: Date;
}

/** Options of {@link listMachines}. */
export interface MachineListOptions {
  /** Read each machine's persisted context too (the Stately bridge shows it). Default false. */
  context?: boolean;
  /**
   * Only the parked machines (no node runs them: WAITING, or PENDING and due): the scan passes over the
   * running ones, at most as many as the cluster's slots. Default false.
   */
  parkedOnly?: boolean;
}

/** The most machines one read returns. */
export const maxMachineList = 500;

/** The newest machines (by job id) that have not ended, at most `limit` (capped at {@link maxMachineList}). */
export async function listMachines(
  db: Queryable,
  t: Tables,
  limit: number,
  options: MachineListOptions = {},
): Promise<MachineSummary[]> {
  const n = Math.max(1, Math.min(maxMachineList, Math.floor(limit)));
  const q = named(
    t,
    "machine_list",
    `SELECT m.job_id, m.type, m.version, m.snapshot -> 'value' AS value,
            CASE WHEN $2 THEN m.snapshot -> 'context' END AS context, ${statusSql("j")} AS status, j.picked_by,
            (SELECT min((x ->> 'dueAt')::bigint) FROM jsonb_array_elements(m.timers) x) AS next_due,
            m.last_seq, m.updated_at
       FROM ${t.s}.scheduler_machine m JOIN ${t.jobs} j ON j.id = m.job_id
      WHERE m.finished_at IS NULL AND (NOT $3 OR ${statusSql("j")} <> 'RUNNING')
      ORDER BY m.job_id DESC LIMIT $1`,
  );
  const res = await db.query<{
    job_id: string;
    type: string;
    version: string | null;
    value: unknown;
    context: unknown;
    status: string;
    picked_by: string | null;
    next_due: string | null;
    last_seq: string;
    updated_at: Date;
  }>(q([n, options.context === true, options.parkedOnly === true]));
  return res.rows.map((r) => ({
    jobId: r.job_id,
    type: r.type,
    version: r.version,
    value: r.value,
    context: r.context ?? null,
    jobStatus: r.status,
    pickedBy: r.picked_by,
    nextTimerAt: r.next_due === null ? null : new Date(Number(r.next_due)),
    lastSeq: Number(r.last_seq),
    updatedAt: r.updated_at,
  }));
}
