/**
 * Inserts jobs: one statement for any number of rows (arrays unnested server-side), with unique keys
 * resolved by ON CONFLICT against the partial index on live rows. A key whose live row was found instead
 * of inserted returns that row; a key whose live row finished in between is inserted on the next round.
 */
import type { NewJob } from "../../input/enqueue-input.js";
import type { QueryConfig } from "pg";
import type { FoldedNotify } from "../../../coordinators/spi.js";
import { asDatabaseUnavailable } from "../../db/connection-failure.js";
import { compareIdText } from "../../logic/job-ids.js";
import { jobColumns, jobFromRow, withJobRowTypes, type Job, type JobRow } from "./job-row.js";
import { named, type Queryable, type Tables } from "../../db/sql.js";

/**
 * A job returned by enqueue: `inserted` is false when a live job with the same unique key was returned.
 * `K` is its type's name as the call gave it, so `pawl.waitFor(job)` knows the job type (and, with a task
 * map, its result).
 */
export type EnqueuedJob<P = unknown, K extends string = string> = Job<P> & { inserted: boolean; type: K };

/** A schema's insert statements: plain, and with a pg_notify folded in. */
interface InsertStatements {
  plain: (values: unknown[]) => QueryConfig;
  notify: (values: unknown[]) => QueryConfig;
}

const insertStatements = new WeakMap<Tables, InsertStatements>();

/**
 * The insert statements of a schema, named so each connection (a caller's transaction client too)
 * prepares them once: parsing and planning on every call cost a lone enqueue about a third of its time.
 */
function insertStatementsOf(t: Tables): InsertStatements {
  let s = insertStatements.get(t);
  if (!s) {
    s = {
      plain: named(t, "enqueue", insertSql(t)),
      notify: named(t, "enqueue_notify", notifyingInsertSql(t)),
    };
    insertStatements.set(t, s);
  }
  return s;
}

function insertSql(t: Tables): string {
  return `
    INSERT INTO ${t.jobs} AS j
      (type, queue, payload, priority, scheduled_time, timeout_ms, max_attempts, unique_key, trace_context,
       concurrency_key, concurrency_limit)
    SELECT v.type, v.queue, v.payload::jsonb, v.priority,
           coalesce(v.run_at, now() + v.delay_ms * interval '1 millisecond'),
           v.timeout_ms, v.max_attempts, v.unique_key, v.trace_context, v.concurrency_key, v.concurrency_limit
    FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::timestamptz[], $6::bigint[],
                $7::int[], $8::int[], $9::text[], $10::jsonb[], $11::text[], $12::int[]) WITH ORDINALITY
         AS v(type, queue, payload, priority, run_at, delay_ms, timeout_ms, max_attempts, unique_key,
              trace_context, concurrency_key, concurrency_limit, ord)
    ORDER BY v.ord
    ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL AND status IN ('PENDING', 'RUNNING') DO NOTHING
    RETURNING ${jobColumns("j")}`;
}

/**
 * The insert that also calls pg_notify($13, $14). The uncorrelated subquery is an InitPlan, evaluated once
 * and only when a first row is returned: an insert that added nothing (every unique key taken) wakes
 * nobody. The notification is delivered when the statement's transaction commits.
 */
function notifyingInsertSql(t: Tables): string {
  return `
    WITH ins AS (${insertSql(t)})
    SELECT ins.*, (SELECT true FROM pg_notify($13::text, $14::text)) AS notified FROM ins`;
}

async function insertRound(
  db: Queryable,
  t: Tables,
  jobs: readonly NewJob[],
  notify: FoldedNotify | undefined,
): Promise<JobRow[]> {
  const values: unknown[] = [
    jobs.map((j) => j.type),
    jobs.map((j) => j.queue),
    jobs.map((j) => j.payloadJson),
    jobs.map((j) => j.priority),
    jobs.map((j) => j.runAt),
    jobs.map((j) => j.delayMs),
    jobs.map((j) => j.timeoutMs),
    jobs.map((j) => j.maxAttempts),
    jobs.map((j) => j.uniqueKey),
    // Trace contexts only when tracing set some: a NULL array unnests as NULL in every row, so an
    // untraced insert builds no array for them.
    jobs.some((j) => typeof j.traceContext === "string") ? jobs.map((j) => j.traceContext ?? null) : null,
    // Keys likewise: an unkeyed insert sends NULL arrays (migration 0011's columns).
    jobs.some((j) => typeof j.concurrencyKey === "string") ? jobs.map((j) => j.concurrencyKey ?? null) : null,
    jobs.some((j) => typeof j.concurrencyLimit === "number")
      ? jobs.map((j) => j.concurrencyLimit ?? null)
      : null,
  ];
  const statements = insertStatementsOf(t);
  const res = await db.query<JobRow>(
    withJobRowTypes(
      notify ? statements.notify([...values, notify.channel, notify.payload]) : statements.plain(values),
    ),
  );
  // Ids come from one sequence in ORDER BY ord order, so sorting by id restores the input order. RETURNING
  // gives them in that order already; the check costs one pass where a sort would parse ids on every
  // comparison.
  const rows = res.rows;
  for (let i = 1; i < rows.length; i++) {
    if (compareIdText(rows[i - 1]!.id, rows[i]!.id) > 0)
      return rows.sort((a, b) => compareIdText(a.id, b.id));
  }
  return rows;
}

/** The job of an inserted or found row, marked whether this call inserted it. */
function enqueued(row: JobRow, inserted: boolean): EnqueuedJob {
  return Object.assign(jobFromRow(row), { inserted });
}

/**
 * Inserts `jobs` in one round trip (plus one look-up when unique keys hit live rows). Results are in
 * input order. Use a transaction's client as `db` for transactional enqueue. `notify` is sent with
 * pg_notify by the insert statement itself when it inserts a row. When the database cannot be reached (or
 * the connection breaks under the insert) it fails with a DatabaseUnavailableError, within the pool's
 * connect timeout, telling whether the rows may have been written.
 */
export async function enqueueJobs(
  db: Queryable,
  t: Tables,
  jobs: readonly NewJob[],
  notify?: FoldedNotify,
): Promise<EnqueuedJob[]> {
  try {
    return await insertJobs(db, t, jobs, notify);
  } catch (error) {
    throw asDatabaseUnavailable(error);
  }
}

async function insertJobs(
  db: Queryable,
  t: Tables,
  jobs: readonly NewJob[],
  notify: FoldedNotify | undefined,
): Promise<EnqueuedJob[]> {
  const out: (EnqueuedJob | undefined)[] = new Array(jobs.length);
  // Ids of the rows already given to an item of this call: a later item given the same row (the same
  // unique key) gets it as a duplicate, not as inserted.
  const given = new Set<string>();
  let pending = jobs.map((job, index) => ({ job, index }));
  // A few rounds cover the race where the live row of a key finishes between our insert and look-up.
  for (let round = 0; pending.length > 0 && round < 5; round++) {
    const rows = await insertRound(
      db,
      t,
      pending.map((p) => p.job),
      notify,
    );
    const byKey = new Map<string, JobRow>();
    const plain: JobRow[] = [];
    for (const r of rows) {
      if (r.unique_key === null) plain.push(r);
      else byKey.set(r.unique_key, r);
    }
    const missingKeys: string[] = [];
    let nextPlain = 0;
    for (const p of pending) {
      const key = p.job.uniqueKey;
      if (key === null) {
        const row = plain[nextPlain++];
        if (row) out[p.index] = enqueued(row, true);
        continue;
      }
      const row = byKey.get(key);
      if (row) {
        // The first item with a key inserts it; later items in the same call get it as a duplicate.
        out[p.index] = enqueued(row, !given.has(row.id));
        given.add(row.id);
      } else {
        missingKeys.push(key);
      }
    }
    if (missingKeys.length === 0) break;
    const live = await db.query<JobRow>(
      withJobRowTypes({
        text: `SELECT ${jobColumns()} FROM ${t.jobs}
               WHERE unique_key = ANY($1::text[]) AND status IN ('PENDING', 'RUNNING')`,
        values: [missingKeys],
      }),
    );
    const liveByKey = new Map(live.rows.map((r) => [r.unique_key as string, r]));
    const still: typeof pending = [];
    for (const p of pending) {
      if (out[p.index] !== undefined || p.job.uniqueKey === null) continue;
      const row = liveByKey.get(p.job.uniqueKey);
      if (row) {
        out[p.index] = enqueued(row, false);
        given.add(row.id);
      } else still.push(p);
    }
    pending = still;
  }
  if (out.some((o) => o === undefined)) {
    throw new Error(
      "pawl: enqueue could not settle unique keys after 5 rounds (heavy contention on one key)",
    );
  }
  return out as EnqueuedJob[];
}
