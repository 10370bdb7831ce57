/**
 * prom-client, the one place `pawl/observability` loads it. prom-client is an optional peer dependency
 * (the core never needs it), so it is imported dynamically here, with top-level await, instead of
 * statically: a static import that cannot be resolved fails with a bare ERR_MODULE_NOT_FOUND while the
 * module graph is linked, before any of pawl's code runs, whereas this turns it into a
 * MissingDependencyError that says to install prom-client. Everything else in observability/ takes the
 * classes from this file; `import type` from prom-client itself is fine, as types leave no import behind.
 */
import type * as PromClient from "prom-client";
import { importOptional } from "../src/core/errors.js";

const prom: typeof PromClient = await importOptional(
  "prom-client",
  "pawl/observability",
  () => import("prom-client"),
);

/** prom-client's classes and functions that pawl uses, loaded above. */
export const { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } = prom;
/** prom-client's counter (the type of the class above). */
export type Counter<T extends string = string> = PromClient.Counter<T>;
/** prom-client's gauge (the type of the class above). */
export type Gauge<T extends string = string> = PromClient.Gauge<T>;
/** prom-client's histogram (the type of the class above). */
export type Histogram<T extends string = string> = PromClient.Histogram<T>;
/** prom-client's registry (the type of the class above). */
export type Registry = PromClient.Registry;
