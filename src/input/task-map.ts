/**
 * Typed jobs: one declaration, a map from job type to its payload and result, types every call that names
 * a job type (register, enqueue, enqueueMany, chain, batch, workflow, schedule, getJob, listJobs, dlq.list,
 * waitFor, the events of `pawl.on`, pawl/testing).
 *
 * Two ways to give the map, one mechanism: every generic `Tasks` parameter defaults to {@link PawlTasks},
 * the interface an application augments once (`declare module "pawl"`), so every instance in every file
 * is typed without threading a generic through the code that receives a `Pawl`; `createPawl<Tasks>()`
 * types one instance instead (a library, a test, two schemas with different jobs). Augmentation is global
 * to a program, which is why pawl's own tests use the generic.
 *
 * With an empty map (nothing declared, the default), every name and every payload are accepted, as before
 * typing existed; with a map, only its names are, each with its payload and result.
 */
import type { EnqueueOptions } from "./enqueue-input.js";
import type { Job } from "../core/job.js";
import type { PawlEventName, PawlEvents } from "../core/events.js";

/**
 * The application's job types, by name, for declaration merging. Empty by default: pawl is untyped.
 *
 * @example
 * ```ts
 * declare module "pawl" {
 *   interface PawlTasks {
 *     "email.send": { payload: { to: string }; result: { messageId: string } };
 *     "cache.flush": { payload: undefined }; // enqueued without a payload
 *   }
 * }
 * ```
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- filled in by declaration merging
export interface PawlTasks {}

/**
 * What a task map entry may declare: `payload` (what enqueue passes and the handler receives; leave it
 * out to take it from the type's schema or the handler) and `result` (what the handler returns, and
 * `getJob(id).result` reads).
 *
 * @example
 * ```ts
 * const entry: TaskSpec = { payload: { to: "a@b.c" }, result: { messageId: "m1" } };
 * ```
 */
export interface TaskSpec {
  payload?: unknown;
  result?: unknown;
}

/**
 * The map of an instance that declared nothing: what an untyped `PawlClient` or `Pawl` is (the default
 * when {@link PawlTasks} is not augmented).
 *
 * @example
 * ```ts
 * const pawl = createPawl<UntypedTasks>(); // untyped even where PawlTasks is augmented
 * ```
 */
export type UntypedTasks = Record<never, never>;

/**
 * Whether a map declares any job type (then its names, payloads and results are enforced).
 *
 * @example
 * ```ts
 * type No = IsTyped<UntypedTasks>; // false
 * ```
 */
export type IsTyped<Tasks> = [keyof Tasks] extends [never] ? false : true;

/**
 * The job type names a map allows: its keys, or any string when it is empty.
 *
 * @example
 * ```ts
 * type Names = TaskName<{ "a.b": { payload: number } }>; // "a.b"
 * ```
 */
export type TaskName<Tasks> = IsTyped<Tasks> extends true ? Extract<keyof Tasks, string> : string;

type Entry<Tasks, K> = K extends keyof Tasks ? Tasks[K] : Record<never, never>;

/**
 * The payload of job type `K`: its map entry's `payload`, else `Fallback` (the schema's or handler's type
 * for `register`, `unknown` elsewhere).
 *
 * @example
 * ```ts
 * type P = TaskPayload<{ "a.b": { payload: number } }, "a.b">; // number
 * ```
 */
export type TaskPayload<Tasks, K, Fallback = unknown> = [K] extends [never]
  ? never
  : K extends unknown
    ? "payload" extends keyof Entry<Tasks, K>
      ? Entry<Tasks, K>["payload" & keyof Entry<Tasks, K>]
      : Fallback
    : never;

/**
 * The result of job type `K`: its map entry's `result`, else `Fallback`.
 *
 * @example
 * ```ts
 * type R = TaskResult<{ "a.b": { payload: number; result: string } }, "a.b">; // string
 * ```
 */
export type TaskResult<Tasks, K, Fallback = unknown> = K extends unknown
  ? "result" extends keyof Entry<Tasks, K>
    ? Entry<Tasks, K>["result" & keyof Entry<Tasks, K>]
    : Fallback
  : never;

/**
 * `{ payload: P }`, optional when `P` accepts undefined (a job enqueued without a payload, whose handler
 * receives `{}`): the payload field of an enqueueMany item, a chain step, a workflow job.
 *
 * @example
 * ```ts
 * const item: PayloadField<{ id: number }> = { payload: { id: 1 } };
 * ```
 */
export type PayloadField<P> = undefined extends P ? { payload?: P } : { payload: P };

/**
 * A job as read back (getJob, listJobs): for each job type of the map, a `Job` whose `type` names it, with
 * that type's payload and result, so narrowing on `job.type` narrows both. With an empty map, a `Job`.
 *
 * @example
 * ```ts
 * const job = await pawl.getJob(id);
 * if (job?.type === "email.send" && job.status === "SUCCEEDED") job.result?.messageId;
 * ```
 */
export type TypedJob<Tasks, K extends string = TaskName<Tasks>> = K extends unknown
  ? Job<TaskPayload<Tasks, K>> & { type: K; result: TaskResult<Tasks, K> | null }
  : never;

/**
 * One item of `enqueueMany`: a job type, its payload, and the options of enqueue. With a
 * task map, a union over its job types, each with its own payload.
 *
 * @example
 * ```ts
 * const item: EnqueueItem = { type: "thumbnail", payload: { id: 1 }, priority: "low" };
 * ```
 */
export type EnqueueItem<Tasks = PawlTasks, K extends TaskName<Tasks> = TaskName<Tasks>> = K extends unknown
  ? { type: K } & PayloadField<TaskPayload<Tasks, K>> & Omit<EnqueueOptions, "client">
  : never;

/**
 * The arguments of `enqueue` after the type: with a task map the payload is the type's
 * (required unless it accepts undefined); without one, any payload, optional.
 */
export type EnqueueArgs<Tasks, K, P = unknown> =
  IsTyped<Tasks> extends true
    ? undefined extends TaskPayload<Tasks, K>
      ? [payload?: TaskPayload<Tasks, K>, options?: EnqueueOptions]
      : [payload: TaskPayload<Tasks, K>, options?: EnqueueOptions]
    : [payload?: P, options?: EnqueueOptions];

/** `T` with its job-type fields (`type`, `job.type`, `jobs[].type`) narrowed to the names `N`. */
type WithTypeNames<T, N> = {
  [F in keyof T]: F extends "type"
    ? N
    : F extends "job"
      ? T[F] & { type: N }
      : F extends "jobs"
        ? T[F] extends readonly (infer J)[]
          ? readonly (J & { type: N })[]
          : T[F]
        : T[F];
};

/**
 * An event's payload as `pawl.on` gives it on a typed instance: every job type it names (`job.type`,
 * `jobs[i].type`, `type`) is one of the map's names, so a listener can switch on it. A node runs only the
 * map's types (register takes no other), as getJob assumes the schema holds only those. Without a map,
 * the payload of {@link PawlEvents}.
 *
 * @example
 * ```ts
 * pawl.on("job:dead", ({ job }) => {
 *   if (job.type === "email.send") alert(job.id); // job.type: "email.send" | "cache.flush" | ...
 * });
 * ```
 */
export type TypedEvent<Tasks, E extends PawlEventName> =
  IsTyped<Tasks> extends true ? WithTypeNames<PawlEvents[E], TaskName<Tasks>> : PawlEvents[E];
