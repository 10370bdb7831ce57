/**
 * OpenTelemetry tracing (docs/tracing.md) with the real SDK and real PostgreSQL: the producer span at
 * enqueue and the consumer span of each attempt form one trace; retries, a DEAD job's error, a snooze and
 * a refused payload are on the spans; the handler's own spans nest under its attempt's; `tracing: false`
 * records nothing. The cross-process trace is test/processes/tracing-two-process.test.ts.
 */
import type pg from "pg";
import { context, SpanKind, SpanStatusCode, trace, type TracerProvider } from "@opentelemetry/api";
import type { ReadableSpan } from "@opentelemetry/sdk-trace";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { JobContext, PawlClient, Snooze, type Pawl, type PawlConfig } from "../../../src/index.js";
import { databaseUrl } from "../../helpers/db.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";
import { startTestTracing, type TestTracing } from "../../helpers/tracing.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let otel: TestTracing;
const nodes: Pawl[] = [];

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("trace"));
  otel = startTestTracing();
}, 60_000);
afterAll(async () => {
  await otel.shutdown();
  await cleanup();
});
beforeEach(() => otel.reset());
afterEach(async () => {
  for (const n of nodes.splice(0)) await n.close();
  await pool.query(`DELETE FROM "${schema}".scheduler_job_queue`);
});

function node(config: PawlConfig = {}): Pawl {
  const n = testPawl(schema, { keepSucceeded: true, ...config });
  nodes.push(n);
  return n;
}

const byName = (spans: ReadableSpan[], name: string) => spans.filter((s) => s.name === name);
const idOf = (s: ReadableSpan) => s.spanContext().spanId;
const traceOf = (s: ReadableSpan) => s.spanContext().traceId;
const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;
const tracer = () => trace.getTracer("test");

/** Enqueues inside a `request` span, as a web request would; returns the job id and the request span. */
async function enqueueInRequest(pawl: PawlClient, type: string, payload: unknown = {}, options = {}) {
  const request = tracer().startSpan("request");
  const job = await context.with(trace.setSpan(context.active(), request), () =>
    pawl.enqueue(type, payload, options),
  );
  request.end();
  return { id: job.id, request };
}

describe("tracing", () => {
  it("makes one trace of the enqueue, the attempt and the handler's own span", async () => {
    const pawl = node();
    let seen: { jobId: string; activeSpanId: string | undefined } | null = null;
    async function deepHelper() {
      // Code below the handler sees both contexts: pawl's and the attempt's span.
      await new Promise((r) => setTimeout(r, 5));
      seen = { jobId: JobContext.current().jobId, activeSpanId: trace.getActiveSpan()?.spanContext().spanId };
    }
    pawl.register("traced.ok", async () => {
      await tracer().startActiveSpan("handler work", async (span) => {
        await deepHelper();
        span.end();
      });
      return 42;
    });
    const { id, request } = await enqueueInRequest(pawl, "traced.ok", { a: 1 }, { queue: "mail" });
    const stored = await pool.query(
      `SELECT trace_context FROM "${schema}".scheduler_job_queue WHERE id = $1`,
      [id],
    );
    expect(stored.rows[0].trace_context.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    await pawl.start();
    const spans = await otel.waitForSpans((s) => byName(s, "process traced.ok").length === 1);

    const [send] = byName(spans, "send traced.ok");
    const [attempt] = byName(spans, "process traced.ok");
    const [work] = byName(spans, "handler work");
    expect(send && attempt && work).toBeTruthy();
    if (!send || !attempt || !work) return;
    // One trace: request -> send (PRODUCER) -> process (CONSUMER) -> the handler's span.
    for (const s of [send, attempt, work]) expect(traceOf(s)).toBe(request.spanContext().traceId);
    expect(parentOf(send)).toBe(request.spanContext().spanId);
    expect(parentOf(attempt)).toBe(idOf(send));
    expect(parentOf(work)).toBe(idOf(attempt));
    expect(attempt.links.map((l) => l.context.spanId)).toEqual([idOf(send)]);
    expect(send.kind).toBe(SpanKind.PRODUCER);
    expect(attempt.kind).toBe(SpanKind.CONSUMER);
    expect(send.attributes).toMatchObject({
      "messaging.system": "pawl",
      "messaging.operation.type": "send",
      "messaging.destination.name": "mail",
      "messaging.message.id": id,
      "pawl.job.type": "traced.ok",
    });
    expect(attempt.attributes).toMatchObject({
      "messaging.system": "pawl",
      "messaging.operation.type": "process",
      "messaging.destination.name": "mail",
      "messaging.message.id": id,
      "pawl.job.type": "traced.ok",
      "pawl.job.attempt": 1,
      "pawl.job.outcome": "succeeded",
    });
    expect(attempt.status.code).toBe(SpanStatusCode.UNSET);
    expect(seen).toEqual({ jobId: id, activeSpanId: idOf(work) });
  });

  it("traces each retry as an attempt of the same trace, the failures recorded", async () => {
    const pawl = node();
    let calls = 0;
    pawl.register(
      "traced.flaky",
      async () => {
        calls++;
        if (calls < 3) throw new Error(`flake ${calls}`);
      },
      { maxAttempts: 3, retry: () => 0 },
    );
    const { request } = await enqueueInRequest(pawl, "traced.flaky");
    await pawl.start();
    const spans = await otel.waitForSpans((s) => byName(s, "process traced.flaky").length === 3);
    const [send] = byName(spans, "send traced.flaky");
    const attempts = byName(spans, "process traced.flaky").sort(
      (a, b) => (a.attributes["pawl.job.attempt"] as number) - (b.attributes["pawl.job.attempt"] as number),
    );
    expect(attempts.map((s) => s.attributes["pawl.job.attempt"])).toEqual([1, 2, 3]);
    expect(attempts.map((s) => s.attributes["pawl.job.outcome"])).toEqual([
      "retried",
      "retried",
      "succeeded",
    ]);
    expect(attempts.map((s) => s.status.code)).toEqual([
      SpanStatusCode.ERROR,
      SpanStatusCode.ERROR,
      SpanStatusCode.UNSET,
    ]);
    expect(attempts[0]?.status.message).toBe("flake 1");
    expect(attempts[1]?.events.find((e) => e.name === "exception")?.attributes).toMatchObject({
      "exception.message": "flake 2",
      "exception.type": "Error",
    });
    for (const a of attempts) {
      expect(traceOf(a)).toBe(request.spanContext().traceId);
      expect(parentOf(a)).toBe(send && idOf(send));
    }
  });

  it("records a DEAD job's error on its last attempt's span", async () => {
    const pawl = node();
    pawl.register(
      "traced.dead",
      async () => {
        throw new TypeError("no such invoice");
      },
      { maxAttempts: 1 },
    );
    const { id } = await enqueueInRequest(pawl, "traced.dead");
    const dead = new Promise((resolve) => pawl.on("job:dead", resolve));
    await pawl.start();
    await dead;
    const [attempt] = byName(
      await otel.waitForSpans((s) => byName(s, "process traced.dead").length === 1),
      "process traced.dead",
    );
    expect(attempt?.attributes["pawl.job.outcome"]).toBe("dead");
    expect(attempt?.status).toEqual({ code: SpanStatusCode.ERROR, message: "no such invoice" });
    const exception = attempt?.events.find((e) => e.name === "exception");
    expect(exception?.attributes).toMatchObject({
      "exception.type": "TypeError",
      "exception.message": "no such invoice",
    });
    expect(String(exception?.attributes?.["exception.stacktrace"])).toContain("TypeError: no such invoice");
    expect((await pawl.getJob(id))?.status).toBe("DEAD");
  });

  it("shows a snooze as the attempt's outcome and an event", async () => {
    const pawl = node();
    let calls = 0;
    pawl.register("traced.snooze", async () => {
      if (++calls === 1) throw new Snooze(0);
    });
    await enqueueInRequest(pawl, "traced.snooze");
    await pawl.start();
    const spans = await otel.waitForSpans((s) => byName(s, "process traced.snooze").length === 2);
    const outcomes = byName(spans, "process traced.snooze").map((s) => s.attributes["pawl.job.outcome"]);
    expect(outcomes.sort()).toEqual(["snoozed", "succeeded"]);
    const snoozed = byName(spans, "process traced.snooze").find(
      (s) => s.attributes["pawl.job.outcome"] === "snoozed",
    );
    expect(snoozed?.events.map((e) => e.name)).toEqual(["pawl.job.snoozed"]);
    expect(snoozed?.status.code).toBe(SpanStatusCode.UNSET);
  });

  it("gives each job of enqueueMany its own producer span, continued by its own attempt", async () => {
    const pawl = node();
    pawl.register("traced.many", async () => {});
    const rows = await pawl.enqueueMany([
      { type: "traced.many", payload: { n: 1 } },
      { type: "traced.many", payload: { n: 2 } },
      { type: "traced.many", payload: { n: 3 } },
    ]);
    await pawl.start();
    const spans = await otel.waitForSpans((s) => byName(s, "process traced.many").length === 3);
    const sends = byName(spans, "send traced.many");
    expect(sends.map((s) => s.attributes["messaging.message.id"]).sort()).toEqual(
      rows.map((r) => r.id).sort(),
    );
    expect(sends.every((s) => s.attributes["messaging.batch.message_count"] === 3)).toBe(true);
    for (const attempt of byName(spans, "process traced.many")) {
      const send = sends.find(
        (s) => s.attributes["messaging.message.id"] === attempt.attributes["messaging.message.id"],
      );
      expect(parentOf(attempt)).toBe(send && idOf(send));
    }
  });

  it("traces a chain's members and a batch's children from their producer spans", async () => {
    const pawl = node();
    pawl.register("traced.step", async () => {});
    pawl.register("traced.child", async () => {});
    const chain = await pawl.chain([
      { type: "traced.step", payload: { n: 1 }, name: "one" },
      { type: "traced.step", payload: { n: 2 }, name: "two" },
    ]);
    const batch = await pawl.batch({ type: "traced.child", items: [{ n: 1 }, { n: 2 }, { n: 3 }] });
    await pawl.start();
    const spans = await otel.waitForSpans(
      (s) => byName(s, "process traced.step").length === 2 && byName(s, "process traced.child").length === 3,
    );
    const stepSends = byName(spans, "send traced.step");
    expect(stepSends.map((s) => s.attributes["messaging.message.id"]).sort()).toEqual(
      [...chain.jobIds].sort(),
    );
    for (const attempt of byName(spans, "process traced.step")) {
      const send = stepSends.find(
        (s) => s.attributes["messaging.message.id"] === attempt.attributes["messaging.message.id"],
      );
      expect(parentOf(attempt)).toBe(send && idOf(send));
      expect(send?.attributes["pawl.flow.id"]).toBe(chain.flowId);
    }
    const [batchSend, ...more] = byName(spans, "send traced.child");
    expect(more).toEqual([]);
    expect(batchSend?.attributes).toMatchObject({
      "messaging.batch.message_count": 3,
      "pawl.flow.id": batch.flowId,
    });
    for (const attempt of byName(spans, "process traced.child")) {
      expect(parentOf(attempt)).toBe(batchSend && idOf(batchSend));
    }
  });

  it("gives a recurring schedule's fire a root producer span named for the schedule", async () => {
    const pawl = node();
    pawl.register("traced.tick", async () => {});
    await pawl.start();
    const s = await pawl.schedule("traced-daily", "30 2 * * *", {}, { type: "traced.tick" });
    const result = await pawl.clusterServices!.recurring.fireBatch(new Date(s.nextFireAt.getTime() + 50));
    expect(result.fired).toHaveLength(1);
    const [send] = byName(
      await otel.waitForSpans((x) => byName(x, "send traced.tick").length === 1),
      "send traced.tick",
    );
    expect(send?.parentSpanContext).toBeUndefined();
    expect(send?.attributes).toMatchObject({
      "pawl.recurring.name": "traced-daily",
      "messaging.message.id": result.fired[0]!.jobId,
    });
    await pawl.unschedule("traced-daily");
  });

  it("kills a payload the validator refuses with a span that says why", async () => {
    const pawl = node();
    pawl.register("traced.invalid", async () => {}, { validate: () => "amount is missing" });
    // A producer that does not know the type (its validator runs on the node only).
    const producer = new PawlClient({ connectionString: databaseUrl, schema });
    await enqueueInRequest(producer, "traced.invalid");
    await producer.close();
    await pawl.start();
    const [attempt] = byName(
      await otel.waitForSpans((s) => byName(s, "process traced.invalid").length === 1),
      "process traced.invalid",
    );
    expect(attempt?.attributes["pawl.job.outcome"]).toBe("dead");
    expect(attempt?.status.code).toBe(SpanStatusCode.ERROR);
    expect(attempt?.status.message).toContain("amount is missing");
  });

  it("starts a trace of its own for a job enqueued through SQL (no stored context)", async () => {
    const pawl = node();
    pawl.register("traced.sql", async () => {});
    await pool.query(`SELECT * FROM "${schema}".enqueue('traced.sql', '{}')`);
    await pawl.start();
    const [attempt] = byName(
      await otel.waitForSpans((s) => byName(s, "process traced.sql").length === 1),
      "process traced.sql",
    );
    expect(attempt?.parentSpanContext).toBeUndefined();
    expect(attempt?.links).toEqual([]);
    expect(attempt?.attributes["pawl.job.outcome"]).toBe("succeeded");
  });

  it("with attemptParent: link, starts a trace per attempt linked to the producer span", async () => {
    const pawl = node({ tracing: { attemptParent: "link" } });
    pawl.register("traced.link", async () => {});
    const { request } = await enqueueInRequest(pawl, "traced.link");
    await pawl.start();
    const spans = await otel.waitForSpans((s) => byName(s, "process traced.link").length === 1);
    const [send] = byName(spans, "send traced.link");
    const [attempt] = byName(spans, "process traced.link");
    expect(attempt?.parentSpanContext).toBeUndefined();
    expect(attempt && traceOf(attempt)).not.toBe(request.spanContext().traceId);
    expect(attempt?.links.map((l) => l.context.spanId)).toEqual([send && idOf(send)]);
  });

  it("traces claims, outcome writes and wakeups only with internals: true", async () => {
    const plain = node();
    plain.register("traced.plain", async () => {});
    await plain.enqueue("traced.plain", {});
    await plain.start();
    await otel.waitForSpans((s) => byName(s, "process traced.plain").length === 1);
    await plain.close();
    expect(otel.spans().filter((s) => s.name.startsWith("pawl "))).toEqual([]);

    const pawl = node({ tracing: { internals: true } });
    pawl.register("traced.internal", async () => {});
    await pawl.start();
    await pawl.enqueue("traced.internal", {});
    const spans = await otel.waitForSpans(
      (s) =>
        byName(s, "pawl claim").some((c) => c.attributes["pawl.batch.size"] === 1) &&
        byName(s, "pawl complete").length > 0,
    );
    expect(byName(spans, "pawl wakeup").length).toBeGreaterThan(0);
    for (const s of spans.filter((x) => x.name.startsWith("pawl "))) {
      expect(s.kind).toBe(SpanKind.INTERNAL);
      expect(s.parentSpanContext).toBeUndefined();
    }
  });

  it("a tracer provider that throws costs neither the enqueue nor the attempt", async () => {
    const broken = {
      getTracer: () => {
        throw new Error("provider is broken");
      },
    } as unknown as TracerProvider;
    const pawl = node({ tracing: { tracerProvider: broken } });
    const errors: string[] = [];
    pawl.on("error", (e) => errors.push(e.where));
    pawl.register("traced.broken", async () => "ran");
    const { id } = await enqueueInRequest(pawl, "traced.broken");
    const done = pawl.events.next("job:succeeded", (e) => e.job.id === id, 10_000);
    await pawl.start();
    await done;
    expect((await pawl.getJob(id))?.status).toBe("SUCCEEDED");
    expect(otel.spans().map((s) => s.name)).toEqual(["request"]);
    expect(errors).toEqual([]);
  });

  it("spans that throw on every call (internals too) cost neither the enqueue nor the attempt, and write once", async () => {
    const boom = () => {
      throw new Error("span is broken");
    };
    const sc = { traceId: "1".repeat(32), spanId: "2".repeat(16), traceFlags: 1 };
    const span = new Proxy({}, { get: (_t, key) => (key === "spanContext" ? () => sc : boom) });
    const provider = { getTracer: () => ({ startSpan: () => span }) } as unknown as TracerProvider;
    const pawl = node({ tracing: { tracerProvider: provider, internals: true } });
    pawl.register("traced.spans-broken", async () => "ran");
    const job = await pawl.enqueue("traced.spans-broken", {});
    const done = pawl.events.next("job:succeeded", (e) => e.job.id === job.id, 10_000);
    await pawl.start();
    await done;
    const listed = await pawl.listJobs({ type: "traced.spans-broken" });
    expect(listed.map((j) => [j.id, j.status])).toEqual([[job.id, "SUCCEEDED"]]);
  });

  it("records nothing with tracing: false, and the job runs as ever", async () => {
    const pawl = node({ tracing: false });
    let active: unknown = "unset";
    pawl.register("traced.off", async () => {
      active = trace.getActiveSpan();
    });
    const { id } = await enqueueInRequest(pawl, "traced.off");
    const stored = await pool.query(
      `SELECT trace_context FROM "${schema}".scheduler_job_queue WHERE id = $1`,
      [id],
    );
    expect(stored.rows[0].trace_context).toBeNull();
    const done = new Promise((resolve) => pawl.on("job:succeeded", resolve));
    await pawl.start();
    await done;
    expect(active).toBeUndefined();
    expect(otel.spans().map((s) => s.name)).toEqual(["request"]);
  });
});
