/**
 * The console's reads of flows: a keyset page of flow rows (newest first, `beforeId` = the last id shown,
 * on the primary key, so page 1,000 costs what page 1 does), and a flow's dependency graph (each member's
 * step, type, status and the ids of the members that depend on it, `flow_next`). The graph is read through
 * the view of both tables, so finished members keep their place and their edges. Ids and cursors come
 * in checked (./operator-reads.ts validates them before calling).
 */
import type { FlowKind, FlowRow } from "../composition/flow-sql.js";
import type { JobStatus } from "../jobs/job-row.js";
import type { Queryable, Tables } from "../../db/sql.js";

/** The most flows one page returns, and the most members one graph read returns. */
export const maxFlowPage = 200;
/** The most members {@link readFlowGraph} reads (a larger flow is shown in part, and says so). */
export const maxFlowGraphMembers = 500;

/** Filters of {@link listFlowPage}. */
export interface FlowPageFilter {
  kind?: FlowKind;
  /** Only flows with an id below this one (the last id of the previous page). */
  beforeId?: string;
  /** At most this many (1 to {@link maxFlowPage}; default 50). */
  limit?: number;
}

/** One page of flow rows, newest first. */
export async function listFlowPage(db: Queryable, t: Tables, f: FlowPageFilter = {}): Promise<FlowRow[]> {
  const values: unknown[] = [];
  const where: string[] = [];
  if (f.kind !== undefined) {
    values.push(f.kind);
    where.push(`kind = $${values.length}`);
  }
  if (f.beforeId !== undefined) {
    values.push(f.beforeId);
    where.push(`id < $${values.length}::bigint`);
  }
  const limit = Math.min(maxFlowPage, Math.max(1, Math.floor(f.limit ?? 50)));
  const res = await db.query<FlowRow>(
    `SELECT id::text AS id, kind, name, failure_policy, total, succeeded, dead, canceled,
            completion_job_id::text AS completion_job_id, created_at, updated_at, completed_at
     FROM ${t.s}.scheduler_flow ${where.length ? `WHERE ${where.join(" AND ")}` : ""}
     ORDER BY id DESC LIMIT ${limit}`,
    values,
  );
  return res.rows;
}

/** One member of a flow as a node of its graph. */
export interface FlowGraphMember {
  id: string;
  /** The member's step name (a batch child's index). */
  step: string;
  type: string;
  status: JobStatus;
  attempts: number;
  /** Ids of the members that wait for this one. */
  next: string[];
}

/**
 * A flow's members (not its completion job) with their edges, in id order, at most `limit`; after
 * `afterId` when given (a batch's members are paged, on the flow index's (flow_id, id) order).
 */
export async function readFlowGraph(
  db: Queryable,
  t: Tables,
  flowId: string,
  limit = maxFlowGraphMembers,
  afterId?: string,
): Promise<FlowGraphMember[]> {
  const res = await db.query<{
    id: string;
    step: string;
    type: string;
    status: JobStatus;
    attempts: number;
    next: string[] | null;
  }>(
    `SELECT id::text AS id, flow_step AS step, type, status, attempts, flow_next::text[] AS next
     FROM ${t.all} WHERE flow_id = $1 AND flow_step IS NOT NULL AND ($3::bigint IS NULL OR id > $3::bigint)
     ORDER BY id LIMIT $2`,
    [flowId, Math.min(maxFlowGraphMembers, Math.max(1, Math.floor(limit))), afterId ?? null],
  );
  return res.rows.map((r) => ({ ...r, next: r.next ?? [] }));
}
