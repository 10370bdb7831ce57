/**
 * The one guard every HTTP surface of pawl goes through (metrics, health, console, inspector). pawl's
 * handlers run inside someone else's server: an exception thrown from a request listener, a rejected
 * promise nobody awaits, or an `error` event on a request or response with no listener ends the host
 * process. {@link guardHandler} turns each of these into a status code and a log line instead:
 *
 * - input the request got wrong (a target that is not a URL, broken percent-encoding, a value pawl
 *   refuses) is a 400 naming what was wrong;
 * - pawl's tables missing (a schema nobody migrated) is a 503 with a Retry-After and the fix;
 * - an action PostgreSQL refused for lack of privilege (a {@link PrivilegeError}: a console run with
 *   the read-only role) is a 403 with pawl's message and the GRANT the schema's owner would run. That
 *   text is pawl's own (the action, the role and the grant), and the operator needs it to fix the role;
 *   a bare permission denial pawl did not wrap stays a 500, as its text is the database's;
 * - anything else is a 500 whose body says nothing of the cause: database error text can name tables,
 *   roles or values, so it goes to the log, with connection URLs redacted, and not to the client.
 *
 * Handlers may throw or return a rejected promise; both reach the same mapping ({@link httpFailure}).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { redactText } from "../src/core/redact.js";
import { PawlError, ValidationError } from "../src/core/errors.js";
import { PrivilegeError } from "../src/db/privilege-error.js";
import {
  consoleLogger,
  guardLogger,
  silentLogger,
  type HostLogger,
  type Logger,
} from "../src/core/logger.js";

/** A request handler in node:http style, also usable as Express/Connect middleware. */
export type RequestHandler = (
  req: IncomingMessage,
  res: ServerResponse,
  next?: (error?: unknown) => void,
) => void;

/** A handler the guard wraps: it may throw, or return a promise that rejects. */
export type UnsafeHandler = (
  req: IncomingMessage,
  res: ServerResponse,
  next?: (error?: unknown) => void,
) => void | Promise<void>;

/**
 * Where a surface logs the failures it answered with a 500: a logger (`console`, pino through
 * `pinoLogger`, winston), or `false` for none. Default: warnings and errors as JSON lines on stderr.
 */
export type SurfaceLogger = HostLogger | false;

/** A request the client got wrong: answered 400 with this message. */
export class BadRequestError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "BadRequestError";
  }
}

/** A failed request's status, headers and plain-text body. */
export interface HttpFailure {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** Whether the cause is logged (server faults are; the client's bad input is not). */
  log: boolean;
}

/** SQLSTATEs that mean pawl's tables are not there: undefined_table, invalid_schema_name. */
const notMigratedCodes = new Set(["42P01", "3F000"]);

/**
 * The answer to a request whose handling threw `error` (see the file's comment).
 *
 * @example
 * ```ts
 * httpFailure(new URIError("URI malformed")).status; // 400
 * httpFailure(new PrivilegeError("permission denied ...", "GRANT ...", cause)).status; // 403
 * httpFailure(Object.assign(new Error("relation x does not exist"), { code: "42P01" })).status; // 503
 * ```
 */
export function httpFailure(error: unknown, surface = "pawl"): HttpFailure {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown } | null)?.code;
  if (error instanceof BadRequestError || error instanceof ValidationError)
    return { status: 400, headers: {}, body: `${surface}: ${message}\n`, log: false };
  // Thrown by the platform on the client's bytes: a target that is not a URL, broken %-encoding.
  if (error instanceof URIError || code === "ERR_INVALID_URL")
    return { status: 400, headers: {}, body: `${surface}: malformed request\n`, log: false };
  if (error instanceof PrivilegeError) {
    const grant = error.grant ? `\nAsk the schema's owner to run:\n${error.grant}\n` : "";
    return { status: 403, headers: {}, body: redactText(`${surface}: ${message}\n${grant}`), log: false };
  }
  if (typeof code === "string" && notMigratedCodes.has(code)) {
    return {
      status: 503,
      headers: { "Retry-After": "2" },
      body: `${surface}: the schema is not migrated yet; run pawl.migrate() or "pawl migrate" for it, then reload\n`,
      log: true,
    };
  }
  if (error instanceof PawlError && error.code === "DATABASE_UNAVAILABLE")
    return {
      status: 503,
      headers: { "Retry-After": "2" },
      body: `${surface}: database unavailable\n`,
      log: true,
    };
  return { status: 500, headers: {}, body: `${surface}: internal error (logged on the server)\n`, log: true };
}

/** The logger a surface writes to, from its option (see {@link SurfaceLogger}). */
export function surfaceLogger(logger: SurfaceLogger | undefined): Logger {
  if (logger === false) return silentLogger;
  return guardLogger(logger ?? consoleLogger("warn"));
}

/**
 * Wraps `handler` so that nothing it does reaches the host as an exception (see the file's comment).
 * Every surface's exported handler is one of these; wrapping twice is harmless.
 *
 * @example
 * ```ts
 * const handler = guardHandler("console", async (req, res) => { ... }, surfaceLogger(options.logger));
 * ```
 */
export function guardHandler(surface: string, handler: UnsafeHandler, log: Logger): RequestHandler {
  return (req, res, next) => {
    const fail = (error: unknown) => answerFailure(surface, req, res, error, log);
    // An error event with no listener is thrown by its emitter: a client that resets mid-body, a write
    // after the socket died. They are the connection's end, not pawl's fault: noted at debug level.
    if (req.listenerCount("error") === 0)
      req.on("error", (e) => log.debug(`${surface}: request error`, { error: String(e) }));
    if (res.listenerCount("error") === 0)
      res.on("error", (e) => log.debug(`${surface}: response error`, { error: String(e) }));
    try {
      const pending = handler(req, res, next);
      if (pending !== undefined) pending.then(undefined, fail);
    } catch (error) {
      fail(error);
    }
  };
}

function answerFailure(
  surface: string,
  req: IncomingMessage,
  res: ServerResponse,
  error: unknown,
  log: Logger,
): void {
  try {
    const failure = httpFailure(error, surface);
    if (failure.log) {
      log.error(`${surface}: ${req.method ?? "?"} request failed`, {
        path: redactText(String(req.url ?? "").slice(0, 200)),
        error: redactText(error instanceof Error ? `${error.name}: ${error.message}` : String(error)),
      });
    }
    if (res.headersSent || res.writableEnded) {
      // A stream already under way cannot change its status: end it so the client sees the cut.
      res.destroy();
      return;
    }
    res.writeHead(failure.status, {
      ...failure.headers,
      "Content-Type": "text/plain; charset=utf-8",
      "Cache-Control": "no-store",
      "X-Content-Type-Options": "nosniff",
      "Content-Length": Buffer.byteLength(failure.body),
    });
    res.end(failure.body);
  } catch {
    // Even the answer failed (a destroyed socket): nothing is left to tell the client.
    try {
      res.destroy();
    } catch {
      // already gone
    }
  }
}

/**
 * The request's target as a URL (the path and query; the host is a placeholder). Express keeps the full
 * path in `originalUrl` when a mount path was stripped from `url`.
 *
 * @throws BadRequestError when the target is not a URL (`//[`, `http://[`).
 */
export function requestUrl(req: IncomingMessage): URL {
  const raw = (req as IncomingMessage & { originalUrl?: unknown }).originalUrl ?? req.url ?? "/";
  const target = typeof raw === "string" ? raw : "/";
  try {
    // Origin-form is appended to a fixed origin, never resolved against it: "//[" is a path here, not
    // a protocol-relative URL naming the host "[". Absolute-form (a proxy request) is parsed whole.
    if (target.startsWith("/")) return new URL(`http://localhost${target}`);
    const absolute = new URL(target);
    return new URL(`http://localhost${absolute.pathname}${absolute.search}`);
  } catch {
    throw new BadRequestError("the request target is not a URL");
  }
}

/** A cookie's value, or undefined when it is absent or its percent-encoding is broken. */
export function readCookie(req: IncomingMessage, name: string): string | undefined {
  const header = req.headers.cookie;
  if (typeof header !== "string") return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq < 0 || part.slice(0, eq).trim() !== name) continue;
    try {
      return decodeURIComponent(part.slice(eq + 1).trim());
    } catch {
      return undefined;
    }
  }
  return undefined;
}
