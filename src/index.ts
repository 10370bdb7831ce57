/**
 * pawl's public API. Everything a user imports comes from here (and from `pawl/testing`,
 * `pawl/coordinators` and `pawl/observability`).
 */
import type { PawlConfig } from "./config.js";
import { Pawl } from "./pawl.js";
import type { PawlTasks } from "./task-map.js";

export { PawlClient } from "./client.js";
export { Pawl } from "./pawl.js";
export type { StopOptions, HandlerPayload, HandlerResult, ScheduleArgs, ScheduledPayload } from "./pawl.js";
export type {
  PawlTasks,
  TaskSpec,
  UntypedTasks,
  IsTyped,
  TaskName,
  TaskPayload,
  TaskResult,
  PayloadField,
  TypedJob,
  TypedEvent,
} from "./task-map.js";
export type {
  StandardSchema,
  StandardSchemaIssue,
  StandardSchemaResult,
  InferSchemaInput,
} from "./standard-schema.js";
export type { Handler, RegisterOptions, RetryOption } from "./runtime/registry.js";
export type { RuntimeOptions } from "./runtime/runtime-config.js";
export { JobContext } from "./runtime/job-context.js";
export { Snooze, Discard, NonRetryableError, CancellationRequestedError } from "./runtime/job-errors.js";
export { JobTimeoutError } from "./errors.js";
export { PawlEventEmitter } from "./events.js";
export type { PawlEvents, PawlEventName, JobEventInfo } from "./events.js";
export type { ActorTree, ActorNode } from "./runtime/inspect.js";
export type { Coordinator, WakeupHint, CoordinatorStatus } from "../coordinators/spi.js";
export type { EnqueueItem, EnqueueArgs } from "./task-map.js";
export type { DeadLetterQueue } from "./dead-letter-queue.js";
export type { PawlConfig, ResolvedConfig } from "./config.js";
export type { TracingOptions, TracerProviderLike } from "./tracing/tracing-options.js";
export type { EnqueueOptions, PayloadValidator } from "./enqueue-input.js";
export {
  PawlError,
  ValidationError,
  JobNotFoundError,
  DatabaseUnavailableError,
  MissingDependencyError,
  WaitTimeoutError,
} from "./errors.js";
export type { WaitForOptions } from "./wait-for.js";
export type { PawlErrorCode } from "./errors.js";
export { priorities, resolvePriority } from "./priority.js";
export type { Priority, PriorityName } from "./priority.js";
export type { Job, JobStatus, JobErrorRecord } from "./job.js";
export type { EnqueuedJob } from "./store/enqueue-jobs.js";
export type { SqlClient } from "./store/sql.js";
export type { CancelResult } from "./store/cancel-job.js";
export { JobStore } from "./store/job-store.js";
export type { NodeStore } from "./store/job-store.js";
export { PostgresJobStore } from "./store/postgres-job-store.js";
export * from "./composition/index.js";
export type { LaneView } from "./runtime/lanes.js";
export { ManualClock, systemClock } from "./clock.js";
export type { Clock } from "./clock.js";
export { consoleLogger, silentLogger, pinoLogger } from "./logger.js";
export type { Logger, LogFields, HostLogger, PinoLike } from "./logger.js";
export { openEmbeddedDatabase } from "./embedded/embedded-database.js";
export type { EmbeddedDatabase, EmbeddedDatabaseOptions } from "./embedded/embedded-database.js";
export type { EmbeddedPool } from "./embedded/embedded-pool.js";
export type { EmbeddedLocation } from "./embedded/embedded-url.js";

/**
 * Creates a pawl node: a {@link Pawl}, which enqueues and reads like a {@link PawlClient} and also runs
 * the handlers registered on it once started. Use `new PawlClient(config)` for a process that only
 * enqueues and reads. `Tasks` types its job types (README, "Typed jobs"): it defaults to the map declared
 * by augmenting {@link PawlTasks}; give it here to type this one instance instead.
 *
 * @example
 * ```ts
 * import { createPawl } from "pawl";
 * const pawl = createPawl({ connectionString: process.env.DATABASE_URL, schema: "pawl" });
 * await pawl.migrate();
 * await pawl.enqueue("email.send", { to: "a@b.c" });
 *
 * type Tasks = { "email.send": { payload: { to: string }; result: { messageId: string } } };
 * const typed = createPawl<Tasks>({ connectionString: process.env.DATABASE_URL });
 * ```
 */
export function createPawl<Tasks extends object = PawlTasks>(config?: PawlConfig): Pawl<Tasks> {
  return new Pawl<Tasks>(config);
}
export type {
  ClusterOptions,
  ClusterView,
  ClockSkewReading,
  Schedule,
  ScheduleOptions,
  NodeInfo,
  NodeStatus,
  LockRow,
} from "./cluster/index.js";
export type { MissedFirePolicy } from "./logic/cron.js";
export { explainJob } from "./logic/explain.js";
export { describeReason } from "./logic/explain-text.js";
export type { Explanation, ExplainReason } from "./logic/explain.js";
export type { ExplainFacts, NodeRegistry } from "./logic/explain-facts.js";
