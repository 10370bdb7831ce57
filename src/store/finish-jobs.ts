/**
 * Ending attempts, in batches: one statement completes, retries, kills or reschedules any number of
 * jobs. Every statement only touches rows still RUNNING and picked by the calling node, so a row that
 * was canceled, or recovered and re-claimed by another node, is never overwritten; the ids that were
 * actually updated are returned so the caller knows which outcomes landed.
 */
import { errorRecordJson, type ErrorInfo } from "../logic/outcome-json.js";
import { named, type Queryable, type Tables } from "./sql.js";

export type { ErrorInfo };

/** A successful attempt. */
export interface Completion {
  id: string;
  /** The handler's result as `resultJson()` (logic/outcome-json.ts) serialised it, or null. */
  resultJson: string | null;
}

/** A failed attempt that will run again after `delayMs`. */
export interface Retry {
  id: string;
  delayMs: number;
  error: ErrorInfo;
}

/** A failed attempt that ends the job in the dead letter queue. */
export interface Death {
  id: string;
  error: ErrorInfo;
}

/** An attempt handed back without counting it (snooze, shutdown, open breaker, saturated resource). */
export interface Reschedule {
  id: string;
  delayMs: number;
}

const keepErrors = 20;
// Appends an error (stamped with database time) and keeps only the newest ones.
const appendError = (col: string, err: string) =>
  `(CASE WHEN jsonb_array_length(${col}) >= ${keepErrors} THEN ${col} - 0 ELSE ${col} END) ` +
  `|| jsonb_build_array(${err} || jsonb_build_object('at', now()))`;

async function ids(res: Promise<{ rows: { id: string }[] }>): Promise<Set<string>> {
  return new Set((await res).rows.map((r) => r.id));
}

/** Marks jobs SUCCEEDED with their results. Returns the ids that were still held by `nodeId`. */
export function completeJobs(
  db: Queryable,
  t: Tables,
  nodeId: string,
  items: readonly Completion[],
): Promise<Set<string>> {
  if (items.length === 0) return Promise.resolve(new Set());
  const stmt = named(
    t,
    "complete",
    `UPDATE ${t.jobs} j
     SET status = 'SUCCEEDED', result = v.result, finished_at = now(), updated_at = now()
     FROM unnest($1::bigint[], $2::jsonb[]) AS v(id, result)
     WHERE j.id = v.id AND j.status = 'RUNNING' AND j.picked_by = $3
     RETURNING j.id`,
  );
  return ids(db.query(stmt([items.map((i) => i.id), items.map((i) => i.resultJson), nodeId])));
}

/** Puts failed jobs back to PENDING after their backoff, recording the error. */
export function retryJobs(
  db: Queryable,
  t: Tables,
  nodeId: string,
  items: readonly Retry[],
): Promise<Set<string>> {
  if (items.length === 0) return Promise.resolve(new Set());
  const stmt = named(
    t,
    "retry",
    `UPDATE ${t.jobs} j
     SET status = 'PENDING', scheduled_time = now() + v.delay_ms * interval '1 millisecond',
         errors = ${appendError("j.errors", "v.err")}, picked_by = NULL, picked_at = NULL, updated_at = now()
     FROM unnest($1::bigint[], $2::bigint[], $3::jsonb[]) AS v(id, delay_ms, err)
     WHERE j.id = v.id AND j.status = 'RUNNING' AND j.picked_by = $4
     RETURNING j.id`,
  );
  return ids(
    db.query(
      stmt([
        items.map((i) => i.id),
        items.map((i) => i.delayMs),
        items.map((i) => errorRecordJson(i.error)),
        nodeId,
      ]),
    ),
  );
}

/** Moves failed jobs to the dead letter queue (status DEAD), recording the error. */
export function killJobs(
  db: Queryable,
  t: Tables,
  nodeId: string,
  items: readonly Death[],
): Promise<Set<string>> {
  if (items.length === 0) return Promise.resolve(new Set());
  const stmt = named(
    t,
    "kill",
    `UPDATE ${t.jobs} j
     SET status = 'DEAD', errors = ${appendError("j.errors", "v.err")}, finished_at = now(), updated_at = now()
     FROM unnest($1::bigint[], $2::jsonb[]) AS v(id, err)
     WHERE j.id = v.id AND j.status = 'RUNNING' AND j.picked_by = $3
     RETURNING j.id`,
  );
  return ids(db.query(stmt([items.map((i) => i.id), items.map((i) => errorRecordJson(i.error)), nodeId])));
}

/**
 * Hands jobs back to PENDING after `delayMs` without counting the attempt (the claim counted it, so it
 * is taken back): snooze, drain at shutdown, an open breaker or a saturated resource.
 */
export function rescheduleJobs(
  db: Queryable,
  t: Tables,
  nodeId: string,
  items: readonly Reschedule[],
): Promise<Set<string>> {
  if (items.length === 0) return Promise.resolve(new Set());
  const stmt = named(
    t,
    "reschedule",
    `UPDATE ${t.jobs} j
     SET status = 'PENDING', scheduled_time = now() + v.delay_ms * interval '1 millisecond',
         attempts = greatest(0, j.attempts - 1), picked_by = NULL, picked_at = NULL, updated_at = now()
     FROM unnest($1::bigint[], $2::bigint[]) AS v(id, delay_ms)
     WHERE j.id = v.id AND j.status = 'RUNNING' AND j.picked_by = $3
     RETURNING j.id`,
  );
  return ids(db.query(stmt([items.map((i) => i.id), items.map((i) => i.delayMs), nodeId])));
}
