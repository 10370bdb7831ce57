/**
 * Who may use the console and the inspector: the Host allowlist (DNS rebinding), loopback without a
 * token, the token by header or session cookie (never the URL), and the refusal to start beyond
 * loopback without a token.
 */
import type { IncomingMessage } from "node:http";
import { describe, expect, it } from "vitest";
import {
  assertExposable,
  hostAllowed,
  hostName,
  InsecureSurfaceError,
  isLoopback,
  refusal,
  tokenCheck,
} from "../../../observability/access.js";

/** A request as the checks read it: headers and the address the connection arrived on. */
const req = (headers: Record<string, string>, localAddress = "127.0.0.1") =>
  ({ headers, socket: { localAddress } }) as unknown as IncomingMessage;

describe("isLoopback", () => {
  it.each([
    ["127.0.0.1", true],
    ["127.8.9.10", true],
    ["::1", true],
    ["[::1]", true],
    ["::ffff:127.0.0.1", true],
    ["localhost", true],
    ["LOCALHOST.", true],
    ["0.0.0.0", false],
    ["::", false],
    ["10.0.0.5", false],
    ["evil.localhost.example", false],
    ["128.0.0.1", false],
    ["", false],
  ])("%s -> %s", (address, expected) => {
    expect(isLoopback(address)).toBe(expected);
  });
});

describe("hostName", () => {
  it.each([
    ["localhost:9464", "localhost"],
    ["Example.COM", "example.com"],
    ["[::1]:9464", "::1"],
    ["[::1]", "::1"],
    ["10.0.0.5:80", "10.0.0.5"],
    ["host.:1", "host"],
    [undefined, null],
    ["", null],
    ["a b", null],
    ["[::1", null],
    ["host:port", null],
    ["x".repeat(300), null],
  ])("%s -> %s", (header, expected) => {
    expect(hostName(header)).toBe(expected);
  });
});

describe("hostAllowed", () => {
  it.each([
    // Loopback names always; the bound address; names the user allowed; nothing else.
    ["localhost:9464", "127.0.0.1", [], true],
    ["127.0.0.1:9464", "127.0.0.1", [], true],
    ["[::1]:9464", "::1", [], true],
    ["10.0.0.5:9464", "10.0.0.5", [], true],
    ["10.0.0.5:9464", "::ffff:10.0.0.5", [], true],
    ["pawl.internal:9464", "10.0.0.5", ["pawl.internal"], true],
    ["pawl.internal", "10.0.0.5", ["PAWL.internal:443"], true],
    // A DNS-rebinding page: its own name, pointed at this machine.
    ["evil.example:9464", "127.0.0.1", [], false],
    ["evil.example", "10.0.0.5", ["pawl.internal"], false],
    ["10.0.0.6:9464", "10.0.0.5", [], false],
    [undefined, "127.0.0.1", [], false],
    ["", "127.0.0.1", [], false],
  ] as const)("Host %s on %s with %j -> %s", (header, local, allowed, expected) => {
    expect(hostAllowed(header, local, allowed)).toBe(expected);
  });
});

describe("tokenCheck", () => {
  const check = tokenCheck("t", "s3cret");
  it.each([
    [{ authorization: "Bearer s3cret" }, true],
    [{ authorization: "bearer   s3cret  " }, true],
    [{ authorization: "Bearer s3cre" }, false],
    [{ authorization: "Basic s3cret" }, false],
    [{ cookie: `pawl_session=${check.cookieValue}` }, true],
    [{ cookie: `a=b; pawl_session=${check.cookieValue}; c=d` }, true],
    [{ cookie: "pawl_session=s3cret" }, false],
    [{ cookie: "pawl_session=%E0%A4%A" }, false],
    [{ cookie: "pawl_console=s3cret" }, false],
    [{}, false],
  ])("%j -> %s", (headers, expected) => {
    expect(check.accepts(req(headers))).toBe(expected);
  });

  it("a wrong Bearer header is not rescued by a good cookie", () => {
    expect(
      check.accepts(req({ authorization: "Bearer nope", cookie: `pawl_session=${check.cookieValue}` })),
    ).toBe(false);
  });

  it("the cookie is a digest, not the token, and the same for the same token", () => {
    expect(check.cookieValue).not.toContain("s3cret");
    expect(tokenCheck("other surface", "s3cret").cookieValue).toBe(check.cookieValue);
    expect(tokenCheck("t", "s3cret2").cookieValue).not.toBe(check.cookieValue);
  });

  it("without a token, every request passes the token check; an empty token is refused", () => {
    expect(tokenCheck("t", undefined).accepts(req({}))).toBe(true);
    expect(tokenCheck("t", undefined).required).toBe(false);
    expect(() => tokenCheck("t", "")).toThrow(TypeError);
  });
});

describe("refusal", () => {
  const open = tokenCheck("t", undefined);
  const closed = tokenCheck("t", "s3cret");
  it.each([
    [{ host: "localhost:1" }, "127.0.0.1", open, null],
    [{ host: "evil.example:1" }, "127.0.0.1", open, 421],
    [{ host: "evil.example:1" }, "127.0.0.1", closed, 421],
    // No token: loopback only, whatever the Host says.
    [{ host: "10.0.0.5:1" }, "10.0.0.5", open, 403],
    [{ host: "10.0.0.5:1" }, "10.0.0.5", closed, null],
    [{}, "127.0.0.1", open, 421],
  ] as const)("%j on %s -> %s", (headers, local, check, status) => {
    expect(refusal(req(headers, local), check, [])?.status ?? null).toBe(status);
  });
});

describe("assertExposable", () => {
  it.each([
    ["127.0.0.1", false, true],
    ["localhost", false, true],
    ["::1", false, true],
    ["0.0.0.0", false, false],
    ["::", false, false],
    ["10.0.0.5", false, false],
    ["0.0.0.0", true, true],
  ])("%s, token %s -> starts: %s", (host, required, starts) => {
    const run = () => assertExposable("the console", host, { required });
    if (starts) expect(run).not.toThrow();
    else expect(run).toThrow(InsecureSurfaceError);
  });
});
