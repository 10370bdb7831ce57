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
  InsecureSurfaceError,
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

describe("secure by default", () => {
  it("a console or inspector without a token does not start beyond loopback, and actions need a token", async () => {
    const metrics = createMetrics(pawl);
    for (const options of [
      { console: createConsole(pawl, { logger: false }) },
      { inspector: createInspector(pawl, { logger: false }) },
    ]) {
      await expect(serveMetrics(metrics, { port: 0, host: "0.0.0.0", ...options })).rejects.toBeInstanceOf(
        InsecureSurfaceError,
      );
    }
    expect(() => createConsole(pawl, { actions: true })).toThrow(InsecureSurfaceError);
    metrics.close();
  });

  it("a DNS-rebinding Host gets 421 before the token is looked at; the token in the URL is ignored", async () => {
    for (const path of ["/console", "/debug/actors"]) {
      const rebound = await rawRequest(
        server.port,
        `GET ${path} HTTP/1.1\r\nHost: evil.example:${server.port}\r\nAuthorization: Bearer ${token}\r\n\r\n`,
      );
      expect(rebound.status, rebound.text).toBe(421);
      const inUrl = await fetch(`${server.origin}${path}?token=${token}`);
      expect(inUrl.status).toBe(401);
      const byHeader = await fetch(`${server.origin}${path}`, {
        headers: { Authorization: `Bearer ${token}` },
      });
      expect(byHeader.status).toBe(200);
    }
  });

  it("the console's sign-in sets a cookie holding no token, refuses a cross-site sign-in, and the cookie opens the inspector too", async () => {
    const form = { "Content-Type": "application/x-www-form-urlencoded", Origin: server.origin };
    const wrong = await fetch(`${server.origin}/console/login`, {
      method: "POST",
      headers: form,
      body: "token=nope",
      redirect: "manual",
    });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get("set-cookie")).toBeNull();
    const crossSite = await fetch(`${server.origin}/console/login`, {
      method: "POST",
      headers: { ...form, Origin: "https://evil.example" },
      body: `token=${token}`,
      redirect: "manual",
    });
    expect(crossSite.status).toBe(403);
    const ok = await fetch(`${server.origin}/console/login`, {
      method: "POST",
      headers: form,
      body: `token=${token}`,
      redirect: "manual",
    });
    expect(ok.status).toBe(303);
    const cookie = ok.headers.get("set-cookie") ?? "";
    expect(cookie).toMatch(/^pawl_session=[^;]+; Path=\/; HttpOnly; SameSite=Strict$/);
    expect(cookie).not.toContain(token);
    const session = cookie.split(";")[0]!;
    const page = await fetch(`${server.origin}/console/actors`, { headers: { Cookie: session } });
    expect(page.status).toBe(200);
    expect(await page.text()).not.toContain(token);
    expect((await fetch(`${server.origin}/debug/actors`, { headers: { Cookie: session } })).status).toBe(200);
  });
});
