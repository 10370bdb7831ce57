/**
 * Serving metrics over HTTP: {@link metricsHandler} is a request listener for node:http that also works
 * as Express/Connect middleware and, through `reply.raw`, in Fastify; {@link serveMetrics} runs a small
 * server of its own for applications that have none.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Console } from "./console/console.js";
import type { Inspector, RequestHandler } from "./inspector.js";
import type { PawlMetrics } from "./metrics.js";

/** Options of {@link metricsHandler}. */
export interface MetricsHandlerOptions {
  /**
   * Serve only this path (other paths go to `next`, or get 404 without one). Default: serve every
   * request the handler is given, which suits routers (`app.get("/metrics", handler)`).
   */
  path?: string;
}

/**
 * A handler that answers with the exposition text of `metrics`.
 *
 * @example
 * ```ts
 * http.createServer(metricsHandler(metrics)).listen(9464);          // node:http
 * app.get("/metrics", metricsHandler(metrics));                    // Express
 * fastify.get("/metrics", (req, reply) => { reply.hijack(); metricsHandler(metrics)(req.raw, reply.raw); });
 * ```
 */
export function metricsHandler(
  metrics: Pick<PawlMetrics, "metrics" | "contentType">,
  options: MetricsHandlerOptions = {},
): RequestHandler {
  const path = options.path?.replace(/\/+$/, "") || undefined;
  return (req, res, next) => {
    if (path !== undefined) {
      const url = new URL(requestPath(req), "http://localhost");
      if ((url.pathname.replace(/\/+$/, "") || "/") !== path) {
        if (next) next();
        else text(res, 404, "not found\n");
        return;
      }
    }
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.setHeader("Allow", "GET, HEAD");
      text(res, 405, "method not allowed\n");
      return;
    }
    metrics.metrics().then(
      (body) => text(res, 200, body, metrics.contentType),
      (error: unknown) => {
        if (next) next(error);
        else
          text(
            res,
            500,
            `metrics collection failed: ${error instanceof Error ? error.message : String(error)}\n`,
          );
      },
    );
  };
}

/** Options of {@link serveMetrics}. */
export interface ServeMetricsOptions {
  /** The port; 0 picks a free one. Default 9464. */
  port?: number;
  /** The interface to listen on. Default `127.0.0.1`; use `0.0.0.0` for a Prometheus on another host. */
  host?: string;
  /** The metrics path. Default `/metrics`. */
  path?: string;
  /** Also serve this inspector's endpoints on the same server (opt-in). */
  inspector?: Inspector;
  /** Also serve this console's pages on the same server (opt-in; see createConsole). */
  console?: Console;
}

/** A running metrics server. */
export interface MetricsServer {
  /** The metrics URL, e.g. `http://127.0.0.1:9464/metrics`. */
  readonly url: string;
  /** The port it listens on. */
  readonly port: number;
  /** Stops listening and closes open connections (inspector streams included). */
  close(): Promise<void>;
}

/**
 * Serves `metrics` (and optionally an inspector) on a port of its own.
 *
 * @example
 * ```ts
 * const server = await serveMetrics(createMetrics(pawl), { port: 9464, host: "0.0.0.0" });
 * console.log(`scrape ${server.url}`);
 * ```
 */
export async function serveMetrics(
  metrics: Pick<PawlMetrics, "metrics" | "contentType">,
  options: ServeMetricsOptions = {},
): Promise<MetricsServer> {
  const host = options.host ?? "127.0.0.1";
  const path = options.path ?? "/metrics";
  const serve = metricsHandler(metrics, { path });
  const inspector = options.inspector;
  const ui = options.console;
  const rest = (req: IncomingMessage, res: ServerResponse) => {
    if (inspector) inspector.handler(req, res, () => serve(req, res));
    else serve(req, res);
  };
  const server = createServer((req, res) => {
    if (ui) ui.handler(req, res, () => rest(req, res));
    else rest(req, res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 9464, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const shownHost = host.includes(":") ? `[${host}]` : host;
  return {
    url: `http://${shownHost}:${port}${path}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function requestPath(req: IncomingMessage): string {
  return (req as IncomingMessage & { originalUrl?: string }).originalUrl ?? req.url ?? "/";
}

function text(
  res: ServerResponse,
  status: number,
  body: string,
  contentType = "text/plain; charset=utf-8",
): void {
  res.writeHead(status, {
    "Content-Type": contentType,
    "Cache-Control": "no-store",
    "Content-Length": Buffer.byteLength(body),
  });
  res.end(body);
}
