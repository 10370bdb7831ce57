/**
 * Recording a thrown value on a span (the exception event and status ERROR, its message) and ending a
 * span: both run on a span an application's SDK made, so neither may throw into pawl.
 */
import type { Span } from "@opentelemetry/api";
import { describeThrown, thrownAsError } from "../core/thrown-value.js";

/** SpanStatusCode.ERROR (a constant of the API; spelled here so this needs no loaded module). */
const statusError = 2;

/** Records `thrown` on `span` (any value: a non-Error is described as pawl describes it in `errors`). */
export function recordError(span: Span, thrown: unknown): void {
  try {
    const error = thrownAsError(thrown, describeThrown(thrown));
    span.recordException(error);
    span.setStatus({ code: statusError, message: error.message });
  } catch {
    // a span that throws: nothing more to record
  }
}

/** Ends `span`; a span that throws is left as it is. */
export function endSpan(span: Span): void {
  try {
    span.end();
  } catch {
    // a span that throws: it ends as its SDK decides, the operation's result stands
  }
}
