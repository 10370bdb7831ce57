/**
 * Chains, batches and workflows: creating them (validated first, then inserted in bulk in one transaction)
 * and reading, listing and canceling them. A flow is one scheduler_flow row (kind, failure policy,
 * counters) plus its member jobs; members that cannot run yet are WAITING, and the flow trigger of
 * migration 0004 releases, cancels and counts them as their dependencies finish (docs/composition.md).
 */
import { validateJobId } from "../input/job-id.js";
import type { Job } from "../store/jobs/job-row.js";
import type { JobStore } from "../store/job-store.js";
import type { NewJob } from "../input/enqueue-input.js";
import type { PawlTracing } from "../tracing/pawl-tracing.js";
import { traceInsert } from "../tracing/producer-spans.js";
import { FLOW_ID, MESSAGING_BATCH_MESSAGE_COUNT } from "../tracing/attributes.js";
import type { FlowFailurePolicy, FlowKind, FlowListFilter, FlowRow } from "../store/composition/flow-sql.js";
import { announce, inTransaction, type CompositionDeps } from "./deps.js";
import { FlowNotFoundError } from "./errors.js";
import {
  planBatch,
  planChain,
  planWorkflow,
  type BatchInput,
  type ChainStep,
  type FlowBuildContext,
  type FlowOptions,
  type FlowPlan,
  type WorkflowInput,
} from "./flow-input.js";
import type { UntypedTasks } from "../input/task-map.js";
import { asQueryable, type Queryable, type SqlClient } from "../db/sql.js";

/** Batch children inserted per statement: bounds the statement's parameters and memory. */
export const batchChunkSize = 10_000;

/** What creating a flow returns. */
export interface FlowHandle {
  /** The flow's id (scheduler_flow.id). */
  flowId: string;
  kind: FlowKind;
  /** Members (steps, jobs, children). */
  total: number;
  /** The member job ids in input order (chains and workflows; empty for a batch). */
  jobIds: string[];
  /** The completion job (WAITING until every member is terminal), or null without `onComplete`. */
  completionJobId: string | null;
}

/** A flow, as {@link PawlClient.getFlow} and {@link PawlClient.listFlows} return it. */
export interface Flow {
  id: string;
  kind: FlowKind;
  name: string | null;
  /** `stop`: a member that ends DEAD or CANCELED cancels its dependents; `continue`: they run anyway. */
  failurePolicy: FlowFailurePolicy;
  total: number;
  succeeded: number;
  dead: number;
  canceled: number;
  /** Members not terminal yet. */
  remaining: number;
  /** `running` until every member is terminal; then `succeeded` (all of them) or `failed` (any DEAD or CANCELED). */
  state: "running" | "succeeded" | "failed";
  completionJobId: string | null;
  createdAt: Date;
  updatedAt: Date;
  completedAt: Date | null;
}

/** A flow with its members (the first `memberLimit` by id). */
export interface FlowDetail extends Flow {
  members: Job[];
}

function buildContext(deps: CompositionDeps): FlowBuildContext {
  return {
    typeDefaults: (type) => deps.hooks?.typeDefaults(type),
    maxPayloadBytes: deps.config.maxPayloadBytes,
  };
}

/** Maps a flow row. */
export function flowFromRow(r: FlowRow): Flow {
  const done = r.succeeded + r.dead + r.canceled;
  return {
    id: r.id,
    kind: r.kind,
    name: r.name,
    failurePolicy: r.failure_policy,
    total: r.total,
    succeeded: r.succeeded,
    dead: r.dead,
    canceled: r.canceled,
    remaining: Math.max(0, r.total - done),
    state: r.completed_at === null ? "running" : r.succeeded === r.total ? "succeeded" : "failed",
    completionJobId: r.completion_job_id,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    completedAt: r.completed_at,
  };
}

/** Inserts a flow's completion job (if it has one), with its own producer span. */
async function insertCompletion(
  tx: JobStore,
  tracing: PawlTracing | null,
  flowId: string,
  job: NewJob | null,
): Promise<Job | null> {
  if (!job) return null;
  const [row] = await traceInsert(tracing, [job], async () => [await tx.insertCompletionJob(flowId, job)], {
    [FLOW_ID]: flowId,
  });
  return row ?? null;
}

/**
 * The caller's transaction as pawl's statements run on it, decided once per call as enqueue does
 * (src/db/sql.ts): a pg client takes the named statements, any other client their text and values.
 */
function callerTransaction(client: SqlClient | undefined): Queryable | undefined {
  return client === undefined ? undefined : asQueryable(client);
}

async function createGraph(
  deps: CompositionDeps,
  plan: FlowPlan,
  callerClient: FlowOptions["client"],
): Promise<FlowHandle> {
  const tracing = deps.tracing ?? null;
  const client = callerTransaction(callerClient);
  const { flowId, jobs, completion } = await inTransaction(deps.store, client, async (tx) => {
    const flowId = await tx.insertFlow({
      kind: plan.kind,
      name: plan.name,
      policy: plan.policy,
      total: plan.members.length,
    });
    const ids = await tx.allocateJobIds(plan.members.length);
    // A producer span per member (tracing sets each member's traceContext before the insert).
    const jobs = await traceInsert(
      tracing,
      plan.members.map((m) => m.job),
      () =>
        tx.insertFlowMembers(
          flowId,
          plan.members.map((m, i) => ({
            id: ids[i] as string,
            job: m.job,
            step: m.step,
            deps: m.dependsOn.length,
            next: (plan.dependents[i] ?? []).map((d) => ids[d] as string),
          })),
        ),
      { [FLOW_ID]: flowId },
    );
    const completion = await insertCompletion(tx, tracing, flowId, plan.completion);
    return { flowId, jobs, completion };
  });
  deps.events?.emit("flow:created", { flowId, kind: plan.kind, total: jobs.length });
  await announce(
    deps,
    jobs.filter((j) => j.status === "PENDING"),
    client,
  );
  return {
    flowId,
    kind: plan.kind,
    total: jobs.length,
    jobIds: jobs.map((j) => j.id),
    completionJobId: completion?.id ?? null,
  };
}

/** Creates a chain (see {@link PawlClient.chain}). */
export function createChain(
  deps: CompositionDeps,
  steps: readonly ChainStep<UntypedTasks>[],
  options?: FlowOptions<UntypedTasks>,
): Promise<FlowHandle> {
  return createGraph(deps, planChain(steps, options, buildContext(deps)), options?.client);
}

/** Creates a workflow (see {@link PawlClient.workflow}). */
export function createWorkflow<Tasks>(
  deps: CompositionDeps,
  input: WorkflowInput<Tasks>,
): Promise<FlowHandle> {
  return createGraph(deps, planWorkflow(input, buildContext(deps)), input?.client);
}

/** Creates a batch (see {@link PawlClient.batch}): the flow row, its completion job, then the children in chunks. */
export async function createBatch<P>(
  deps: CompositionDeps,
  input: BatchInput<P, string, UntypedTasks>,
): Promise<FlowHandle> {
  const plan = planBatch(input, buildContext(deps));
  const client = callerTransaction(input.client);
  const tracing = deps.tracing ?? null;
  const { flowId, completion } = await inTransaction(deps.store, client, async (tx) => {
    const flowId = await tx.insertFlow({
      kind: "batch",
      name: plan.name,
      policy: "continue",
      total: plan.payloads.length,
    });
    const completion = await insertCompletion(tx, tracing, flowId, plan.completion);
    // One producer span for all the children (a batch may have 100,000): each child stores its context.
    await traceInsert(
      tracing,
      [plan.shared],
      async () => {
        for (let offset = 0; offset < plan.payloads.length; offset += batchChunkSize) {
          await tx.insertBatchChildren(
            flowId,
            plan.shared,
            plan.payloads.slice(offset, offset + batchChunkSize),
            offset,
          );
        }
        return [];
      },
      { [FLOW_ID]: flowId, [MESSAGING_BATCH_MESSAGE_COUNT]: plan.payloads.length },
    );
    return { flowId, completion };
  });
  deps.events?.emit("flow:created", { flowId, kind: "batch", total: plan.payloads.length });
  const s = plan.shared;
  const due = s.runAt ?? new Date(Date.now() + s.delayMs);
  // A batch parent is a wakeup trigger: one announcement for all its children.
  await announce(
    deps,
    [{ id: flowId, type: s.type, queue: s.queue, priority: s.priority, scheduledTime: due }],
    client,
  );
  return {
    flowId,
    kind: "batch",
    total: plan.payloads.length,
    jobIds: [],
    completionJobId: completion?.id ?? null,
  };
}

/** Validates a flow id (the same rule as job ids). */
function flowId(id: unknown): string {
  return validateJobId(id);
}

/** Reads a flow and its first `memberLimit` members (default 1000), or null. */
export async function getFlow(
  deps: CompositionDeps,
  id: string,
  memberLimit = 1000,
): Promise<FlowDetail | null> {
  const row = await deps.store.readFlow(flowId(id));
  if (!row) return null;
  const limit = Math.min(10_000, Math.max(0, Math.floor(memberLimit)));
  const members = limit > 0 ? await deps.store.flowMembers(row.id, limit) : [];
  return { ...flowFromRow(row), members };
}

/** Lists flows, newest first. */
export async function listFlows(deps: CompositionDeps, filter?: FlowListFilter): Promise<Flow[]> {
  return (await deps.store.listFlowRows(filter)).map(flowFromRow);
}

/**
 * Cancels a flow's members that have not started, and its completion job if not released yet; running
 * members finish their attempt. Returns how many jobs were canceled.
 *
 * @throws FlowNotFoundError when no flow has this id.
 */
export async function cancelFlow(
  deps: CompositionDeps,
  id: string,
  reason = "flow canceled by request",
): Promise<number> {
  const fid = flowId(id);
  const row = await deps.store.readFlow(fid);
  if (!row) throw new FlowNotFoundError(fid);
  return deps.store.cancelFlowMembers(fid, reason);
}
