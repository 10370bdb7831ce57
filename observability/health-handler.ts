/**
 * The health probes over HTTP: `GET /healthz` (liveness) and `GET /readyz` (readiness), answered from
 * `pawl.health()` (src/logic/health.ts decides). 200 when the probe passes, 503 when it does not, with
 * the report as JSON either way so an operator sees which check failed. A stopping node answers 503 on
 * `/readyz`, so a load balancer stops sending it work while it drains. The report never carries database
 * error text or a connection URL (the checks say what was observed in pawl's own words).
 */
import type { ServerResponse } from "node:http";
import type { HealthReport } from "../src/logic/health.js";
import {
  guardHandler,
  requestUrl,
  surfaceLogger,
  type RequestHandler,
  type SurfaceLogger,
} from "./http-guard.js";

/** What {@link healthHandler} asks: a {@link Pawl} (or anything with its `health()`). */
export interface HealthSource {
  health(): Promise<HealthReport>;
}

/** Options of {@link healthHandler}. */
export interface HealthHandlerOptions {
  /** The liveness path. Default `/healthz`. */
  livePath?: string;
  /** The readiness path. Default `/readyz`. */
  readyPath?: string;
  /** Where failures answered with a 500 are logged; `false` for nowhere. Default: stderr, warnings and up. */
  logger?: SurfaceLogger;
}

/**
 * A handler serving `/healthz` and `/readyz` (other paths go to `next`, 404 without one). Mount it on
 * any node:http server, or as Express middleware; `serveMetrics` mounts it for you.
 *
 * @example
 * ```ts
 * http.createServer(healthHandler(pawl)).listen(8080); // GET /readyz: 200 running, 503 stopping
 * app.use(healthHandler(pawl));                        // Express
 * ```
 */
export function healthHandler(source: HealthSource, options: HealthHandlerOptions = {}): RequestHandler {
  const live = trim(options.livePath ?? "/healthz");
  const ready = trim(options.readyPath ?? "/readyz");
  return guardHandler(
    "health",
    async (req, res, next) => {
      const path = trim(requestUrl(req).pathname);
      if (path !== live && path !== ready) {
        if (next) next();
        else json(res, 404, { error: "not found" });
        return;
      }
      if (req.method !== "GET" && req.method !== "HEAD") {
        res.setHeader("Allow", "GET, HEAD");
        json(res, 405, { error: "method not allowed" });
        return;
      }
      const report = await source.health();
      const ok = path === live ? report.live : report.ready;
      json(res, ok ? 200 : 503, report);
    },
    surfaceLogger(options.logger),
  );
}

function trim(path: string): string {
  return path.replace(/\/+$/, "") || "/";
}

function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "Content-Type": "application/json; charset=utf-8",
    "Cache-Control": "no-store",
    "Content-Length": Buffer.byteLength(text),
  });
  res.end(text);
}
