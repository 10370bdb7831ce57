/**
 * The trace context stored with a job: the propagator's carrier (W3C `traceparent` and `tracestate`, and
 * whatever else the registered propagator writes, baggage for one). Injected and extracted through the
 * API's global propagator; when none is registered (the API alone injects nothing), pawl writes and reads
 * the W3C `traceparent` itself, so a job's attempt continues its producer's trace whatever the setup.
 */
import type { Context, Span, SpanContext } from "@opentelemetry/api";
import { textProblem } from "../core/input-text.js";
import type { OtelApi } from "./otel-api.js";

/** The largest carrier stored (JSON text); a larger one (a big baggage) keeps only traceparent and tracestate. */
export const maxCarrierBytes = 4096;

const traceparentPattern = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The JSON text of the carrier of `span` (in `ctx`), or null when the span has no valid context. */
export function injectCarrier(api: OtelApi, ctx: Context, span: Span): string | null {
  const carrier: Record<string, string> = {};
  try {
    api.propagation.inject(ctx, carrier);
  } catch {
    // a propagator that throws: the fallback below
  }
  // What a propagator wrote goes into a jsonb column: an entry PostgreSQL cannot store (a NUL, a lone
  // surrogate, a value that is not a string) would fail the enqueue itself, so it is left out instead.
  for (const key of Object.keys(carrier)) {
    const value: unknown = carrier[key];
    if (typeof value !== "string" || textProblem(key) !== null || textProblem(value) !== null)
      delete carrier[key];
  }
  const sc = span.spanContext();
  if (typeof carrier.traceparent !== "string") {
    if (!api.isSpanContextValid(sc)) return null;
    carrier.traceparent = formatTraceparent(sc);
    const state = sc.traceState?.serialize();
    if (state) carrier.tracestate = state;
  }
  const json = JSON.stringify(carrier);
  if (json.length <= maxCarrierBytes) return json;
  const small: Record<string, string> = { traceparent: carrier.traceparent };
  if (typeof carrier.tracestate === "string") small.tracestate = carrier.tracestate;
  return JSON.stringify(small);
}

/**
 * The context a stored carrier continues (ROOT_CONTEXT with the producer's span context), or null when
 * there is none: a job enqueued without tracing, by the SQL enqueue() function, or a row whose value is
 * not a carrier (anything in the column costs only the link, never the attempt).
 */
export function extractCarrier(api: OtelApi, carrier: unknown): Context | null {
  if (typeof carrier !== "object" || carrier === null || Array.isArray(carrier)) return null;
  const c = carrier as Record<string, unknown>;
  const traceparent = c.traceparent;
  if (typeof traceparent !== "string") return null;
  let ctx: Context = api.ROOT_CONTEXT;
  try {
    // The propagator's default getter reads the carrier's keys as they are; a key that is not a string
    // (a hand-written row) makes a propagator throw or ignore it, never costs the attempt.
    ctx = api.propagation.extract(api.ROOT_CONTEXT, c);
  } catch {
    // a propagator that throws: the fallback below
  }
  if (api.trace.getSpanContext(ctx) !== undefined) return ctx;
  const tracestate = typeof c.tracestate === "string" ? c.tracestate : undefined;
  const sc = parseTraceparent(api, traceparent, tracestate);
  return sc ? api.trace.setSpanContext(api.ROOT_CONTEXT, sc) : null;
}

/** A span context as a W3C traceparent (version 00). */
export function formatTraceparent(sc: SpanContext): string {
  return `00-${sc.traceId}-${sc.spanId}-0${(sc.traceFlags & 1).toString(16)}`;
}

/** A W3C traceparent (version 00) as a remote span context, or null when it is not one. */
export function parseTraceparent(
  api: OtelApi,
  traceparent: string | undefined,
  tracestate: string | undefined,
): SpanContext | null {
  const m = traceparent === undefined ? null : traceparentPattern.exec(traceparent);
  if (!m) return null;
  const sc: SpanContext = {
    traceId: m[1] as string,
    spanId: m[2] as string,
    traceFlags: parseInt(m[3] as string, 16) & 1,
    isRemote: true,
  };
  if (tracestate) sc.traceState = api.createTraceState(tracestate);
  return api.isSpanContextValid(sc) ? sc : null;
}
