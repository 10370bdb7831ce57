/**
 * `pawl/client`: what a web process needs to hand work to the workers, and nothing that runs it. It
 * enqueues, waits for (`waitFor`) and reads (`getJob`, `listJobs`) jobs through {@link createClient}, and
 * loads neither xstate nor the node's runtime: about 60% of the modules `pawl` loads (docs/guide/client.md
 * has the measurement). The classes are the ones `pawl` exports, so `instanceof` holds across the two.
 *
 * @example
 * ```ts
 * import { createClient } from "pawl/client";
 * const client = createClient({ connectionString: process.env.DATABASE_URL });
 * const job = await client.enqueue("report.build", { month: "2026-11" });
 * const done = await client.waitFor(job.id, { timeoutMs: 30_000 });
 * ```
 */
export { createClient } from "../api/create-client.js";
export type { PawlClient } from "../api/client.js";
export type { PawlConfig } from "../input/config.js";
export type { WaitForOptions } from "../api/wait-for.js";
export type { DeadLetterQueue } from "../api/dead-letter-queue.js";
export type { EnqueueOptions, PayloadValidator } from "../input/enqueue-input.js";
export type {
  EnqueueArgs,
  EnqueueItem,
  IsTyped,
  PawlTasks,
  PayloadField,
  TaskName,
  TaskPayload,
  TaskResult,
  TaskSpec,
  TypedJob,
  UntypedTasks,
} from "../input/task-map.js";
export type { EnqueuedJob } from "../store/jobs/enqueue-jobs.js";
export type { CancelResult } from "../store/jobs/cancel-job.js";
export type { Job, JobErrorRecord, JobStatus } from "../core/job.js";
export type { SqlClient } from "../db/sql.js";
export type { Priority, PriorityName } from "../input/priority.js";
export {
  DatabaseUnavailableError,
  JobNotFoundError,
  MissingDependencyError,
  PawlError,
  SchemaVersionError,
  ValidationError,
  WaitTimeoutError,
} from "../core/errors.js";
export type { PawlErrorCode } from "../core/errors.js";
