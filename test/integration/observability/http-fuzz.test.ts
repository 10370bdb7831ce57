/**
 * A property test of every HTTP surface (issue 40: "no request crashes anything"). fast-check generates
 * request lines, headers, cookies, queries and bodies, and raw bytes, and sends them over a TCP socket
 * (not fetch, which refuses to send malformed requests) to:
 *
 * - serveMetrics with everything mounted: metrics, /healthz, /readyz, the console (token, actions on) and
 *   the inspector (token);
 * - the console and the inspector without a token, each mounted alone on a node:http server as the docs
 *   show (no `next`).
 *
 * Each request must get a status line, or a clean close (Node's parser refusing bytes it cannot read), and
 * never a 500; over the whole run the process must see 0 uncaught exceptions and 0 unhandled rejections.
 */
import fc from "fast-check";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Pawl } from "../../../src/index.js";
import {
  createConsole,
  createInspector,
  createMetrics,
  serveMetrics,
  type MetricsServer,
} from "../../../observability/index.js";
import { tokenCheck } from "../../../observability/access.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";
import { rawRequest } from "../../helpers/raw-http.js";

const token = "fuzz-token";
const session = tokenCheck("fuzz", token).cookieValue;
let pawl: Pawl;
let full: MetricsServer;
const bare: Server[] = [];
let cleanup: () => Promise<void>;
const crashes: unknown[] = [];
const onCrash = (e: unknown) => crashes.push(e);
const ports: number[] = [];

beforeAll(async () => {
  process.on("uncaughtException", onCrash);
  process.on("unhandledRejection", onCrash);
  const s = await setupSchema("http_fuzz");
  cleanup = s.cleanup;
  pawl = testPawl(s.schema);
  await pawl.start();
  await pawl.enqueue("fuzz.job", { text: "x".repeat(100) });
  full = await serveMetrics(createMetrics(pawl), {
    port: 0,
    console: createConsole(pawl, { token, actions: true, logger: false }),
    inspector: createInspector(pawl, { token, logger: false, maxStreams: 2 }),
    logger: false,
  });
  ports.push(full.port);
  for (const handler of [
    createConsole(pawl, { logger: false }).handler,
    createInspector(pawl, { logger: false }).handler,
  ]) {
    const server = createServer(handler);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    bare.push(server);
    ports.push((server.address() as AddressInfo).port);
  }
});

afterAll(async () => {
  process.off("uncaughtException", onCrash);
  process.off("unhandledRejection", onCrash);
  for (const server of bare) {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
  await full?.close();
  await pawl?.close();
  await cleanup?.();
});

/** Text of any byte but CR and LF (a request line or header that stays on its line). */
const lineText = (max: number) =>
  fc
    .array(
      fc.integer({ min: 0, max: 255 }).filter((b) => b !== 10 && b !== 13),
      { maxLength: max },
    )
    .map((bytes) => Buffer.from(bytes).toString("latin1"));

/** Printable ASCII, what a parser lets through to the handlers (most raw bytes it refuses itself). */
const asciiText = (max: number) => fc.string({ unit: "grapheme-ascii", maxLength: max });

/** Either: nothing, printable ASCII, or any bytes but CR and LF. */
const anyText = (max: number) => fc.oneof(fc.constant(""), asciiText(max), lineText(max));

/** Text shaped like what a client would send there: a known path with fuzzed tails and queries. */
const target = fc.oneof(
  fc
    .tuple(
      fc.constantFrom(
        "/",
        "//",
        "//[",
        "/metrics",
        "/healthz",
        "/readyz",
        "/debug/actors",
        "/debug/actors/stream",
        "/console",
        "/console/",
        "/console/login",
        "/console/jobs",
        "/console/jobs/1",
        "/console/jobs/1/retry",
        "/console/dlq",
        "/console/dlq/purge",
        "/console/flows",
        "/console/flows/1",
        "/console/schedules",
        "/console/paused",
        "/console/paused/pause",
        "/console/nodes",
        "/console/breakers",
        "/console/actors",
        "http://[",
        "*",
      ),
      anyText(40),
      fc.array(
        fc.tuple(
          fc.constantFrom(
            "status",
            "type",
            "queue",
            "text",
            "before",
            "after",
            "kind",
            "token",
            "actor",
            "types",
            "x",
          ),
          fc.oneof(anyText(30), fc.constantFrom("%E0%A4%A", "%", "%00", "DEAD", "1", "99999999999999999999")),
        ),
        { maxLength: 4 },
      ),
    )
    .map(
      ([path, tail, query]) =>
        `${path}${tail.replace(/[ ?#]/g, "")}${query.length ? "?" : ""}${query.map(([k, v]) => `${k}=${v.replace(/[ #]/g, "")}`).join("&")}`,
    ),
  anyText(60).map((t) => t.replace(/ /g, "")),
);

const method = fc.oneof(
  fc.constantFrom("GET", "POST", "HEAD", "PUT", "DELETE", "OPTIONS", "PATCH"),
  lineText(10).map((t) => t.replace(/ /g, "")),
);

const header = fc.oneof(
  fc.tuple(
    fc.constantFrom(
      "Cookie",
      "Authorization",
      "Origin",
      "Sec-Fetch-Site",
      "Content-Type",
      "X-Forwarded-For",
      "Accept",
    ),
    fc.oneof(
      anyText(60),
      fc.constantFrom(
        `pawl_session=${session}`,
        "pawl_session=%E0%A4%A",
        "pawl_console=%E0%A4%A",
        `Bearer ${token}`,
        "Bearer",
        "application/x-www-form-urlencoded",
        "same-origin",
        "null",
        "http://[",
      ),
    ),
  ),
  fc.tuple(
    anyText(20).map((n) => n.replace(/[:\s]/g, "") || "X"),
    anyText(60),
  ),
);

const host = fc.oneof(
  fc.constant((port: number) => `127.0.0.1:${port}`),
  fc.constant(() => "localhost"),
  fc.constant(() => "evil.example"),
  anyText(30).map((h) => () => h),
);

const body = fc.oneof(
  fc.constant(""),
  fc.constantFrom("token=fuzz-token", "token=%E0%A4%A", "csrf=x&ids=1&ids=2", "type=%", "kind=queue&name=q"),
  anyText(200),
);

/** One complete request as bytes: the parser either reads it whole or refuses it. */
const request = fc
  .record({
    method,
    target,
    headers: fc.array(header, { maxLength: 5 }),
    host,
    body,
    version: fc.constantFrom("HTTP/1.1", "HTTP/1.0", "HTTP/9.9", ""),
  })
  .map(({ method, target, headers, host, body, version }) => (port: number) => {
    const lines = [
      `${method} ${target} ${version}`,
      `Host: ${host(port)}`,
      ...headers.map(([k, v]) => `${k}: ${v}`),
    ];
    if (body.length > 0) lines.push(`Content-Length: ${Buffer.byteLength(body, "latin1")}`);
    return Buffer.from(`${lines.join("\r\n")}\r\n\r\n${body}`, "latin1");
  });

/**
 * Any bytes at all, then an empty line and a plain request, so the parser is never left waiting: bytes
 * it ignores (empty lines) leave the plain request to answer, a request line absorbs its lines as
 * headers, and anything else is refused.
 */
const rawBytes = fc
  .uint8Array({ maxLength: 300 })
  .map(
    (bytes) => (port: number) =>
      Buffer.concat([
        Buffer.from(bytes),
        Buffer.from(`\r\n\r\nGET / HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`),
      ]),
  );

const send = async (port: number, bytes: Buffer) => {
  const answer = await rawRequest(port, bytes);
  // A status line, or a clean close with nothing sent (the parser's own refusal is a 400 or a close).
  if (answer.status === null) expect(answer.text).toBe("");
  else {
    expect(answer.status).toBeGreaterThanOrEqual(100);
    expect(
      answer.status,
      `${bytes.toString("latin1").slice(0, 300)}\n->\n${answer.text.slice(0, 300)}`,
    ).not.toBe(500);
    expect(answer.status).toBeLessThan(600);
  }
};

describe("every HTTP surface under generated requests", () => {
  it("answers generated requests with a status, never a 500, and never throws into the process", async () => {
    await fc.assert(
      fc.asyncProperty(request, fc.nat(), async (build, which) => {
        const port = ports[which % ports.length] as number;
        await send(port, build(port));
      }),
      { numRuns: 1000 },
    );
    expect(crashes).toEqual([]);
  });

  it("answers raw bytes with a status or a clean close, and never throws into the process", async () => {
    await fc.assert(
      fc.asyncProperty(rawBytes, fc.nat(), async (build, which) => {
        const port = ports[which % ports.length] as number;
        await send(port, build(port));
      }),
      { numRuns: 500 },
    );
    expect(crashes).toEqual([]);
  });
});
