/**
 * The read behind `pawl.explain(id)`: the job through the store's own read function (`getJob`, so it finds
 * the job wherever the store keeps it), then one statement for what surrounds it, each part bounded: the
 * node rows with the registry each one publishes in its heartbeat (at most {@link maxExplainNodes}), the
 * pauses of the job's queue and type, the held permits per resource (a count, and the first
 * {@link maxPermitHolders} holders), and, for a flow member waiting on its dependencies, the dependencies
 * that have not finished. The decision itself is the pure `explainJob` (src/logic/explain.ts).
 */
import type {
  ExplainDependency,
  ExplainFacts,
  ExplainNode,
  ExplainPermits,
} from "../../logic/explain-facts.js";
import type { NodeRegistry } from "../../logic/explain-facts.js";
import type { Job } from "../jobs/job-row.js";
import { pauseTable } from "../composition/pause-sql.js";
import { named, type Queryable, type Tables } from "../../db/sql.js";
import { statusSql } from "../jobs/lease-sql.js";
import { rateWindowsSql } from "../cluster/rate-limit-sql.js";
import { queueRateKey, typeRateKey } from "../../logic/rate-limit.js";

/** The most node rows one explain reads (oldest first). */
export const maxExplainNodes = 200;
/** The most holders listed per resource. */
export const maxPermitHolders = 20;

/** What {@link readExplainFacts} needs: a job reader and a place to run the one statement. */
export interface ExplainSource {
  /** The store's read of one job (null when there is none). */
  get(id: string): Promise<Job | null>;
  readonly tables: Tables;
  readonly pool: Queryable;
}

/** The cluster timings the answer depends on (the dead-node threshold and the sweep interval). */
export interface ExplainTimings {
  deadNodeThresholdMs: number;
  orphanSweepIntervalMs: number;
}

/** One resource's permits as {@link permitsSql} reads them. */
interface RawPermits {
  resource: string;
  held: number;
  holders: { job_id: string; node_id: string; acquired_at: string }[];
}

/** Held permits per resource with their first holders (explain's facts and the console's view). */
const permitsSql = (t: Tables) => `SELECT resource, count(*)::int AS held,
                 (array_agg(json_build_object('job_id', job_id::text, 'node_id', node_id, 'acquired_at', acquired_at)
                            ORDER BY acquired_at, job_id))[1:${maxPermitHolders}] AS holders
          FROM ${t.permits} GROUP BY resource ORDER BY resource LIMIT 100`;

/** Maps {@link permitsSql}'s rows by resource. */
function toPermits(rows: readonly RawPermits[]): Record<string, ExplainPermits> {
  const out: Record<string, ExplainPermits> = {};
  for (const r of rows) {
    out[r.resource] = {
      held: r.held,
      holders: r.holders.map((h) => ({
        jobId: h.job_id,
        nodeId: h.node_id,
        acquiredAt: new Date(h.acquired_at),
      })),
    };
  }
  return out;
}

interface Raw {
  db_now: Date;
  nodes: { node_id: string; heartbeat_ts: string; age_ms: number; alive: boolean; registry: unknown }[];
  pauses: { kind: "queue" | "type"; name: string; paused_at: string; paused_by: string | null }[];
  permits: RawPermits[];
  deps: { id: string; flow_step: string | null; type: string; status: string }[];
  rate_windows: { key: string; limit: number; per_ms: number; used: number; open_at: string | null }[];
  concurrency: { key: string; limit: number | null; running: number } | null;
}

const statement = (t: Tables) =>
  named(
    t,
    "explain_facts",
    `SELECT now() AS db_now,
       (SELECT coalesce(json_agg(n), '[]') FROM (
          SELECT node_id, heartbeat_ts, node_info->'registry' AS registry,
                 (extract(epoch FROM now() - heartbeat_ts) * 1000)::float8 AS age_ms,
                 heartbeat_ts >= now() - $1::bigint * interval '1 millisecond' AS alive
          FROM ${t.nodes} ORDER BY started_at, node_id LIMIT ${maxExplainNodes}) n) AS nodes,
       (SELECT coalesce(json_agg(p), '[]') FROM (
          SELECT kind, name, paused_at, paused_by FROM ${pauseTable(t)}
          WHERE (kind = 'queue' AND name = $2) OR (kind = 'type' AND name = $3)) p) AS pauses,
       (SELECT coalesce(json_agg(r), '[]') FROM (${permitsSql(t)}) r) AS permits,
       -- A waiting member's unfinished dependencies are the members whose flow_next names it. Only live
       -- rows can be unfinished, so this reads the live table alone, by the flow's index.
       (SELECT coalesce(json_agg(d), '[]') FROM (
          SELECT id::text AS id, flow_step, type, ${statusSql()} AS status FROM ${t.jobs}
          WHERE $4::bigint IS NOT NULL AND flow_id = $4::bigint AND $5::bigint = ANY(flow_next)
            AND status NOT IN ('SUCCEEDED', 'DEAD', 'CANCELED')
          ORDER BY id LIMIT 100) d) AS deps,
       (SELECT coalesce(json_agg(w), '[]') FROM (${rateWindowsSql(t, "$6::text[]", "now()")}) w) AS rate_windows,
       -- The job's concurrency key (migration 0011) and how many of its jobs run now.
       (SELECT json_build_object('key', q.concurrency_key, 'limit', q.concurrency_limit,
                                 'running', ${t.s}.pawl_key_running(q.concurrency_key))
        FROM ${t.jobs} q WHERE q.id = $5::bigint AND q.concurrency_key IS NOT NULL) AS concurrency`,
  );

/**
 * Reads the facts `explainJob` decides on; null when there is no such job.
 *
 * @example
 * ```ts
 * const facts = await readExplainFacts(store, "42", { deadNodeThresholdMs: 15_000, orphanSweepIntervalMs: 2_000 });
 * ```
 */
export async function readExplainFacts(
  src: ExplainSource,
  id: string,
  timings: ExplainTimings,
): Promise<ExplainFacts | null> {
  const job = await src.get(id);
  if (!job) return null;
  const waitsForFlow = job.status === "WAITING" && job.waitingFor === "dependencies" && job.flowId;
  const res = await src.pool.query<Raw>(
    statement(src.tables)([
      timings.deadNodeThresholdMs,
      job.queue,
      job.type,
      waitsForFlow ? job.flowId : null,
      job.id,
      [queueRateKey(job.queue), typeRateKey(job.type)],
    ]),
  );
  const raw = res.rows[0] as Raw;
  const nodes: ExplainNode[] = raw.nodes.map((n) => ({
    nodeId: n.node_id,
    alive: n.alive,
    heartbeatAt: new Date(n.heartbeat_ts),
    ageMs: Math.round(n.age_ms),
    registry: isRegistry(n.registry) ? n.registry : null,
  }));
  const permits = toPermits(raw.permits);
  const dependencies: ExplainDependency[] = raw.deps.map((d) => ({
    id: d.id,
    step: d.flow_step,
    type: d.type,
    status: d.status,
  }));
  return {
    job,
    now: raw.db_now,
    nodes,
    pauses: raw.pauses.map((p) => ({
      kind: p.kind,
      name: p.name,
      pausedAt: new Date(p.paused_at),
      pausedBy: p.paused_by,
    })),
    permits,
    rateWindows: raw.rate_windows.map((w) => ({
      key: w.key,
      limit: w.limit,
      perMs: w.per_ms,
      used: w.used,
      openAt: w.open_at === null ? null : new Date(w.open_at),
    })),
    dependencies,
    ...(await durableChildren(src, job)),
    concurrency: raw.concurrency,
    deadNodeThresholdMs: timings.deadNodeThresholdMs,
    orphanSweepIntervalMs: timings.orphanSweepIntervalMs,
  };
}

/** A registry as a node of this version publishes it (a row written by hand or by an older node may not be). */
function isRegistry(v: unknown): v is NodeRegistry {
  if (typeof v !== "object" || v === null) return false;
  const r = v as Partial<NodeRegistry>;
  return Array.isArray(r.types) && Array.isArray(r.breakers) && typeof r.concurrency === "number";
}

/** Held permits by resource, each with its first {@link maxPermitHolders} holders (the console's permits view). */
export async function listPermits(db: Queryable, t: Tables): Promise<Record<string, ExplainPermits>> {
  const res = await db.query<RawPermits>(named(t, "explain_permits", permitsSql(t))([]));
  return toPermits(res.rows);
}

/** The states of the children a durable job is parked on (ctx.waitFor), read only when it is. */
async function durableChildren(
  src: ExplainSource,
  job: Job,
): Promise<{ children?: { id: string; status: string }[] }> {
  const ids =
    job.status === "WAITING"
      ? job.steps?.find((s) => s.status === "waiting" && s.kind === "wait")?.children
      : null;
  if (!ids || ids.length === 0) return {};
  const res = await src.pool.query<{ id: string; status: string }>(
    `SELECT id::text, status FROM ${src.tables.all} WHERE id = ANY($1::bigint[])`,
    [ids],
  );
  return { children: res.rows };
}
