/**
 * The runtime's one seam for tracing (src/tracing implements it; docs/tracing.md). A node without tracing
 * (`tracing: false`, or `@opentelemetry/api` not installed) has none, and an attempt pays one null check;
 * with one but no tracer provider registered, one `enabled()` call. Only a traced attempt allocates (its
 * span, kept opaque on `run.trace`).
 */
import type { TaskOutcome } from "../../machines/job-task-machine.js";
import type { AttemptEnd } from "./finish-attempt.js";
import type { JobContext } from "./job-context.js";
import type { JobRun } from "./job-run.js";

/** How a node traces its attempts. */
export interface AttemptTracer {
  /** Whether attempts are traced now (a tracer provider is registered or was given). */
  enabled(): boolean;
  /**
   * Starts the attempt's span (on `run.trace`) and calls the handler with that span's context active, so
   * the handler's own spans are its children; `settle` as in invokeHandler. Never throws.
   */
  invoke(run: JobRun, ctx: JobContext, settle: (outcome: TaskOutcome) => void): void;
  /** The attempt's outcome was decided (`end`): ends its span. Called for every attempt; never throws. */
  finished(run: JobRun, outcome: TaskOutcome, end: AttemptEnd): void;
}
