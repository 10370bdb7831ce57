/**
 * pawl's public API. Everything a user imports comes from here (and from `pawl/client`, `pawl/testing`,
 * `pawl/coordinators` and `pawl/observability`). Only what a user needs is exported: the store, the
 * emitter, the resolved configuration and the pure explain logic are internal (etc/pawl.api.md is the
 * reviewed surface; `npm run api:report` regenerates it).
 */
import type { PawlConfig } from "./input/config.js";
import { Pawl } from "./api/pawl.js";
import type { PawlTasks } from "./input/task-map.js";

export { PawlClient } from "./api/client.js";
export { createClient } from "./api/create-client.js";
export { Pawl } from "./api/pawl.js";
export type { HealthOptions } from "./api/node-health.js";
export type { HealthCheck, HealthCheckName, HealthReport, HealthStatus } from "./logic/health.js";
export type {
  StopOptions,
  HandlerPayload,
  HandlerResult,
  ScheduleArgs,
  ScheduledPayload,
} from "./api/pawl.js";
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
} from "./input/task-map.js";
export type {
  StandardSchema,
  StandardSchemaIssue,
  StandardSchemaResult,
  InferSchemaInput,
} from "./core/standard-schema.js";
export type { Handler, RegisterOptions, RetryOption } from "./node/registry.js";
export type { RuntimeOptions } from "./input/runtime-config.js";
export { JobContext } from "./node/attempt/job-context.js";
export { Snooze, Discard, NonRetryableError, CancellationRequestedError } from "./node/attempt/job-errors.js";
export { JobTimeoutError } from "./core/errors.js";
export type { PawlEvents, PawlEventName, JobEventInfo } from "./core/events.js";
export type { ActorTree, ActorNode } from "./node/inspect.js";
export type { Coordinator, WakeupHint, CoordinatorStatus } from "../coordinators/spi.js";
export type { EnqueueItem, EnqueueArgs } from "./input/task-map.js";
export type { DeadLetterQueue, DeadLetterRetryOptions } from "./api/dead-letter-queue.js";
export type { TracingOptions, TracerProviderLike } from "./input/tracing-options.js";
export type { EnqueueOptions, PayloadValidator } from "./input/enqueue-input.js";
export type { PawlConfig } from "./input/config.js";
export {
  PawlError,
  ValidationError,
  JobNotFoundError,
  DatabaseUnavailableError,
  MissingDependencyError,
  WaitTimeoutError,
  SchemaVersionError,
} from "./core/errors.js";
export { NodeIdInUseError } from "./core/errors.js";
export { PrivilegeError } from "./db/privilege-error.js";
export type { SchemaVerdict } from "./logic/schema-compat.js";
export { releaseInfo } from "./cluster/node-info.js";
export type { WaitForOptions } from "./api/wait-for.js";
export type { PawlErrorCode } from "./core/errors.js";
export { priorities, resolvePriority } from "./input/priority.js";
export type { Priority, PriorityName } from "./input/priority.js";
export type { Job, JobStatus, JobErrorRecord, JobStep } from "./core/job.js";
export type { EnqueuedJob } from "./store/jobs/enqueue-jobs.js";
export type { SqlClient } from "./db/sql.js";
export type { CancelResult } from "./store/jobs/cancel-job.js";
export * from "./composition/index.js";
export { ManualClock } from "./core/clock.js";
export type { Clock } from "./core/clock.js";
export { consoleLogger, silentLogger, pinoLogger } from "./core/logger.js";
export type { Logger, LogFields, HostLogger, PinoLike } from "./core/logger.js";
export { openEmbeddedDatabase } from "./db/embedded/embedded-database.js";
export type { EmbeddedDatabase, EmbeddedDatabaseOptions } from "./db/embedded/embedded-database.js";
export type { EmbeddedPool } from "./db/embedded/embedded-pool.js";
export type { EmbeddedLocation } from "./db/embedded/embedded-url.js";

/**
 * Creates a pawl node: a {@link Pawl}, which enqueues and reads like a {@link PawlClient} and also runs
 * the handlers registered on it once started. This is the one way to make a node (`new Pawl(config)` is
 * deprecated). Use {@link createClient} (from `pawl/client`) for a process that only enqueues and reads. `Tasks` types its job types (README, "Typed jobs"): it defaults to the map declared
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
export type { Explanation, ExplainReason } from "./logic/explain.js";
export { describeReason } from "./logic/explain-text.js";
// Durable machines (docs/durable-machines.md).
export type { MachineOptions } from "./api/pawl.js";
export { MachineFinishedError, NotAMachineError } from "./composition/machine-errors.js";
export type { SendResult } from "./composition/machine-send.js";
export { MachineSnapshotMismatchError } from "./node/machines/machine-errors.js";
export type { MachineView, MachineTimerView, MachineEventView } from "./core/machine-view.js";
