/**
 * fake(): enqueues are recorded instead of inserted. The input is validated exactly as a real enqueue
 * validates it (type name, options, payload as JSON, the registered type's validator and defaults), so a
 * test still catches a bad call, but nothing touches the database: no insert, no unique-key look-up, no
 * transaction. The instance's `enqueue` and `enqueueMany` are replaced on that one object, so fakes of
 * different instances are independent and tests using them may run in parallel.
 */
import { AssertionError } from "node:assert";
import { buildNewJob, type EnqueueOptions, type NewJob } from "../input/enqueue-input.js";
import { PawlError, ValidationError } from "../core/errors.js";
import type { PawlClient } from "../api/client.js";
import type { EnqueueItem } from "../input/task-map.js";
import { typeDefaults } from "../node/registry.js";
import type { EnqueuedJob } from "../store/jobs/enqueue-jobs.js";
import type { SqlClient } from "../db/sql.js";
import { patchEnqueue, registeredTypes } from "./internals.js";
import { describeMatcher, matches, type PayloadMatcher } from "./match.js";
import type { IsTyped, PawlTasks, TaskName, TaskPayload } from "../input/task-map.js";

/** One recorded enqueue (with a task map, a union over its job types, each with its payload). */
export type RecordedEnqueue<
  Tasks = PawlTasks,
  K extends TaskName<Tasks> = TaskName<Tasks>,
> = K extends unknown ? RecordedEnqueueOf<K, TaskPayload<Tasks, K>> : never;

/** A recorded enqueue of job type `K` with payload `P`. */
export interface RecordedEnqueueOf<K extends string = string, P = unknown> {
  /** The job type. */
  type: K;
  /** The payload as the handler would receive it (after the JSON round trip; `{}` when none was given). */
  payload: P;
  /** The enqueue options as given, without `client`. */
  options: Omit<EnqueueOptions, "client">;
  /** Whether the enqueue was made in a caller's transaction (`client` was given). */
  inTransaction: boolean;
  /** What enqueue returned: a PENDING job with a made-up id. */
  job: EnqueuedJob<P>;
}

/** The matcher {@link EnqueueRecorder.assertEnqueued} takes for `K`: over the map's payload, else `P`. */
type MatcherOf<Tasks, K, P> = PayloadMatcher<IsTyped<Tasks> extends true ? TaskPayload<Tasks, K> : P>;

/** What {@link fake} returns. With a task map, job types and payload matchers are typed by it. */
export interface EnqueueRecorder<Tasks = PawlTasks> {
  /** Every enqueue since fake() (or the last clear()), in call order; enqueueMany adds one per item. */
  readonly enqueued: readonly RecordedEnqueue<Tasks>[];
  /** The recorded enqueues of one type. */
  enqueuedOf<K extends TaskName<Tasks>>(type: K): RecordedEnqueue<Tasks, K>[];
  /**
   * Asserts that a job of `type` was enqueued, with a payload matching `matcher` when given (a subset
   * pattern, or a predicate); returns the first match.
   *
   * @throws AssertionError listing what was enqueued.
   */
  assertEnqueued<P = unknown, K extends TaskName<Tasks> = TaskName<Tasks>>(
    type: K,
    matcher?: MatcherOf<Tasks, K, P>,
  ): RecordedEnqueue<Tasks, K>;
  /** Asserts that no job of `type` (with a matching payload, when given) was enqueued. */
  assertNotEnqueued<P = unknown, K extends TaskName<Tasks> = TaskName<Tasks>>(
    type: K,
    matcher?: MatcherOf<Tasks, K, P>,
  ): void;
  /** Forgets what was recorded. */
  clear(): void;
  /** Puts the instance's own enqueue methods back. Idempotent. */
  restore(): void;
}

function fakeJob(job: NewJob, id: number, now: Date): EnqueuedJob {
  return {
    id: String(id),
    type: job.type,
    queue: job.queue,
    payload: JSON.parse(job.payloadJson) as unknown,
    priority: job.priority,
    status: "PENDING",
    scheduledTime: job.runAt ?? new Date(now.getTime() + job.delayMs),
    attempts: 0,
    maxAttempts: job.maxAttempts,
    timeoutMs: job.timeoutMs,
    pickedBy: null,
    pickedAt: null,
    uniqueKey: job.uniqueKey,
    errors: [],
    lastError: null,
    result: null,
    cancelReason: null,
    createdAt: now,
    updatedAt: now,
    finishedAt: null,
    inserted: true,
  };
}

/** The recorder as implemented: untyped, whatever the instance's task map. */
interface UntypedRecorder {
  readonly enqueued: readonly RecordedEnqueueOf[];
  enqueuedOf(type: string): RecordedEnqueueOf[];
  assertEnqueued(type: string, matcher?: PayloadMatcher): RecordedEnqueueOf;
  assertNotEnqueued(type: string, matcher?: PayloadMatcher): void;
  clear(): void;
  restore(): void;
}

function listing(records: readonly RecordedEnqueueOf[]): string {
  if (records.length === 0) return "nothing was enqueued";
  return "enqueued:\n" + records.map((r) => `  ${r.type} ${JSON.stringify(r.payload)}`).join("\n");
}

/**
 * Records enqueues on `client` instead of inserting them.
 *
 * Unique keys are not applied: every enqueue is recorded and returns `inserted: true`. Returned jobs have
 * made-up ids ("1", "2", ...) that exist nowhere, so do not read them back. The replacement is
 * per-instance (own properties over the prototype's methods); `restore()` removes it.
 *
 * @example
 * ```ts
 * import { fake } from "pawl/testing";
 *
 * it("enqueues a welcome email on sign-up", async () => {
 *   const recorder = fake(pawl);
 *   try {
 *     await signUp(pawl, { email: "a@b.c" });
 *     recorder.assertEnqueued("email.welcome", { to: "a@b.c" });
 *   } finally {
 *     recorder.restore();
 *   }
 * });
 * ```
 */
export function fake<Tasks extends object>(client: PawlClient<Tasks>): EnqueueRecorder<Tasks>;
/**
 * Runs `block` with enqueues recorded, then restores the instance (also when `block` throws).
 *
 * @example
 * ```ts
 * await fake(pawl, async (recorder) => {
 *   await signUp(pawl, { email: "a@b.c" });
 *   recorder.assertEnqueued("email.welcome", (p) => (p as { to: string }).to.endsWith("@b.c"));
 * });
 * ```
 */
export function fake<T, Tasks extends object = PawlTasks>(
  client: PawlClient<Tasks>,
  block: (recorder: EnqueueRecorder<Tasks>) => T | Promise<T>,
): Promise<T>;
export function fake<T, Tasks extends object>(
  client: PawlClient<Tasks>,
  block?: (recorder: EnqueueRecorder<Tasks>) => T | Promise<T>,
): EnqueueRecorder<Tasks> | Promise<T> {
  let records: RecordedEnqueueOf[] = [];
  let nextId = 1;
  const types = () => registeredTypes(client);
  const build = (type: string, payload: unknown, options: EnqueueOptions | undefined): NewJob => {
    const registered = types().get(type);
    return buildNewJob(
      type,
      payload,
      options,
      registered ? typeDefaults(registered) : undefined,
      client.config.maxPayloadBytes,
    );
  };
  const record = (job: NewJob, options: EnqueueOptions, inTransaction: boolean): EnqueuedJob => {
    const { client: _client, ...rest } = options;
    const out = fakeJob(job, nextId++, new Date());
    records.push({ type: job.type, payload: out.payload, options: rest, inTransaction, job: out });
    return out;
  };

  const restore = patchEnqueue(client, "fake", () => ({
    enqueue: async <P = unknown, K extends string = string>(
      type: K,
      payload?: P,
      options?: EnqueueOptions,
    ) => {
      const job = build(type, payload, options);
      return record(job, options ?? {}, options?.client !== undefined) as EnqueuedJob<P, K>;
    },
    enqueueMany: async (items: readonly EnqueueItem[], options: { client?: SqlClient } = {}) => {
      if (!Array.isArray(items))
        throw new ValidationError("INVALID_OPTION", "enqueueMany takes an array of jobs");
      const built = items.map((item, i) => {
        if (typeof item !== "object" || item === null) {
          throw new ValidationError("INVALID_OPTION", `enqueueMany item ${i} is not an object`);
        }
        const { type, payload, ...opts } = item;
        try {
          return { job: build(type, payload, opts), opts };
        } catch (error) {
          if (error instanceof PawlError) error.message = `item ${i}: ${error.message}`;
          throw error;
        }
      });
      return built.map(({ job, opts }) => record(job, opts, options.client !== undefined));
    },
  }));

  const recorder: UntypedRecorder = {
    get enqueued() {
      return records;
    },
    enqueuedOf: (type) => records.filter((r) => r.type === type),
    assertEnqueued(type, matcher) {
      const found = records.find((r) => r.type === type && matches(r.payload, matcher));
      if (!found) {
        throw new AssertionError({
          message: `expected a ${type} job with ${describeMatcher(matcher)} to be enqueued; ${listing(records)}`,
          stackStartFn: recorder.assertEnqueued,
        });
      }
      return found;
    },
    assertNotEnqueued(type, matcher) {
      const found = records.find((r) => r.type === type && matches(r.payload, matcher));
      if (found) {
        throw new AssertionError({
          message: `expected no ${type} job with ${describeMatcher(matcher)} to be enqueued; ${listing(records)}`,
          stackStartFn: recorder.assertNotEnqueued,
        });
      }
    },
    clear() {
      records = [];
    },
    restore,
  };
  // The records are the untyped view of what was enqueued; the task map only types what the caller reads.
  const typed = recorder as unknown as EnqueueRecorder<Tasks>;
  if (!block) return typed;
  return (async () => {
    try {
      return await block(typed);
    } finally {
      restore();
    }
  })();
}
