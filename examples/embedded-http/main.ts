/**
 * A pawl node embedded in a plain node:http service: the same process serves requests and runs jobs.
 *
 *   POST /jobs       {"type": "report.render", "payload": {...}, "options": {...}}  -> 201 the job
 *   GET  /jobs/:id   -> 200 the job (with its progress), 404 when there is none
 *   GET  /jobs/:id/wait?timeoutMs=n -> 200 the job once it is final, 202 the job still running at the
 *                    timeout; the wait ends when the client disconnects (pawl.waitFor with a signal)
 *
 * Shutdown (SIGINT/SIGTERM) closes the listener first (in-flight requests finish), then drains the node
 * (running jobs get a grace period), then closes the pool. A second signal aborts running jobs and drops
 * open connections. With `--once` (or PAWL_EXAMPLE_DURATION_MS) it listens on a free port, calls itself
 * over HTTP a few times, and shuts down on its own.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import {
  createPawl,
  PawlError,
  ValidationError,
  WaitTimeoutError,
  type EnqueueOptions,
  type JobContext,
} from "pawl";
import { databaseUrl, lifecycle, sleep } from "../shared/lifecycle.js";

const life = lifecycle("embedded-http");
const schema = process.env.PAWL_SCHEMA ?? "pawl_embedded_http";
const port = life.durationMs !== null ? 0 : Number(process.env.PORT ?? 3000);
const graceMs = 10_000;

const pawl = createPawl({ connectionString: databaseUrl, schema, concurrency: 4, pollIntervalMs: 500 });

pawl.register(
  "report.render",
  async (payload: { title: string; pages?: number }, ctx: JobContext) => {
    const pages = payload.pages ?? 3;
    for (let page = 1; page <= pages; page++) {
      ctx.throwIfCancellationRequested(); // a safe point between pages
      await sleep(50, ctx.signal);
      ctx.progress({ page, pages }); // stored throttled; GET /jobs/:id shows it
    }
    return { title: payload.title, pages, renderedBy: ctx.nodeId };
  },
  {
    timeoutMs: 30_000,
    validate: (p) => typeof (p as { title?: unknown } | null)?.title === "string" || "title must be a string",
  },
);

async function readJson(req: IncomingMessage, limit = 1 << 20): Promise<unknown> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new HttpError(413, "request body too large");
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}");
  } catch {
    throw new HttpError(400, "the body is not JSON");
  }
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? "/", "http://localhost");
  if (req.method === "POST" && url.pathname === "/jobs") {
    const body = (await readJson(req)) as { type?: unknown; payload?: unknown; options?: EnqueueOptions };
    if (typeof body !== "object" || body === null) throw new HttpError(400, "the body must be a JSON object");
    // The options come from the client: never let it pass a database client.
    const { client: _ignored, ...options } = body.options ?? {};
    const job = await pawl.enqueue(body.type as string, body.payload, options);
    return send(res, job.inserted ? 201 : 200, job);
  }
  const waiting = /^\/jobs\/([^/]+)\/wait$/.exec(url.pathname);
  if (req.method === "GET" && waiting) {
    const id = decodeURIComponent(waiting[1] ?? "");
    const timeoutMs = Number(url.searchParams.get("timeoutMs") ?? 25_000);
    // The wait ends with the request: a client that hangs up stops costing a waiter.
    const gone = new AbortController();
    res.on("close", () => gone.abort(new HttpError(499, "the client went away")));
    try {
      return send(res, 200, await pawl.waitFor(id, { timeoutMs, signal: gone.signal }));
    } catch (error) {
      if (error instanceof WaitTimeoutError) return send(res, 202, await pawl.getJob(id));
      if (error instanceof PawlError && error.code === "JOB_NOT_FOUND")
        return send(res, 404, { error: "no such job" });
      throw error;
    }
  }
  const match = /^\/jobs\/([^/]+)$/.exec(url.pathname);
  if (req.method === "GET" && match) {
    const job = await pawl.getJob(decodeURIComponent(match[1] ?? ""));
    return job ? send(res, 200, job) : send(res, 404, { error: "no such job" });
  }
  send(res, 404, { error: "not found" });
}

const server = createServer((req, res) => {
  handle(req, res).catch((error: unknown) => {
    if (error instanceof HttpError) return send(res, error.status, { error: error.message });
    // pawl's own errors carry a stable code; input errors (ValidationError) are the client's fault.
    if (error instanceof PawlError) {
      const status = error instanceof ValidationError ? 400 : 409;
      return send(res, status, { error: error.message, code: error.code });
    }
    life.log(`request failed: ${String(error)}`);
    send(res, 500, { error: "internal error" });
  });
});

await pawl.migrate();
await pawl.start();
await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
life.log(
  `listening on ${base} (schema ${schema}); try: curl -XPOST ${base}/jobs -d '{"type":"report.render","payload":{"title":"Q3"}}'`,
);

let finished = 0;
pawl.on("job:succeeded", () => finished++);
const ticker = setInterval(() => life.progress(`jobs succeeded=${finished}`), 1_000);

/** The self-test of `--once`: enqueue over HTTP, then wait for the job over HTTP (one request, no polling). */
async function selfTest(): Promise<boolean> {
  const bad = await fetch(`${base}/jobs`, {
    method: "POST",
    body: JSON.stringify({ type: "report.render", payload: {} }),
  });
  life.log(`POST /jobs with an invalid payload -> ${bad.status}`);
  let ok = bad.status === 400;
  for (let i = 1; i <= 3; i++) {
    const created = await fetch(`${base}/jobs`, {
      method: "POST",
      body: JSON.stringify({
        type: "report.render",
        payload: { title: `report ${i}`, pages: i },
        options: { priority: "high" },
      }),
    });
    const job = (await created.json()) as { id: string };
    life.progress(`POST /jobs -> ${created.status} job ${job.id}`);
    const waited = await fetch(`${base}/jobs/${job.id}/wait?timeoutMs=10000`);
    const done = (await waited.json()) as { status: string; progress: unknown };
    life.progress(
      `GET /jobs/${job.id}/wait -> ${waited.status} ${done.status} ${JSON.stringify(done.progress)}`,
    );
    ok &&= waited.status === 200 && done.status === "SUCCEEDED";
  }
  const missing = await fetch(`${base}/jobs/999999999999`);
  life.log(`GET /jobs/999999999999 -> ${missing.status}`);
  return ok && missing.status === 404;
}

let selfTestPassed = true;
if (life.durationMs !== null) selfTestPassed = await selfTest();

const reason = await life.stopping;
life.log(`${reason}: closing the listener, then draining the node (grace ${graceMs} ms)`);
life.onForce(() => {
  server.closeAllConnections();
  void pawl.stop();
});
await new Promise<void>((resolve) => server.close(() => resolve()));
await pawl.stop({ graceMs });
await pawl.close();
clearInterval(ticker);
life.progress(`jobs succeeded=${finished}`);
if (!selfTestPassed) {
  life.log("the self-test failed");
  process.exit(1);
}
life.log("stopped");
process.exit(0);
