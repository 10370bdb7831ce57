/**
 * Who may use the console and the inspector, decided the same way for both:
 *
 * - **Host allowlist.** A DNS-rebinding page points a name it controls at 127.0.0.1 and then talks to
 *   the local port as if it were its own origin; its requests carry its own name in `Host`. A request
 *   whose `Host` is not the address the connection arrived on, `localhost`, `127.0.0.1`, `[::1]` or a
 *   name the user allowed gets 421 before anything else happens.
 * - **No token, loopback only.** Without a token a surface answers only connections that arrived on a
 *   loopback address (403 otherwise), and {@link assertExposable} refuses to start one on another
 *   interface: the open default cannot be reached from the network by mistake.
 * - **The token** comes in an `Authorization: Bearer` header (scripts, `pawl inspect`) or an HttpOnly
 *   cookie the console's login form sets. The cookie holds a digest of the token, never the token, and
 *   the token is never taken from a URL, so it stays out of pages, addresses, history and proxy logs.
 *
 * Tokens and cookies are compared as SHA-256 digests with `timingSafeEqual`, so neither their length nor
 * their content leaks through timing.
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { PawlError } from "../src/core/errors.js";
import { readCookie } from "./http-guard.js";

/** The cookie the console's login form sets, read by the console and the inspector. */
export const sessionCookie = "pawl_session";

/**
 * Raised when a console, inspector or Stately bridge would be reachable from the network without a
 * token, or console actions are asked for without one. Nothing has been started when it is thrown.
 */
export class InsecureSurfaceError extends PawlError {
  constructor(message: string) {
    super("INVALID_CONFIG", message);
    this.name = "InsecureSurfaceError";
  }
}

/** Whether `address` (an IP or a host name) is this machine's loopback. */
export function isLoopback(address: string): boolean {
  const a = address
    .trim()
    .toLowerCase()
    .replace(/^\[|\]$/g, "")
    .replace(/\.$/, "");
  if (a === "localhost" || a === "::1" || a === "0:0:0:0:0:0:0:1") return true;
  const v4 = a.startsWith("::ffff:") ? a.slice("::ffff:".length) : a;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(v4);
}

/**
 * The host name of a `Host` header, lower-cased, without its port or IPv6 brackets; null when the
 * header is missing or malformed.
 */
export function hostName(header: string | undefined): string | null {
  if (typeof header !== "string") return null;
  const h = header.trim().toLowerCase();
  if (h.length === 0 || h.length > 255) return null;
  if (h.startsWith("[")) {
    const m = /^\[([0-9a-f:.]+)\](?::\d{1,5})?$/.exec(h);
    return m ? (m[1] as string) : null;
  }
  const m = /^([a-z0-9._-]+)(?::\d{1,5})?$/.exec(h);
  return m ? (m[1] as string).replace(/\.$/, "") : null;
}

/**
 * Whether a request's `Host` header names this server: the address the connection arrived on, a
 * loopback name or address, or one of `allowed` (host names, matched without their port).
 *
 * @example
 * ```ts
 * hostAllowed("localhost:9464", "127.0.0.1", []); // true
 * hostAllowed("evil.example:9464", "127.0.0.1", []); // false: a DNS-rebinding page
 * hostAllowed("pawl.internal", "10.0.0.5", ["pawl.internal"]); // true
 * ```
 */
export function hostAllowed(
  header: string | undefined,
  localAddress: string | undefined,
  allowed: readonly string[],
): boolean {
  const name = hostName(header);
  if (name === null) return false;
  if (isLoopback(name)) return true;
  const local = (localAddress ?? "").toLowerCase();
  if (name === local || `::ffff:${name}` === local) return true;
  return allowed.some((a) => hostName(a) === name);
}

/** Checks a request's token (see the file's comment); built once per surface. */
export interface TokenCheck {
  /** Whether a token is configured at all. */
  readonly required: boolean;
  /** Whether the request carries the token (always true when none is configured). */
  accepts(req: IncomingMessage): boolean;
  /** Whether `given` (a login form's field) is the token. */
  matches(given: string): boolean;
  /** The value of the session cookie for this token (a digest, never the token). */
  readonly cookieValue: string;
}

/**
 * The token check of a surface.
 *
 * @throws TypeError when `token` is the empty string (a variable that was meant to be set).
 */
export function tokenCheck(surface: string, token: string | undefined): TokenCheck {
  if (token !== undefined && (typeof token !== "string" || token.length === 0))
    throw new TypeError(`${surface}: token is empty`);
  const expected = token === undefined ? null : digest(token);
  // One value per token, the same in the console and the inspector, so one login serves both.
  const cookieValue =
    token === undefined ? "" : createHmac("sha256", token).update("pawl-session").digest("base64url");
  const cookieDigest = digest(cookieValue);
  const matches = (given: string) => expected !== null && timingSafeEqual(digest(given), expected);
  return {
    required: expected !== null,
    cookieValue,
    matches,
    accepts(req) {
      if (expected === null) return true;
      const header = req.headers.authorization;
      const bearer = typeof header === "string" ? /^Bearer\s+(.+)$/i.exec(header.trim())?.[1] : undefined;
      if (bearer !== undefined) return matches(bearer);
      const cookie = readCookie(req, sessionCookie);
      return cookie !== undefined && timingSafeEqual(digest(cookie), cookieDigest);
    },
  };
}

/** Why a request may not use a surface (status and message), or null when it may. */
export function refusal(
  req: IncomingMessage,
  check: TokenCheck,
  allowedHosts: readonly string[],
): { status: number; message: string } | null {
  const local = req.socket?.localAddress;
  if (!hostAllowed(req.headers.host, local, allowedHosts))
    return { status: 421, message: "this Host is not allowed (see allowedHosts)" };
  if (!check.required && !isLoopback(local ?? ""))
    return { status: 403, message: "no token is configured: this surface answers only on loopback" };
  return null;
}

/**
 * Refuses a surface without a token on an interface other than loopback.
 *
 * @throws InsecureSurfaceError naming the surface and the fix.
 */
export function assertExposable(surface: string, host: string, check: Pick<TokenCheck, "required">): void {
  if (check.required || isLoopback(host)) return;
  throw new InsecureSurfaceError(
    `${surface} has no token and would listen on ${host}, beyond loopback: pass { token } ` +
      `(e.g. from an environment variable), or listen on 127.0.0.1`,
  );
}

function digest(s: string): Buffer {
  return createHash("sha256").update(s, "utf8").digest();
}
