/**
 * prom-client, the one place `pawl/observability` loads it. prom-client is an optional peer dependency
 * (the core never needs it), so it is loaded by name when `createMetrics` first needs it, not by a static
 * import: a static import that cannot be resolved fails with a bare ERR_MODULE_NOT_FOUND while the module
 * graph is linked, before any of pawl's code runs, whereas this turns it into a MissingDependencyError that
 * says to install prom-client. It is not a top-level await either: that would make `require("pawl/observability")`
 * fail with ERR_REQUIRE_ASYNC_MODULE. prom-client is CommonJS, so a synchronous `require` gives the same
 * instance an application's own `import` does (its registry works here). Everything else in observability/
 * takes the classes from {@link promClient}; `import type` from prom-client itself is fine, as types leave
 * no import behind.
 */
import type * as PromClient from "prom-client";
import { requireOptional } from "../src/core/errors.js";

let loaded: typeof PromClient | undefined;

/** prom-client, loaded on first use; throws a MissingDependencyError naming it when it is not installed. */
export function promClient(): typeof PromClient {
  loaded ??= requireOptional<typeof PromClient>("prom-client", "pawl/observability (createMetrics)");
  return loaded;
}

/** prom-client's counter. */
export type Counter<T extends string = string> = PromClient.Counter<T>;
/** prom-client's gauge. */
export type Gauge<T extends string = string> = PromClient.Gauge<T>;
/** prom-client's histogram. */
export type Histogram<T extends string = string> = PromClient.Histogram<T>;
/** prom-client's registry. */
export type Registry = PromClient.Registry;
