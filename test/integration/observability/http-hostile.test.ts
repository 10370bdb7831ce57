/**
 * Requests a curious client sends by hand, against every surface served by serveMetrics (metrics,
 * health, console, inspector): each gets a status code, none throws into the host. These were the
 * crashing cases of issue 40: a request target that does not parse as a URL, and a console cookie whose
 * percent-encoding is broken.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Pawl } from "../../../src/index.js";
import {
  createConsole,
  createInspector,
  createMetrics,
  serveMetrics,
  type MetricsServer,
} from "../../../observability/index.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";
import { rawRequest } from "../../helpers/raw-http.js";

const token = "hostile-test-token";
let pawl: Pawl;
let server: MetricsServer;
let cleanup: () => Promise<void>;
const crashes: unknown[] = [];
const onCrash = (e: unknown) => crashes.push(e);

beforeAll(async () => {
  process.on("uncaughtException", onCrash);
  process.on("unhandledRejection", onCrash);
  const s = await setupSchema("http_hostile");
  cleanup = s.cleanup;
  pawl = testPawl(s.schema);
  server = await serveMetrics(createMetrics(pawl), {
    port: 0,
    console: createConsole(pawl, { token, logger: false }),
    inspector: createInspector(pawl, { token, logger: false }),
    logger: false,
  });
});

afterAll(async () => {
  process.off("uncaughtException", onCrash);
  process.off("unhandledRejection", onCrash);
  await server?.close();
  await pawl?.close();
  await cleanup?.();
});

const host = () => `127.0.0.1:${server.port}`;

describe("hostile requests", () => {
  it.each(["/metrics", "/console", "/debug/actors", "/healthz", "/readyz"])(
    "GET //[ and GET %s//[ answer a 4xx",
    async (path) => {
      for (const target of ["//[", `${path}//[`, `//[${path}`]) {
        const r = await rawRequest(server.port, `GET ${target} HTTP/1.1\r\nHost: ${host()}\r\n\r\n`);
        expect(r.status, r.text).toBeGreaterThanOrEqual(400);
        expect(r.status, r.text).toBeLessThan(500);
      }
      expect(crashes).toEqual([]);
    },
  );

  it("a console cookie with broken percent-encoding is refused, not thrown", async () => {
    const r = await rawRequest(
      server.port,
      `GET /console HTTP/1.1\r\nHost: ${host()}\r\nCookie: pawl_console=%E0%A4%A\r\n\r\n`,
    );
    expect(r.status, r.text).toBe(401);
    expect(crashes).toEqual([]);
  });

  it.each([
    "GET http://[ HTTP/1.1",
    "GET * HTTP/1.1",
    "GET /console/%E0%A4%A HTTP/1.1",
    "GET /console/jobs?status=%E0%A4%A HTTP/1.1",
    "POST /console/login HTTP/1.1",
  ])("%s gets a status line", async (line) => {
    const r = await rawRequest(server.port, `${line}\r\nHost: ${host()}\r\nContent-Length: 3\r\n\r\nx=%`);
    expect(r.status, r.text).not.toBeNull();
    expect(r.status).toBeLessThan(500);
    expect(crashes).toEqual([]);
  });
});
