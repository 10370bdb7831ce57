/**
 * `pawl/observability`: Prometheus metrics built on the runtime's events, an HTTP handler and server for
 * them, the opt-in actor inspector (JSON tree and Server-Sent Events of xstate inspection events), the
 * operators' console, and the opt-in bridge to Stately's visual inspector (`connectStatelyInspector`,
 * needs the optional peer `@statelyai/inspect`).
 * The dashboard (grafana/pawl.json) and alert rules (prometheus/alerts.yml) sit beside this file.
 *
 * @example
 * ```ts
 * import { createMetrics, createInspector, serveMetrics } from "pawl/observability";
 * const metrics = createMetrics(pawl);
 * const inspector = createInspector(pawl, { token: process.env.PAWL_INSPECT_TOKEN });
 * const server = await serveMetrics(metrics, { port: 9464, inspector });
 * ```
 */
export { createMetrics } from "./metrics.js";
export type { MetricsOptions, MetricsSource, PawlMetrics } from "./metrics.js";
export { metricsHandler, serveMetrics } from "./http.js";
export type { MetricsHandlerOptions, MetricsServer, ServeMetricsOptions } from "./http.js";
export { healthHandler } from "./health-handler.js";
export type { HealthHandlerOptions, HealthSource } from "./health-handler.js";
export { InsecureSurfaceError } from "./access.js";
export type { SurfaceLogger } from "./http-guard.js";
export { createConsole } from "./console/console.js";
export type { Console, ConsoleNode, ConsoleOptions } from "./console/console.js";
export { createInspector } from "./inspector.js";
export type {
  ActorsView,
  BusySlot,
  Inspector,
  InspectorNode,
  InspectorOptions,
  InspectorSource,
  InspectableMachines,
  InspectableRuntime,
  RequestHandler,
} from "./inspector.js";
export { sanitize, serializeInspectionEvent } from "./sanitize.js";
export type { SanitizeOptions, StreamedInspectionEvent } from "./sanitize.js";
export {
  jobOutcomes,
  pollingModes,
  breakerStates,
  queueStatuses,
  batchSizeBuckets,
  claimDurationBuckets,
  boostLevelBuckets,
  jobDurationBuckets,
  pickupLatencyBuckets,
} from "./metric-set.js";
export type { JobOutcome } from "./metric-set.js";
export { connectStatelyInspector } from "./stately-bridge.js";
export type { StatelyBridge, StatelyBridgeNode, StatelyBridgeOptions } from "./stately-bridge.js";
