/**
 * Tracing's edges without a database: the option's validation, the API missing (tracing off, the insert
 * called as it is), no tracer provider registered (no span, nothing stored), and the W3C carrier that
 * pawl writes and reads itself when no propagator is registered.
 */
import * as api from "@opentelemetry/api";
import { describe, expect, it } from "vitest";
import { ValidationError } from "../../../src/core/errors.js";
import type { NewJob } from "../../../src/input/enqueue-input.js";
import { extractCarrier, injectCarrier, parseTraceparent } from "../../../src/tracing/carrier.js";
import { loadOtelApi } from "../../../src/tracing/otel-api.js";
import { PawlTracing } from "../../../src/tracing/pawl-tracing.js";
import { traceInsert } from "../../../src/tracing/producer-spans.js";
import { resolveTracing } from "../../../src/input/tracing-options.js";
import { startTestTracing } from "../../helpers/tracing.js";
import { newJob } from "../../helpers/new-job.js";

const job = (): NewJob => newJob();

describe("resolveTracing", () => {
  it.each([
    [undefined, { tracerProvider: null, attemptParent: "child", internals: false }],
    [true, { tracerProvider: null, attemptParent: "child", internals: false }],
    [false, null],
    [
      { internals: true, attemptParent: "link" },
      { tracerProvider: null, attemptParent: "link", internals: true },
    ],
  ])("%j", (value, expected) => {
    expect(resolveTracing(value)).toEqual(expected);
  });

  it.each([
    ["yes"],
    [{ internals: 1 }],
    [{ attemptParent: "parent" }],
    [{ tracerProvider: {} }],
    [{ sampler: 1 }],
  ])("refuses %j", (value) => {
    expect(() => resolveTracing(value)).toThrow(ValidationError);
  });
});

describe("without @opentelemetry/api", () => {
  it("loads as null when the package cannot be found", async () => {
    const missing = Object.assign(new Error("Cannot find package '@opentelemetry/api'"), {
      code: "ERR_MODULE_NOT_FOUND",
    });
    expect(await loadOtelApi(() => Promise.reject(missing))).toBeNull();
  });

  it("inserts untraced: the same jobs, nothing added to them", async () => {
    const tracing = new PawlTracing(resolveTracing(true)!, () => Promise.resolve(null));
    const jobs = [job()];
    let seen: readonly NewJob[] | null = null;
    const rows = await traceInsert(tracing, jobs, async (js) => {
      seen = js;
      return [{ id: "1" }];
    });
    expect(rows).toEqual([{ id: "1" }]);
    expect(seen).toBe(jobs);
    expect(jobs[0]).not.toHaveProperty("traceContext");
    expect(tracing.tracer()).toBeNull();
  });
});

describe("with the API but no tracer provider registered", () => {
  it("is off: no tracer, and enqueue stores no context", async () => {
    const tracing = new PawlTracing(resolveTracing(true)!);
    await tracing.ready();
    expect(tracing.api).not.toBeNull();
    expect(tracing.tracer()).toBeNull();
    const jobs = [job()];
    await traceInsert(tracing, jobs, async () => [{ id: "1" }]);
    expect(jobs[0]).not.toHaveProperty("traceContext");
  });
});

describe("the carrier without a registered propagator", () => {
  it("writes a W3C traceparent itself and reads it back", async () => {
    const sdk = startTestTracing({ register: false });
    const tracing = new PawlTracing(resolveTracing({ tracerProvider: sdk.provider })!);
    const otel = (await tracing.ready())!;
    const span = tracing.tracer()!.startSpan("send t");
    const json = injectCarrier(otel, otel.trace.setSpan(otel.ROOT_CONTEXT, span), span);
    const carrier = JSON.parse(json!) as { traceparent: string };
    expect(carrier.traceparent).toBe(`00-${span.spanContext().traceId}-${span.spanContext().spanId}-01`);
    const ctx = extractCarrier(otel, carrier);
    expect(ctx && otel.trace.getSpanContext(ctx)).toMatchObject({
      traceId: span.spanContext().traceId,
      spanId: span.spanContext().spanId,
      isRemote: true,
    });
    span.end();
    await sdk.shutdown();
  });

  it("leaves out what a propagator wrote that PostgreSQL cannot store, and keeps the rest", async () => {
    const sdk = startTestTracing({ register: false });
    const tracing = new PawlTracing(resolveTracing({ tracerProvider: sdk.provider })!);
    const otel = (await tracing.ready())!;
    const span = tracing.tracer()!.startSpan("send t");
    const hostile: api.TextMapPropagator = {
      inject: (_ctx, carrier: Record<string, unknown>) => {
        carrier["x-ok"] = "fine";
        carrier["x-nul"] = "a\u0000b";
        carrier["x-half"] = "\uD83D";
        carrier["x-\u0000key"] = "v";
        carrier["x-number"] = 7;
      },
      extract: (ctx) => ctx,
      fields: () => [],
    };
    otel.propagation.setGlobalPropagator(hostile);
    try {
      const json = injectCarrier(otel, otel.trace.setSpan(otel.ROOT_CONTEXT, span), span)!;
      expect(Object.keys(JSON.parse(json) as object).sort()).toEqual(["traceparent", "x-ok"]);
      expect(json).not.toMatch(/\\u0000|\\ud83d/i);
    } finally {
      otel.propagation.disable();
      span.end();
      await sdk.shutdown();
    }
  });

  it.each([[null], ["text"], [[1]], [{}], [{ traceparent: "00-zz-11-01" }], [{ traceparent: 7 }]])(
    "reads %j as no context",
    (value) => {
      expect(extractCarrier(api as never, value)).toBeNull();
    },
  );

  it("refuses an all-zero trace id", () => {
    expect(parseTraceparent(api as never, `00-${"0".repeat(32)}-${"1".repeat(16)}-01`, undefined)).toBeNull();
  });
});
