/**
 * One trace across two processes: a client in this process enqueues inside a request span (the SDK's
 * in-memory exporter here), a node in a child process (test/processes/traced-node-process.ts, its own SDK,
 * exporting its spans over stdout) runs the job: its attempt spans are children of this process's
 * producer span, in the request's trace, and the handler's span is a child of its attempt's.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { context, SpanKind, trace } from "@opentelemetry/api";
import type pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { PawlClient } from "../../src/index.js";
import { databaseUrl } from "../helpers/db.js";
import { setupSchema } from "../helpers/pawl.js";
import { startTestTracing, type TestTracing } from "../helpers/tracing.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

interface SpanLine {
  name: string;
  kind: number;
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  links: string[];
  attributes: Record<string, unknown>;
  status: { code: number; message?: string };
}

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let otel: TestTracing;
let child: ChildProcess | null = null;

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("trace2p"));
  otel = startTestTracing();
}, 60_000);
afterAll(async () => {
  if (child && child.exitCode === null) {
    const exited = new Promise((resolve) => child?.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
  }
  await otel.shutdown();
  await cleanup();
});

/** Starts the node process; `spans` collects its span lines, `waitFor` waits until a condition holds. */
function startNode() {
  const spans: SpanLine[] = [];
  const waiters = new Set<() => void>();
  let stderr = "";
  const proc = spawn(
    join(root, "node_modules", ".bin", "tsx"),
    [join(root, "test", "processes", "traced-node-process.ts")],
    {
      cwd: root,
      env: { ...process.env, DATABASE_URL: databaseUrl, PAWL_SCHEMA: schema, PAWL_NODE_ID: "traced-node" },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  child = proc;
  let buffer = "";
  let ready = false;
  proc.stdout?.on("data", (chunk: Buffer) => {
    buffer += chunk.toString();
    let nl: number;
    while ((nl = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      try {
        const msg = JSON.parse(line) as { event?: string } & SpanLine;
        if (msg.event === "span") spans.push(msg);
        if (msg.event === "ready") ready = true;
      } catch {
        // not ours
      }
    }
    waiters.forEach((w) => w());
  });
  proc.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const waitFor = (cond: () => boolean, what: string, timeoutMs = 30_000) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (!cond()) return;
        waiters.delete(check);
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`${what} not seen in ${timeoutMs} ms; stderr: ${stderr.slice(-2000)}`));
      }, timeoutMs);
      waiters.add(check);
      proc.once("exit", () => reject(new Error(`node exited: ${stderr.slice(-2000)}`)));
      check();
    });
  return { spans, waitFor, ready: () => waitFor(() => ready, "ready") };
}

it("makes one trace from a request's enqueue in one process to the attempts and handler in another", async () => {
  const client = new PawlClient({ connectionString: databaseUrl, schema });
  const request = trace.getTracer("test").startSpan("request");
  const [ok, flaky] = await context.with(trace.setSpan(context.active(), request), () =>
    Promise.all([
      client.enqueue("traced.remote", {}),
      client.enqueue("traced.remote", { fail: true }, { maxAttempts: 2 }),
    ]),
  );
  request.end();
  await client.close();
  const sends = otel.spans().filter((s) => s.name === "send traced.remote");
  expect(sends).toHaveLength(2);
  const sendOf = (id: string) => sends.find((s) => s.attributes["messaging.message.id"] === id);

  const node = startNode();
  await node.ready();
  const attemptsOf = (id: string) =>
    node.spans.filter(
      (s) => s.name === "process traced.remote" && s.attributes["messaging.message.id"] === id,
    );
  await node.waitFor(
    () => attemptsOf(ok!.id).length === 1 && attemptsOf(flaky!.id).length === 2,
    "three attempt spans",
  );
  await node.waitFor(() => node.spans.filter((s) => s.name === "handler work").length === 3, "handler spans");

  const traceId = request.spanContext().traceId;
  for (const job of [ok!, flaky!]) {
    const send = sendOf(job.id);
    expect(send?.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
    for (const attempt of attemptsOf(job.id)) {
      expect(attempt.traceId).toBe(traceId);
      expect(attempt.parentSpanId).toBe(send?.spanContext().spanId);
      expect(attempt.links).toEqual([send?.spanContext().spanId]);
      expect(attempt.kind).toBe(SpanKind.CONSUMER);
      expect(attempt.attributes["messaging.client.id"]).toBe("traced-node");
      // The handler's own span is the attempt's child.
      const work = node.spans.filter((s) => s.name === "handler work" && s.parentSpanId === attempt.spanId);
      expect(work).toHaveLength(1);
      expect(work[0]?.traceId).toBe(traceId);
    }
  }
  expect(attemptsOf(ok!.id)[0]?.attributes["pawl.job.outcome"]).toBe("succeeded");
  const flakyOutcomes = attemptsOf(flaky!.id)
    .sort((a, b) => Number(a.attributes["pawl.job.attempt"]) - Number(b.attributes["pawl.job.attempt"]))
    .map((s) => [s.attributes["pawl.job.outcome"], s.status.message ?? null]);
  expect(flakyOutcomes).toEqual([
    ["retried", "first attempt fails"],
    ["succeeded", null],
  ]);
  // An attempt's span ends when its outcome is decided; the outcome row is written by the next completion
  // batch, a moment later. Wait for the rows rather than read them once.
  const statuses = async (): Promise<string[]> =>
    (
      await pool.query<{ status: string }>(
        `SELECT status FROM "${schema}".scheduler_job_all WHERE id = ANY($1::bigint[]) ORDER BY id`,
        [[ok!.id, flaky!.id]],
      )
    ).rows.map((r) => r.status);
  const deadline = Date.now() + 10_000;
  let seen = await statuses();
  while (seen.some((s) => s !== "SUCCEEDED") && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    seen = await statuses();
  }
  expect(seen).toEqual(["SUCCEEDED", "SUCCEEDED"]);
}, 90_000);
