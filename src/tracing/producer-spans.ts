/**
 * Producer spans: one `send <type>` span (kind PRODUCER) per job an insert enqueues (enqueue, each job of
 * enqueueMany, a recurring fire), a child of the caller's active context. Its trace context goes into the
 * job's row (`trace_context`, migration 0010) in the same insert; the job id is known once the insert
 * returns, and the span ends then. An insert that fails ends its spans with the error.
 */
import type { Attributes, Span } from "@opentelemetry/api";
import type { NewJob } from "../input/enqueue-input.js";
import * as a from "./attributes.js";
import { injectCarrier } from "./carrier.js";
import type { PawlTracing } from "./pawl-tracing.js";
import { endSpan, recordError } from "./span-error.js";

/** What an insert returns per job: its id, and whether it inserted (false: a unique key's live job). */
export interface InsertedRow {
  id: string;
  inserted?: boolean;
}

/**
 * Runs `insert(jobs)` with a producer span per job when tracing is on now; without tracing it is
 * `insert(jobs)` and nothing else. `attributes` are added to every span (the recurring schedule's name).
 */
export function traceInsert<R extends InsertedRow>(
  tracing: PawlTracing | null,
  jobs: readonly NewJob[],
  insert: (jobs: readonly NewJob[]) => Promise<R[]>,
  attributes?: Attributes,
): Promise<R[]> {
  if (tracing === null) return insert(jobs);
  if (tracing.api === undefined) {
    return tracing.ready().then(() => traceInsert(tracing, jobs, insert, attributes));
  }
  return tracing.tracer() === null ? insert(jobs) : tracedInsert(tracing, jobs, insert, attributes);
}

async function tracedInsert<R extends InsertedRow>(
  tracing: PawlTracing,
  jobs: readonly NewJob[],
  insert: (jobs: readonly NewJob[]) => Promise<R[]>,
  attributes: Attributes | undefined,
): Promise<R[]> {
  const spans = startSpans(tracing, jobs, attributes);
  let rows: R[];
  try {
    rows = await insert(jobs);
  } catch (error) {
    for (const span of spans) {
      recordError(span, error);
      endSpan(span);
    }
    throw error;
  }
  // The rows are written: a span that throws from here on must not turn the enqueue into a failure.
  for (let i = 0; i < spans.length; i++) {
    const span = spans[i] as Span;
    const row = rows[i];
    try {
      if (row) {
        span.setAttribute(a.MESSAGING_MESSAGE_ID, row.id);
        if (row.inserted === false) span.setAttribute(a.JOB_INSERTED, false);
      }
    } catch {
      // the span goes without its id
    }
    endSpan(span);
  }
  return rows;
}

/** Starts the jobs' spans and stores each one's context on its job; a failure of either traces nothing. */
function startSpans(tracing: PawlTracing, jobs: readonly NewJob[], extra: Attributes | undefined): Span[] {
  const api = tracing.api;
  const tracer = tracing.tracer();
  const spans: Span[] = [];
  if (!api || !tracer) return spans;
  try {
    const active = api.context.active();
    for (const job of jobs) {
      const attributes: Attributes = {
        [a.MESSAGING_SYSTEM]: "pawl",
        [a.MESSAGING_OPERATION_TYPE]: "send",
        [a.MESSAGING_OPERATION_NAME]: "send",
        [a.MESSAGING_DESTINATION_NAME]: job.queue,
        [a.JOB_TYPE]: job.type,
        [a.JOB_PRIORITY]: job.priority,
        ...extra,
      };
      if (jobs.length > 1) attributes[a.MESSAGING_BATCH_MESSAGE_COUNT] = jobs.length;
      const span = tracer.startSpan(`send ${job.type}`, { kind: api.SpanKind.PRODUCER, attributes }, active);
      spans.push(span);
      job.traceContext = injectCarrier(api, api.trace.setSpan(active, span), span);
    }
  } catch {
    // A tracer or propagator that throws must not cost the enqueue: what was started still ends.
  }
  return spans;
}
