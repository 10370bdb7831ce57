/**
 * `pawl/testing`: helpers for an application's tests.
 *
 * - {@link fake} records enqueues instead of inserting them (no database), with `assertEnqueued`.
 * - {@link inline} runs each job as it is enqueued, with its registered handler, in the caller's flow; a job
 *   enqueued in a transaction runs once that transaction has committed, never after a rollback.
 * - {@link drain} runs the jobs that are due, once, and counts the outcomes.
 * - {@link embeddedPawl} gives a migrated pawl on a fresh in-memory embedded PostgreSQL (no server needed),
 *   to run jobs for real: the same runtime and SQL as production.
 *
 * inline() and drain() run handlers as a node does (a real JobContext, the watchdog's deadline, payload
 * validation) and record outcomes with the runtime's own rules, so retries, DEAD jobs and snoozes end
 * exactly as in production. fake() and inline() replace `enqueue`/`enqueueMany` on the one instance they
 * are given, so tests with separate instances can run in parallel.
 *
 * @example
 * ```ts
 * import { createPawl } from "pawl";
 * import { drain, fake, inline } from "pawl/testing";
 *
 * const recorder = fake(pawl);
 * await signUp(pawl, user);
 * recorder.assertEnqueued("email.welcome", { userId: user.id });
 * recorder.restore();
 * ```
 */
export { fake } from "./fake.js";
export type { EnqueueRecorder, RecordedEnqueue, RecordedEnqueueOf } from "./fake.js";
export { inline } from "./inline.js";
export type { InlineMode, InlineOptions } from "./inline.js";
export { drain } from "./drain.js";
export type { DrainOptions, DrainResult } from "./drain.js";
export type { AttemptResult, AttemptStatus, TypedAttemptResult } from "./run-attempt.js";
export type { PayloadMatcher, PayloadPattern } from "./match.js";
export { embeddedDatabase, embeddedPawl } from "./embedded.js";
export type { EmbeddedPawl } from "./embedded.js";
