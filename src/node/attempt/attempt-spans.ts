/**
 * Consumer spans: each attempt runs in a `process <type>` span (kind CONSUMER). With `attemptParent:
 * "child"` (the default) it is a child of the producer span stored with the job, so the enqueue and every
 * attempt are one trace, and it also links to it (the messaging conventions' way, which batch consumers
 * rely on); with `"link"` it starts a trace of its own with that link. A job without a stored context
 * (enqueued untraced or through SQL) gets a root span. The span is active while the handler runs (the
 * context is set with `context.with` around the call, so it follows the handler's async calls as
 * `JobContext.current()` does), so the handler's own spans nest under it. It ends when the attempt's
 * outcome is decided, with `pawl.job.outcome`, the error recorded on failures, and an event for a snooze.
 */
import type { Context, Link, Span } from "@opentelemetry/api";
import type { TaskOutcome } from "../../machines/job-task-machine.js";
import type { AttemptTracer } from "./attempt-tracer.js";
import type { AttemptEnd } from "./finish-attempt.js";
import { invokeHandler } from "./invoke-handler.js";
import type { JobContext } from "./job-context.js";
import type { JobRun } from "./job-run.js";
import * as a from "../../tracing/attributes.js";
import { extractCarrier } from "../../tracing/carrier.js";
import type { PawlTracing } from "../../tracing/pawl-tracing.js";
import { recordError } from "../../tracing/span-error.js";

/** The node's {@link AttemptTracer} over `tracing` (whose API is loaded). */
export function attemptTracer(tracing: PawlTracing, nodeId: string): AttemptTracer {
  /** Starts the attempt's span (on `run.trace`); returns the context to run the handler in, or null. */
  const start = (run: JobRun): Context | null => {
    const api = tracing.api;
    const tracer = tracing.tracer();
    if (!api || !tracer) return null;
    const job = run.claimed;
    const producer = extractCarrier(api, job.traceContext);
    const producerSpan = producer === null ? undefined : api.trace.getSpanContext(producer);
    const links: Link[] = producerSpan ? [{ context: producerSpan }] : [];
    const parent: Context =
      producer !== null && tracing.options.attemptParent === "child" ? producer : api.ROOT_CONTEXT;
    // The attributes a sampler may decide on go in at the start; the rest only on a span that records
    // (an SDK checks every attribute given at the start, sampled or not).
    const span = tracer.startSpan(
      `process ${job.type}`,
      {
        kind: api.SpanKind.CONSUMER,
        attributes: {
          [a.MESSAGING_SYSTEM]: "pawl",
          [a.MESSAGING_OPERATION_TYPE]: "process",
          [a.MESSAGING_DESTINATION_NAME]: job.queue,
          [a.JOB_TYPE]: job.type,
        },
        links,
      },
      parent,
    );
    if (span.isRecording()) {
      span.setAttributes({
        [a.MESSAGING_OPERATION_NAME]: "process",
        [a.MESSAGING_MESSAGE_ID]: job.id,
        [a.MESSAGING_CLIENT_ID]: nodeId,
        [a.JOB_ATTEMPT]: job.attempt,
      });
    }
    run.trace = span;
    return api.trace.setSpan(parent, span);
  };

  return {
    enabled: () => tracing.tracer() !== null,

    invoke(run: JobRun, ctx: JobContext, settle: (outcome: TaskOutcome) => void): void {
      let active: Context | null = null;
      try {
        active = start(run);
      } catch {
        active = null; // a tracer that throws: the handler runs untraced
      }
      const api = tracing.api;
      if (active === null || !api) return invokeHandler(run.type.handler, run.payload, ctx, settle);
      // context.with passes the arguments on; invokeHandler itself never throws.
      api.context.with(active, invokeHandler, undefined, run.type.handler, run.payload, ctx, settle);
    },

    finished(run: JobRun, outcome: TaskOutcome, end: AttemptEnd): void {
      try {
        // A payload refused by the type's validator never ran a handler, yet it kills the job: its span
        // says so. Every other outcome without a span (a breaker or permit reschedule, a cancel before
        // the start) was not an attempt.
        if (run.trace === null && outcome.kind === "invalid-payload" && tracing.tracer() !== null) start(run);
        const span = run.trace as Span | null;
        if (span === null) return;
        run.trace = null;
        span.setAttribute(a.JOB_OUTCOME, end);
        switch (outcome.kind) {
          case "failure":
            recordError(span, outcome.error);
            break;
          case "timeout":
            span.setAttribute(a.JOB_TIMED_OUT, true);
            recordError(span, outcome.error);
            break;
          case "invalid-payload":
            recordError(span, run.invalid ?? outcome.error);
            break;
          case "snooze":
            span.addEvent("pawl.job.snoozed", { [a.JOB_DELAY_MS]: outcome.delayMs });
            break;
          case "wait":
            if (end === "dead") recordError(span, new Error("ctx.waitForSignal() needs a running node"));
            else span.addEvent("pawl.job.waiting");
            break;
          case "aborted":
            span.addEvent("pawl.job.aborted");
            break;
          default:
            break;
        }
        span.end();
      } catch {
        // a span that throws must not cost the outcome (already written)
      }
    },
  };
}
