/**
 * `@opentelemetry/api`, the one place pawl loads it. It is an optional peer dependency: without it
 * installed, tracing is off and nothing of it is loaded. It is imported dynamically, once per process, and
 * a package that cannot be found (or fails to load) means "no tracing", never an error in the host: pawl
 * lives in someone else's process, and tracing is never worth failing a job for.
 */
import type * as Api from "@opentelemetry/api";

/** The OpenTelemetry API module (its types leave no import behind). */
export type OtelApi = typeof Api;

let loading: Promise<OtelApi | null> | undefined;

/**
 * The API, or null when it cannot be loaded. `load` is for tests (a package that is not installed).
 *
 * @example
 * ```ts
 * const api = await loadOtelApi();
 * if (api) api.trace.getTracer("pawl");
 * ```
 */
export function loadOtelApi(load?: () => Promise<unknown>): Promise<OtelApi | null> {
  if (load) return load().then(moduleApi, () => null);
  loading ??= import("@opentelemetry/api").then(moduleApi, () => null);
  return loading;
}

/** The module's API: its namespace, or (an old CommonJS build loaded through interop) its `default`. */
function moduleApi(m: unknown): OtelApi | null {
  const api = m as Partial<OtelApi> & { default?: Partial<OtelApi> };
  if (api.trace && api.context && api.propagation) return api as OtelApi;
  const d = api.default;
  return d?.trace && d.context && d.propagation ? (d as OtelApi) : null;
}
