/**
 * A pawl node as its own process with the real OpenTelemetry SDK, for test/processes/tracing-two-process
 * (run with node_modules/.bin/tsx). Every span it finishes is printed on stdout as one JSON line
 * (`{"event":"span",...}`), the exporter being this process's stdout. Its handler for `traced.remote`
 * starts a span of its own ("handler work"). Prints `ready` once started; stops on SIGTERM.
 *
 * Environment: DATABASE_URL, PAWL_SCHEMA, PAWL_NODE_ID (read by createPawl).
 */
import { context, propagation, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { ExportResultCode, W3CTraceContextPropagator, type ExportResult } from "@opentelemetry/core";
import {
  SimpleSpanProcessor,
  TracerProvider,
  type ReadableSpan,
  type SpanExporter,
} from "@opentelemetry/sdk-trace";
import { consoleLogger, createPawl } from "../../src/index.js";

const say = (line: Record<string, unknown>) => process.stdout.write(JSON.stringify(line) + "\n");

const stdoutExporter: SpanExporter = {
  export(spans: ReadableSpan[], done: (result: ExportResult) => void) {
    for (const s of spans) {
      say({
        event: "span",
        name: s.name,
        kind: s.kind,
        traceId: s.spanContext().traceId,
        spanId: s.spanContext().spanId,
        parentSpanId: s.parentSpanContext?.spanId ?? null,
        links: s.links.map((l) => l.context.spanId),
        attributes: s.attributes,
        status: s.status,
      });
    }
    done({ code: ExportResultCode.SUCCESS });
  },
  shutdown: async () => {},
};

context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
propagation.setGlobalPropagator(new W3CTraceContextPropagator());
const provider = new TracerProvider({
  spanProcessors: [new SimpleSpanProcessor({ exporter: stdoutExporter })],
});
trace.setGlobalTracerProvider(provider);

const pawl = createPawl({
  logger: consoleLogger("warn"),
  pollIntervalMs: 50,
  completionFlushMs: 1,
  polling: { maxDelayMs: 250, deepIdleDelayMs: 250 },
});
pawl.register("traced.remote", async (payload: { fail?: boolean }, ctx) => {
  await trace.getTracer("handler").startActiveSpan("handler work", async (span) => {
    await new Promise((resolve) => setTimeout(resolve, 2));
    span.end();
  });
  if (payload.fail && ctx.attempt === 1) throw new Error("first attempt fails");
  return { ok: true };
});
await pawl.start();
say({ event: "ready", pid: process.pid });

process.once("SIGTERM", () => {
  void (async () => {
    await pawl.stop({ graceMs: 2000 });
    await pawl.close();
    await provider.shutdown();
    say({ event: "stopped" });
    process.exit(0);
  })();
});
