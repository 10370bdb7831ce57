/**
 * The real OpenTelemetry SDK for tests: a TracerProvider whose spans go to an InMemorySpanExporter
 * (through a SimpleSpanProcessor), the AsyncLocalStorage context manager and the W3C propagator,
 * registered globally for the test file (vitest runs each file in its own worker). `waitForSpans` waits
 * on finished spans (each end is announced), not on time.
 */
import { context, propagation, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  TracerProvider,
  type ReadableSpan,
  type Span,
  type SpanProcessor,
} from "@opentelemetry/sdk-trace";
import type { Context } from "@opentelemetry/api";

/** A registered SDK and what it collected. */
export interface TestTracing {
  provider: TracerProvider;
  exporter: InMemorySpanExporter;
  /** Finished spans so far. */
  spans(): ReadableSpan[];
  /** Resolves with the finished spans once `ready(spans)` holds; rejects after `timeoutMs`. */
  waitForSpans(ready: (spans: ReadableSpan[]) => boolean, timeoutMs?: number): Promise<ReadableSpan[]>;
  /** Forgets the spans collected so far. */
  reset(): void;
  /** Unregisters the global provider, context manager and propagator. */
  shutdown(): Promise<void>;
}

/** Starts an SDK; `register: false` leaves the global provider alone (for a `tracerProvider` option). */
export function startTestTracing(options: { register?: boolean } = {}): TestTracing {
  const exporter = new InMemorySpanExporter();
  const simple = new SimpleSpanProcessor({ exporter });
  const waiters = new Set<() => void>();
  const announcing: SpanProcessor = {
    onStart: (span: Span, parent: Context) => simple.onStart(span, parent),
    onEnd: (span: ReadableSpan) => {
      simple.onEnd(span);
      // The simple processor exports after the span's resource is ready: announce after that.
      queueMicrotask(() => setImmediate(() => waiters.forEach((w) => w())));
    },
    forceFlush: () => simple.forceFlush(),
    shutdown: () => simple.shutdown(),
  };
  const provider = new TracerProvider({ spanProcessors: [announcing] });
  if (options.register !== false) {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    trace.setGlobalTracerProvider(provider);
  }
  const spans = () => exporter.getFinishedSpans();
  return {
    provider,
    exporter,
    spans,
    waitForSpans: (ready, timeoutMs = 10_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          if (!ready(spans())) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(spans());
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(
            new Error(
              `spans not ready after ${timeoutMs} ms: ${spans()
                .map((s) => s.name)
                .join(", ")}`,
            ),
          );
        }, timeoutMs);
        waiters.add(check);
        check();
      }),
    reset: () => exporter.reset(),
    shutdown: async () => {
      await provider.shutdown();
      if (options.register !== false) {
        trace.disable();
        context.disable();
        propagation.disable();
      }
    },
  };
}
