/**
 * Serving metrics over HTTP: {@link metricsHandler} is a request listener for node:http that also works
 * as Express/Connect middleware and, through `reply.raw`, in Fastify; {@link serveMetrics} runs a small
 * server of its own for applications that have none, with the health probes and, opt-in, the inspector
 * and the console. Every handler goes through the shared guard (http-guard.ts), so no request, however
 * malformed, throws into the host; a failed scrape is a 500 whose cause is logged, not sent.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { assertExposable } from "./access.js";
import type { Console } from "./console/console.js";
import { healthHandler, type HealthSource } from "./health-handler.js";
import {
  guardHandler,
  requestUrl,
  surfaceLogger,
  type RequestHandler,
  type SurfaceLogger,
} from "./http-guard.js";
import type { Inspector } from "./inspector.js";
import type { PawlMetrics } from "./metrics.js";

/** Options of {@link metricsHandler}. */
export interface MetricsHandlerOptions {
  /**
   * Serve only this path (other paths go to `next`, or get 404 without one). Default: serve every
   * request the handler is given, which suits routers (`app.get("/metrics", handler)`).
   */
  path?: string;
  /** Where failed scrapes are logged; `false` for nowhere. Default: stderr, warnings and up. */
  logger?: SurfaceLogger;
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
  return guardHandler(
    "metrics",
    async (req, res, next) => {
      if (path !== undefined && (requestUrl(req).pathname.replace(/\/+$/, "") || "/") !== path) {
        if (next) next();
        else text(res, 404, "not found\n");
        return;
      }
      if (req.method !== "GET" && req.method !== "HEAD") {
        res.setHeader("Allow", "GET, HEAD");
        text(res, 405, "method not allowed\n");
        return;
      }
      text(res, 200, await metrics.metrics(), metrics.contentType);
    },
    surfaceLogger(options.logger),
  );
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
  /**
   * What `/healthz` and `/readyz` report. Default: the node `metrics` were created from (its
   * `health()`); `null` serves no probes.
   */
  health?: HealthSource | null;
  /** Where failures answered with a 500 are logged; `false` for nowhere. Default: stderr, warnings and up. */
  logger?: SurfaceLogger;
}

/** A running metrics server. */
export interface MetricsServer {
  /** The metrics URL, e.g. `http://127.0.0.1:9464/metrics`. */
  readonly url: string;
  /** The server's origin, e.g. `http://127.0.0.1:9464` (probes at `/healthz`, `/readyz`). */
  readonly origin: string;
  /** The port it listens on. */
  readonly port: number;
  /** Stops listening and closes open connections (inspector streams included). */
  close(): Promise<void>;
}

/**
 * Serves `metrics`, the health probes (`/healthz`, `/readyz`) and, opt-in, an inspector and a console,
 * on a port of its own.
 *
 * @throws InsecureSurfaceError when a console or inspector without a token would listen beyond loopback.
 * @example
 * ```ts
 * const server = await serveMetrics(createMetrics(pawl), { port: 9464, host: "0.0.0.0" });
 * console.log(`scrape ${server.url}`);
 * ```
 */
export async function serveMetrics(
  metrics: Pick<PawlMetrics, "metrics" | "contentType" | "health">,
  options: ServeMetricsOptions = {},
): Promise<MetricsServer> {
  const host = options.host ?? "127.0.0.1";
  const path = options.path ?? "/metrics";
  if (options.console) assertExposable("the console", host, { required: options.console.tokenRequired });
  if (options.inspector)
    assertExposable("the inspector", host, { required: options.inspector.tokenRequired });
  const log = options.logger;
  const healthSource = options.health === undefined ? metricsHealth(metrics) : options.health;
  // Each surface answers its own paths and hands the rest down: console, inspector, probes, metrics.
  const chain: RequestHandler[] = [
    ...(options.console ? [options.console.handler] : []),
    ...(options.inspector ? [options.inspector.handler] : []),
    ...(healthSource ? [healthHandler(healthSource, { ...(log !== undefined ? { logger: log } : {}) })] : []),
    metricsHandler(metrics, { path, ...(log !== undefined ? { logger: log } : {}) }),
  ];
  const serve = (req: IncomingMessage, res: ServerResponse, i: number): void => {
    const handler = chain[i];
    if (handler) handler(req, res, () => serve(req, res, i + 1));
    else text(res, 404, "not found\n");
  };
  const server = createServer(guardHandler("server", (req, res) => serve(req, res, 0), surfaceLogger(log)));
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
    origin: `http://${shownHost}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** The health of the node `metrics` were made from, when it has one. */
function metricsHealth(
  metrics: Pick<PawlMetrics, "metrics" | "contentType" | "health">,
): HealthSource | null {
  const health = metrics.health;
  return health ? { health } : null;
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
