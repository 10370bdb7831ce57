/**
 * The flow statements (scheduler_flow and the flow columns of scheduler_job_queue): creating a chain,
 * batch or workflow in bulk, reading flows and their members, canceling a flow, and a member's view of
 * its flow. What happens when a member finishes is not here: the `pawl_flow_member_changed` trigger of
 * migrations 0004 and 0005 does it inside the statement that finished the member, as the member lands in
 * the finished table (docs/composition.md). Reads of members go through the view of both tables.
 */
import type { NewJob } from "../../input/enqueue-input.js";
import { jobColumns, jobFromRow, type Job, type JobRow } from "../jobs/job-row.js";
import { insertFinishedSql } from "../jobs/finished-sql.js";
import { named, type Queryable, type Tables } from "../../db/sql.js";
import { claimableSql } from "../jobs/lease-sql.js";
import type { FlowKind, FlowListFilter } from "../../input/filter-input.js";
export type { FlowKind, FlowListFilter };

/** The flow table of a schema. */
export const flowTable = (t: Tables): string => `${t.s}.scheduler_flow`;

/** What happens to a failed member's dependents: canceled (`stop`) or run anyway (`continue`). */
export type FlowFailurePolicy = "stop" | "continue";

/** A scheduler_flow row. */
export interface FlowRow {
  id: string;
  kind: FlowKind;
  name: string | null;
  failure_policy: FlowFailurePolicy;
  total: number;
  succeeded: number;
  dead: number;
  canceled: number;
  completion_job_id: string | null;
  created_at: Date;
  updated_at: Date;
  completed_at: Date | null;
}

const flowColumns =
  "id, kind, name, failure_policy, total, succeeded, dead, canceled, completion_job_id, created_at, updated_at, completed_at";

/** Inserts a flow row; returns its id. */
export async function insertFlow(
  db: Queryable,
  t: Tables,
  f: { kind: FlowKind; name: string | null; policy: FlowFailurePolicy; total: number },
): Promise<string> {
  const res = await db.query<{ id: string }>(
    named(
      t,
      "flow_insert",
      `INSERT INTO ${flowTable(t)} (kind, name, failure_policy, total) VALUES ($1, $2, $3, $4) RETURNING id`,
    )([f.kind, f.name, f.policy, f.total]),
  );
  return (res.rows[0] as { id: string }).id;
}

/** Takes `n` job ids from the job table's sequence (one round trip), so members can name each other. */
export async function allocateJobIds(db: Queryable, t: Tables, n: number): Promise<string[]> {
  const res = await db.query<{ id: string }>(
    named(
      t,
      "flow_ids",
      `SELECT nextval(pg_get_serial_sequence($1, 'id'))::text AS id FROM generate_series(1, $2::int)`,
    )([t.jobs, n]),
  );
  return res.rows.map((r) => r.id);
}

/** A chain or workflow member, with its id taken from {@link allocateJobIds}. */
export interface FlowMemberInsert {
  id: string;
  job: NewJob;
  step: string;
  /** Dependencies: 0 makes it PENDING at once, more makes it WAITING. */
  deps: number;
  /** Ids of the members that depend on it. */
  next: readonly string[];
}

/**
 * Inserts chain or workflow members in one statement (arrays unnested server-side). Members without
 * dependencies are PENDING, the others WAITING. Each member keeps its own concurrency key and limit
 * (migration 0011), as an enqueued job does. Returns the members' rows, in input order.
 */
export async function insertMembers(
  db: Queryable,
  t: Tables,
  flowId: string,
  members: readonly FlowMemberInsert[],
): Promise<Job[]> {
  const res = await db.query<JobRow>(
    `INSERT INTO ${t.jobs} AS j
       (id, type, queue, payload, priority, scheduled_time, timeout_ms, max_attempts, status, flow_id, flow_step,
        deps_pending, flow_next, trace_context, concurrency_key, concurrency_limit)
     SELECT v.id, v.type, v.queue, v.payload::jsonb, v.priority,
            coalesce(v.run_at, now() + v.delay_ms * interval '1 millisecond'), v.timeout_ms, v.max_attempts,
            CASE WHEN v.deps = 0 THEN 'PENDING' ELSE 'WAITING' END, $1::bigint, v.step, v.deps,
            nullif(v.next, '{}')::bigint[], v.trace_context, v.concurrency_key, v.concurrency_limit
     FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[], $6::int[], $7::timestamptz[], $8::bigint[],
                 $9::int[], $10::int[], $11::text[], $12::int[], $13::text[], $14::jsonb[], $15::text[], $16::int[])
          AS v(id, type, queue, payload, priority, run_at, delay_ms, timeout_ms, max_attempts, step, deps, next,
               trace_context, concurrency_key, concurrency_limit)
     RETURNING ${jobColumns("j")}`,
    [
      flowId,
      members.map((m) => m.id),
      members.map((m) => m.job.type),
      members.map((m) => m.job.queue),
      members.map((m) => m.job.payloadJson),
      members.map((m) => m.job.priority),
      members.map((m) => m.job.runAt),
      members.map((m) => m.job.delayMs),
      members.map((m) => m.job.timeoutMs),
      members.map((m) => m.job.maxAttempts),
      members.map((m) => m.step),
      members.map((m) => m.deps),
      members.map((m) => `{${m.next.join(",")}}`),
      // Trace contexts only when tracing set some (a NULL array unnests as NULL in every row).
      members.some((m) => typeof m.job.traceContext === "string")
        ? members.map((m) => m.job.traceContext ?? null)
        : null,
      // Concurrency keys likewise: a flow without keys sends two NULLs, not two arrays of them. The key
      // stays on the row when the flow trigger releases a WAITING member (an UPDATE in place), so the
      // keyed claim enforces the member's limit once it is runnable.
      members.some((m) => typeof m.job.concurrencyKey === "string")
        ? members.map((m) => m.job.concurrencyKey ?? null)
        : null,
      members.some((m) => typeof m.job.concurrencyLimit === "number")
        ? members.map((m) => m.job.concurrencyLimit ?? null)
        : null,
    ],
  );
  const byId = new Map(res.rows.map((r) => [r.id, r]));
  return members.map((m) => jobFromRow(byId.get(m.id) as JobRow));
}

/**
 * Inserts one chunk of batch children: `payloads` (JSON texts) share every other field of `shared`
 * (concurrency key and limit included); child i is named by its index in the batch (`offset + i`). One
 * statement, no rows returned.
 */
export async function insertBatchChildren(
  db: Queryable,
  t: Tables,
  flowId: string,
  shared: NewJob,
  payloads: readonly string[],
  offset: number,
): Promise<number> {
  const stmt = named(
    t,
    "flow_batch_children",
    `INSERT INTO ${t.jobs} (type, queue, payload, priority, scheduled_time, timeout_ms, max_attempts, flow_id, flow_step,
                            trace_context, concurrency_key, concurrency_limit)
     SELECT $1, $2, p.payload::jsonb, $3, coalesce($4::timestamptz, now() + $5::bigint * interval '1 millisecond'),
            $6, $7, $8::bigint, ($9::int + p.ord - 1)::text, $11::jsonb, $12::text, $13::int
     FROM unnest($10::text[]) WITH ORDINALITY AS p(payload, ord)`,
  );
  const res = await db.query(
    stmt([
      shared.type,
      shared.queue,
      shared.priority,
      shared.runAt,
      shared.delayMs,
      shared.timeoutMs,
      shared.maxAttempts,
      flowId,
      offset,
      payloads,
      shared.traceContext ?? null,
      shared.concurrencyKey ?? null,
      shared.concurrencyLimit ?? null,
    ]),
  );
  return res.rowCount ?? 0;
}

/** Inserts a flow's completion job (WAITING until the flow trigger releases it) and links it to the flow. */
export async function insertCompletionJob(
  db: Queryable,
  t: Tables,
  flowId: string,
  job: NewJob,
): Promise<Job> {
  const res = await db.query<JobRow>(
    `WITH c AS (
       INSERT INTO ${t.jobs} AS j (type, queue, payload, priority, scheduled_time, timeout_ms, max_attempts, status, flow_id,
                                   trace_context, concurrency_key, concurrency_limit)
       VALUES ($1, $2, $3::jsonb, $4, coalesce($5::timestamptz, now() + $6::bigint * interval '1 millisecond'), $7, $8,
               'WAITING', $9::bigint, $10::jsonb, $11::text, $12::int)
       RETURNING ${jobColumns("j")}
     ), f AS (
       UPDATE ${flowTable(t)} SET completion_job_id = (SELECT id FROM c) WHERE id = $9::bigint
     )
     SELECT * FROM c`,
    [
      job.type,
      job.queue,
      job.payloadJson,
      job.priority,
      job.runAt,
      job.delayMs,
      job.timeoutMs,
      job.maxAttempts,
      flowId,
      job.traceContext ?? null,
      job.concurrencyKey ?? null,
      job.concurrencyLimit ?? null,
    ],
  );
  return jobFromRow(res.rows[0] as JobRow);
}

/** Reads one flow row, or null. */
export async function readFlow(db: Queryable, t: Tables, id: string): Promise<FlowRow | null> {
  const res = await db.query<FlowRow>(
    named(t, "flow_read", `SELECT ${flowColumns} FROM ${flowTable(t)} WHERE id = $1`)([id]),
  );
  return res.rows[0] ?? null;
}

/** Lists flows, newest first. */
export async function listFlowRows(db: Queryable, t: Tables, f: FlowListFilter = {}): Promise<FlowRow[]> {
  const where: string[] = [];
  const values: unknown[] = [];
  if (f.kind !== undefined) {
    values.push(f.kind);
    where.push(`kind = $${values.length}`);
  }
  if (f.state === "running") where.push("completed_at IS NULL");
  if (f.state === "completed") where.push("completed_at IS NOT NULL");
  const limit = Math.min(1000, Math.max(1, f.limit ?? 50));
  const res = await db.query<FlowRow>(
    `SELECT ${flowColumns} FROM ${flowTable(t)} ${where.length ? `WHERE ${where.join(" AND ")}` : ""}
     ORDER BY id DESC LIMIT ${limit}`,
    values,
  );
  return res.rows;
}

/** A flow's members (not its completion job), in id order, at most `limit`. */
export async function flowMembers(db: Queryable, t: Tables, flowId: string, limit: number): Promise<Job[]> {
  const res = await db.query<JobRow>(
    `SELECT ${jobColumns()} FROM ${t.all} WHERE flow_id = $1 AND flow_step IS NOT NULL ORDER BY id LIMIT $2`,
    [flowId, limit],
  );
  return res.rows.map((r) => jobFromRow(r));
}

/** Member counts of a flow by status (read from the members, for people: the counters are in the flow row). */
export async function flowStatusCounts(
  db: Queryable,
  t: Tables,
  flowId: string,
): Promise<Record<string, number>> {
  const res = await db.query<{ status: string; n: string }>(
    `SELECT status, count(*) AS n FROM ${t.all} WHERE flow_id = $1 AND flow_step IS NOT NULL GROUP BY status`,
    [flowId],
  );
  return Object.fromEntries(res.rows.map((r) => [r.status, Number(r.n)]));
}

/**
 * Cancels every member of a flow that has not started (PENDING, WAITING, PAUSED) and its completion job
 * if it was not released: they move to the finished table, CANCELED (the flow trigger counts the members
 * as they land). Running members finish their attempt. Returns how many jobs were canceled.
 */
export async function cancelFlowMembers(
  db: Queryable,
  t: Tables,
  flowId: string,
  reason: string,
): Promise<number> {
  const res = await db.query(
    `WITH gone AS (
       DELETE FROM ${t.jobs} j
       WHERE j.flow_id = $1 AND (j.status IN ('WAITING', 'PAUSED') OR (${claimableSql("j")}))
       RETURNING j.*
     )
     ${insertFinishedSql(
       t,
       "g",
       { status: "'CANCELED'", cancel_reason: "$2", finished_at: "now()", updated_at: "now()" },
       "FROM gone g",
     )}`,
    [flowId, reason],
  );
  return res.rowCount ?? 0;
}

/** A member's view of its flow (ctx.flow()) and its signal state (ctx.waitForSignal()), in one read. */
export interface JobCompositionRow {
  flow_id: string | null;
  flow_step: string | null;
  flow_inputs: Record<string, { status: string; result?: unknown }> | null;
  kind: FlowKind | null;
  signal_state: "waiting" | "delivered" | "timeout" | null;
  signal_payload: unknown;
  signaled_at: Date | null;
}

/** Reads what a running job's context needs about its flow and its signal. */
export async function readJobComposition(
  db: Queryable,
  t: Tables,
  jobId: string,
): Promise<JobCompositionRow | null> {
  const res = await db.query<JobCompositionRow>(
    named(
      t,
      "job_composition",
      `SELECT j.flow_id, j.flow_step, j.flow_inputs, f.kind, j.signal_state, j.signal_payload, j.signaled_at
       FROM ${t.jobs} j LEFT JOIN ${flowTable(t)} f ON f.id = j.flow_id
       WHERE j.id = $1`,
    )([jobId]),
  );
  return res.rows[0] ?? null;
}
