/**
 * `--tracing on` (PAWL_BENCH_TRACING=on): the OpenTelemetry SDK as an application would run it, with an
 * exporter that drops every span: a TracerProvider with a BatchSpanProcessor, the AsyncLocalStorage
 * context manager and the W3C propagator, registered globally. It measures what tracing costs pawl and the
 * SDK's span handling, not an exporter's network. Pre-inserted bench jobs then carry a stored trace context
 * (as if a traced producer had enqueued them), so each attempt extracts it, as in production.
 */
import { context, propagation, SpanKind, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { ExportResultCode, W3CTraceContextPropagator } from "@opentelemetry/core";
import {
  AlwaysOffSampler,
  BatchSpanProcessor,
  TracerProvider,
  type SpanExporter,
} from "@opentelemetry/sdk-trace";

/**
 * Whether this bench run registers the SDK: `on` records every span; `unsampled` registers the same SDK
 * with an AlwaysOffSampler, so each attempt still extracts, starts a (non-recording) span and runs in its
 * context: pawl's own plumbing, without the SDK's recording and export. `sdk-span` is the floor to set
 * `on` against: the same SDK and rows, pawl's tracing off (`tracing: false`), and the handler itself
 * starting and ending one bare recorded span, so the difference from `off` is what one recorded span
 * costs in this process whoever starts it, and `on` minus `sdk-span` is pawl's own part.
 */
const mode = process.env.PAWL_BENCH_TRACING;
export const benchTracing = mode === "on" || mode === "unsampled" || mode === "sdk-span";

/** The bench modes `--tracing` accepts. */
export const benchTracingModes = ["off", "on", "unsampled", "sdk-span"] as const;

/** False in `sdk-span` mode: pawl's own tracing is off there (createPawl's `tracing: false`). */
export const benchPawlTracing = mode !== "sdk-span";

/**
 * The handler wrapper of `sdk-span` mode: one bare CONSUMER span around the handler's call (as minimal an
 * instrumentation as the SDK allows); other modes get the handler back as it is.
 */
export function benchHandler<A extends unknown[], R>(handler: (...args: A) => R): (...args: A) => R {
  if (mode !== "sdk-span") return handler;
  const tracer = trace.getTracer("bench");
  return (...args: A): R => {
    const span = tracer.startSpan("process noop", { kind: SpanKind.CONSUMER });
    try {
      return handler(...args);
    } finally {
      span.end();
    }
  };
}

let provider: TracerProvider | null = null;
let exported = 0;

/** Registers the SDK once (no-op without `--tracing on`). */
export function registerBenchTracing(): void {
  if (!benchTracing || provider) return;
  const dropAll: SpanExporter = {
    export: (spans, done) => {
      exported += spans.length;
      done({ code: ExportResultCode.SUCCESS });
    },
    shutdown: async () => {},
  };
  provider = new TracerProvider({
    spanProcessors: [new BatchSpanProcessor({ exporter: dropAll })],
    ...(mode === "unsampled" ? { sampler: new AlwaysOffSampler() } : {}),
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
}

/** Flushes the SDK; returns how many spans it exported so far (the no-op exporter counts them). */
export async function flushBenchTracing(): Promise<number> {
  await provider?.forceFlush();
  return exported;
}

/** The SQL expression of a pre-inserted job's trace_context: a producer's traceparent, or NULL. */
export const benchTraceContextSql = benchTracing
  ? `jsonb_build_object('traceparent', '00-' || md5(g::text) || '-' || left(md5((g + 1)::text), 16) || '-01')`
  : "NULL";
