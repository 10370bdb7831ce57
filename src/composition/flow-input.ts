/**
 * Turns what a caller passed to `pawl.chain`, `pawl.workflow` or `pawl.batch` into a plan to insert, or a
 * typed error. Pure: every member is validated like an enqueue (type, payload, options, the type's
 * validator) and the dependency graph is checked (unknown names, duplicates, cycles) before any SQL runs,
 * so a bad flow writes nothing.
 */
import {
  buildNewJob,
  runValidator,
  validateClientOption,
  type EnqueueOptions,
  type NewJob,
  type TypeDefaults,
} from "../input/enqueue-input.js";
import { PawlError, ValidationError } from "../core/errors.js";
import { describeValue, storableText } from "../core/input-text.js";
import { serializePayload } from "../input/payload.js";
import type { SqlClient } from "../db/sql.js";
import type { FlowFailurePolicy, FlowKind } from "../store/composition/flow-sql.js";
import type { IsTyped, PawlTasks, PayloadField, TaskName, TaskPayload } from "../input/task-map.js";

/**
 * The enqueue options a flow member may carry (no `client`: the flow has one; no `uniqueKey`). They include
 * `concurrencyKey` and `concurrencyLimit`, checked as enqueue checks them (the type's registered limit is
 * the default) and kept on the member's row, so a step of a key runs within that key's limit once its
 * dependencies are met (docs/fairness.md).
 *
 * @example
 * ```ts
 * const step: FlowJobOptions = { priority: "high", concurrencyKey: `tenant-${id}`, concurrencyLimit: 2 };
 * ```
 */
export type FlowJobOptions = Omit<EnqueueOptions, "client" | "uniqueKey">;

/**
 * One step of {@link PawlClient.chain}. With a task map, a union over its job types, each with its payload.
 *
 * @example
 * ```ts
 * const step: ChainStep = { type: "video.download", payload: { url }, name: "download" };
 * ```
 */
export type ChainStep<Tasks = PawlTasks, K extends TaskName<Tasks> = TaskName<Tasks>> = K extends unknown
  ? {
      type: K;
      /** The step's name in the flow (`ctx.flow()`'s keys). Default: its index, "0", "1", ... */
      name?: string;
    } & PayloadField<TaskPayload<Tasks, K>> &
      FlowJobOptions
  : never;

/**
 * One job of {@link PawlClient.workflow}. With a task map, a union over its job types, each with its payload.
 *
 * @example
 * ```ts
 * const job: WorkflowJob = { name: "load", type: "etl.load", dependsOn: ["extract"] };
 * ```
 */
export type WorkflowJob<Tasks = PawlTasks, K extends TaskName<Tasks> = TaskName<Tasks>> = K extends unknown
  ? {
      /** The job's name in the workflow: unique, what `dependsOn` refers to. */
      name: string;
      type: K;
      /** Names of the jobs that must SUCCEED before this one runs. */
      dependsOn?: readonly string[];
    } & PayloadField<TaskPayload<Tasks, K>> &
      FlowJobOptions
  : never;

/**
 * The `payload` a flow's completion job of type `K` is given: with a task map, the `P` of the type's
 * declared `FlowCompletion<P>` payload (a type whose payload is not a FlowCompletion cannot complete a
 * flow: its handler would receive the counts); without one, anything.
 */
export type CompletionPayload<Tasks, K> =
  IsTyped<Tasks> extends true ? (TaskPayload<Tasks, K> extends FlowCompletion<infer P> ? P : never) : unknown;

/**
 * The job enqueued once every member of a flow is terminal, with the counts in its payload.
 *
 * @example
 * ```ts
 * const done: CompletionJob = { type: "import.done", payload: { file: "rows.csv" } };
 * ```
 */
export type CompletionJob<Tasks = PawlTasks, K extends TaskName<Tasks> = TaskName<Tasks>> = K extends unknown
  ? { type: K } & PayloadField<CompletionPayload<Tasks, K>> & FlowJobOptions
  : never;

/** Options every flow takes. */
export interface FlowOptions<Tasks = PawlTasks> {
  /** A label for people (CLI, listFlows). */
  name?: string;
  /**
   * Enqueued exactly once, when every member is terminal (SUCCEEDED, DEAD or CANCELED). Its handler
   * receives a {@link FlowCompletion} payload: the counts, and this job's own payload as `payload`.
   */
  onComplete?: CompletionJob<Tasks>;
  /**
   * The caller's transaction, as for enqueue: a pg client, or any {@link SqlClient} (`query(text, values)`
   * resolving to `{ rows }`, e.g. a two-line adapter over a kysely, knex or drizzle transaction). The flow
   * and all its members exist once that commits, and not at all if it rolls back.
   */
  client?: SqlClient;
}

/** Input of {@link PawlClient.workflow}. */
export interface WorkflowInput<Tasks = PawlTasks> extends FlowOptions<Tasks> {
  jobs: readonly WorkflowJob<Tasks>[];
  /**
   * What a member that ends DEAD or CANCELED does to the jobs that depend on it: `stop-dependents`
   * (default) cancels them (transitively); `continue` runs them anyway, the failure recorded in their
   * `ctx.flow()` and in the flow's counts.
   */
  failurePolicy?: "stop-dependents" | "continue";
}

/**
 * Input of {@link PawlClient.batch}: one child per item, all of one type and options (with a task map,
 * `P` is that type's payload).
 */
export interface BatchInput<P = unknown, K extends string = string, Tasks = PawlTasks>
  extends FlowOptions<Tasks>, FlowJobOptions {
  type: K;
  /** The children's payloads, one child per item (1 to {@link maxBatchItems}). */
  items: readonly P[];
}

/** The payload of a flow's completion job. */
export interface FlowCompletion<P = unknown> {
  flowId: string;
  kind: FlowKind;
  name: string | null;
  total: number;
  succeeded: number;
  dead: number;
  canceled: number;
  /** The completion job's own payload, as given in `onComplete`. */
  payload: P;
}

/** The most members of a chain or workflow. */
export const maxFlowMembers = 10_000;
/** The most children of a batch. */
export const maxBatchItems = 1_000_000;
const maxNameLength = 200;

/** What validation needs from the client: type defaults and the payload limit. */
export interface FlowBuildContext {
  typeDefaults(type: string): TypeDefaults | undefined;
  maxPayloadBytes: number;
}

/** A validated chain or workflow member. */
export interface PlannedMember {
  step: string;
  job: NewJob;
  /** Indexes of the members it depends on. */
  dependsOn: number[];
}

/** A validated chain or workflow. */
export interface FlowPlan {
  kind: "chain" | "workflow";
  name: string | null;
  policy: FlowFailurePolicy;
  members: PlannedMember[];
  /** For each member, the indexes of the members that depend on it. */
  dependents: number[][];
  completion: NewJob | null;
}

/** A validated batch. */
export interface BatchPlan {
  name: string | null;
  /** Type and options shared by every child (its payload is the first item's). */
  shared: NewJob;
  /** Each child's payload as JSON text. */
  payloads: string[];
  completion: NewJob | null;
}

function fail(message: string): never {
  throw new ValidationError("INVALID_FLOW", message);
}

function label(value: unknown, what: string): string | null {
  if (value === undefined) return null;
  if (typeof value === "string") storableText(what, value, "INVALID_FLOW");
  if (typeof value !== "string" || value.length === 0 || value.length > maxNameLength) {
    fail(`invalid ${what} ${describeValue(value)}: use 1-${maxNameLength} characters`);
  }
  return value;
}

function object(value: unknown, what: string): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) fail(`${what} must be an object`);
  return value as Record<string, unknown>;
}

/** Validates one member like an enqueue; `where` prefixes the message of any error. */
function member(
  raw: Record<string, unknown>,
  where: string,
  ctx: FlowBuildContext,
  omit: readonly string[],
): NewJob {
  const { type, payload, ...rest } = raw;
  const options: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(rest)) if (!omit.includes(k)) options[k] = v;
  if ("uniqueKey" in options) fail(`${where}: uniqueKey is not supported on flow members`);
  if ("client" in options) fail(`${where}: give client on the flow, not on a member`);
  try {
    const typeName = typeof type === "string" ? type : "";
    return buildNewJob(
      type,
      payload,
      options as EnqueueOptions,
      ctx.typeDefaults(typeName),
      ctx.maxPayloadBytes,
    );
  } catch (error) {
    if (error instanceof PawlError) error.message = `${where}: ${error.message}`;
    throw error;
  }
}

function completionOf(options: FlowOptions, ctx: FlowBuildContext): NewJob | null {
  if (options.onComplete === undefined) return null;
  return member(object(options.onComplete, "onComplete"), "onComplete", ctx, []);
}

/**
 * Finds a cycle in a dependency graph (`deps[i]` lists what `i` depends on); returns its member indexes,
 * first repeated at the end (`[a, b, a]`), or null when the graph is acyclic.
 */
export function findCycle(deps: readonly (readonly number[])[]): number[] | null {
  const state = new Uint8Array(deps.length); // 0 new, 1 on the stack, 2 done
  const parent = new Int32Array(deps.length).fill(-1);
  for (let root = 0; root < deps.length; root++) {
    if (state[root] !== 0) continue;
    // Iterative DFS so a long chain of dependencies cannot overflow the stack.
    const stack: [number, number][] = [[root, 0]];
    state[root] = 1;
    while (stack.length > 0) {
      const top = stack[stack.length - 1] as [number, number];
      const [node, i] = top;
      const next = deps[node]?.[i];
      if (next === undefined) {
        state[node] = 2;
        stack.pop();
        continue;
      }
      top[1] = i + 1;
      if (state[next] === 1) {
        const cycle = [next];
        for (let n = node; n !== next && n !== -1; n = parent[n] as number) cycle.push(n);
        cycle.push(next);
        return cycle.reverse();
      }
      if (state[next] === 0) {
        state[next] = 1;
        parent[next] = node;
        stack.push([next, 0]);
      }
    }
  }
  return null;
}

function dependentsOf(deps: readonly (readonly number[])[]): number[][] {
  const out: number[][] = deps.map(() => []);
  deps.forEach((ds, i) => {
    for (const d of ds) out[d]?.push(i);
  });
  return out;
}

function flowOptions(raw: unknown): FlowOptions {
  if (raw === undefined) return {};
  const o = object(raw, "flow options");
  label(o.name, "flow name");
  validateClientOption(o.client);
  return o as FlowOptions;
}

/** Validates a chain: each step runs once the previous one SUCCEEDED. @throws ValidationError. */
export function planChain(steps: unknown, options: unknown, ctx: FlowBuildContext): FlowPlan {
  if (!Array.isArray(steps) || steps.length === 0) fail("a chain needs an array of at least one step");
  if (steps.length > maxFlowMembers) fail(`a chain has at most ${maxFlowMembers} steps, got ${steps.length}`);
  const o = flowOptions(options);
  const seen = new Set<string>();
  const members = steps.map((raw, i): PlannedMember => {
    const s = object(raw, `chain step ${i}`);
    const step = label(s.name, `name of chain step ${i}`) ?? String(i);
    if (seen.has(step)) fail(`chain step ${i}: the name ${JSON.stringify(step)} is used twice`);
    seen.add(step);
    return { step, job: member(s, `chain step ${i}`, ctx, ["name"]), dependsOn: i === 0 ? [] : [i - 1] };
  });
  return {
    kind: "chain",
    name: o.name ?? null,
    policy: "stop",
    members,
    dependents: dependentsOf(members.map((m) => m.dependsOn)),
    completion: completionOf(o, ctx),
  };
}

/**
 * Validates a workflow: names unique, every `dependsOn` known, no job depending on itself, no cycle.
 * @throws ValidationError `INVALID_FLOW` naming the job (and the cycle); nothing is written then.
 */
export function planWorkflow(input: unknown, ctx: FlowBuildContext): FlowPlan {
  const o = object(input, "workflow") as unknown as WorkflowInput;
  flowOptions({ name: o.name, client: o.client });
  const jobs: unknown = o.jobs;
  if (!Array.isArray(jobs) || jobs.length === 0) fail("a workflow needs a jobs array of at least one job");
  if (jobs.length > maxFlowMembers) fail(`a workflow has at most ${maxFlowMembers} jobs, got ${jobs.length}`);
  const policy = o.failurePolicy ?? "stop-dependents";
  if (policy !== "stop-dependents" && policy !== "continue") {
    fail(`invalid failurePolicy ${describeValue(policy)}: use stop-dependents or continue`);
  }
  const index = new Map<string, number>();
  const raws = jobs.map((raw, i) => {
    const j = object(raw, `workflow job ${i}`);
    const name = label(j.name, `name of workflow job ${i}`);
    if (name === null) fail(`workflow job ${i} needs a name`);
    if (index.has(name)) fail(`workflow job name ${JSON.stringify(name)} is used twice`);
    index.set(name, i);
    return { j, name };
  });
  const members = raws.map(({ j, name }): PlannedMember => {
    const where = `workflow job ${JSON.stringify(name)}`;
    const dependsOn: number[] = [];
    if (j.dependsOn !== undefined) {
      if (!Array.isArray(j.dependsOn)) fail(`${where}: dependsOn must be an array of job names`);
      for (const d of j.dependsOn as unknown[]) {
        const at = typeof d === "string" ? index.get(d) : undefined;
        if (at === undefined)
          fail(`${where} depends on ${describeValue(d)}, which is not a job of this workflow`);
        if (d === name) fail(`${where} depends on itself`);
        if (dependsOn.includes(at)) fail(`${where} lists ${describeValue(d)} twice in dependsOn`);
        dependsOn.push(at);
      }
    }
    return { step: name, job: member(j, where, ctx, ["name", "dependsOn"]), dependsOn };
  });
  const cycle = findCycle(members.map((m) => m.dependsOn));
  if (cycle) {
    fail(`workflow has a dependency cycle: ${cycle.map((i) => members[i]?.step).join(" -> ")}`);
  }
  return {
    kind: "workflow",
    name: o.name ?? null,
    policy: policy === "continue" ? "continue" : "stop",
    members,
    dependents: dependentsOf(members.map((m) => m.dependsOn)),
    completion: completionOf(o, ctx),
  };
}

/** Validates a batch: the shared type and options once, then every item's payload. @throws ValidationError. */
export function planBatch(input: unknown, ctx: FlowBuildContext): BatchPlan {
  const o = object(input, "batch");
  const { items, name, onComplete, client, ...shared } = o;
  flowOptions({ name, client });
  if (!Array.isArray(items) || items.length === 0) fail("a batch needs an items array of at least one item");
  if (items.length > maxBatchItems) fail(`a batch has at most ${maxBatchItems} items, got ${items.length}`);
  const first = member({ ...shared, payload: items[0] }, "batch item 0", ctx, []);
  const validate = ctx.typeDefaults(first.type)?.validate;
  const payloads = new Array<string>(items.length);
  payloads[0] = first.payloadJson;
  for (let i = 1; i < items.length; i++) {
    const item: unknown = items[i];
    try {
      payloads[i] = serializePayload(item === undefined ? {} : item, ctx.maxPayloadBytes);
      runValidator(first.type, validate, item);
    } catch (error) {
      if (error instanceof PawlError) error.message = `batch item ${i}: ${error.message}`;
      throw error;
    }
  }
  return {
    name: (name as string | undefined) ?? null,
    shared: first,
    payloads,
    completion: completionOf({ onComplete: onComplete as CompletionJob | undefined }, ctx),
  };
}

/** The kind of a plan (for messages and the flow row). */
export function planKind(plan: FlowPlan | BatchPlan): FlowKind {
  return "kind" in plan ? plan.kind : "batch";
}
