/**
 * The `tracing` option of createPawl / PawlClient (docs/tracing.md), validated once at construction.
 */
import { ValidationError } from "../core/errors.js";
import { describeValue } from "../core/input-text.js";

/**
 * A tracer provider (an OpenTelemetry `TracerProvider`), typed structurally so pawl's types need no
 * `@opentelemetry/api` installed.
 */
export interface TracerProviderLike {
  getTracer(name: string, version?: string): unknown;
}

/** Options of OpenTelemetry tracing (`tracing` in createPawl's options). */
export interface TracingOptions {
  /**
   * The tracer provider to use instead of the global one. Given, tracing is on whether or not a provider
   * is registered globally; otherwise it is on while one is (checked per operation, so a provider
   * registered after createPawl is picked up).
   */
  tracerProvider?: TracerProviderLike;
  /**
   * How an attempt's span relates to its producer's: `child` (the default) continues the enqueuer's trace
   * (one trace from the request that enqueued to the last attempt) and also links to the producer span;
   * `link` starts a trace per attempt that only links to it, for jobs that run long after their enqueue
   * (recurring fires, day-long delays), where one trace would span days.
   */
  attemptParent?: "child" | "link";
  /**
   * Also trace the node's batched internals: each claim (`pawl claim`), each outcome flush and each wakeup
   * (`pawl wakeup`). Noisy (a busy node claims many times a second): off by default.
   */
  internals?: boolean;
}

/** Tracing as resolved from the option; null: off. */
export interface ResolvedTracing {
  tracerProvider: TracerProviderLike | null;
  attemptParent: "child" | "link";
  internals: boolean;
}

const keys = new Set(["tracerProvider", "attemptParent", "internals"]);

/**
 * Resolves `tracing`: omitted or `true` is on when `@opentelemetry/api` is installed and a provider is
 * registered; `false` is off; an object tunes it.
 *
 * @throws ValidationError `INVALID_CONFIG` for a bad value.
 */
export function resolveTracing(value: unknown): ResolvedTracing | null {
  if (value === false) return null;
  const fail = (why: string) => new ValidationError("INVALID_CONFIG", `invalid tracing: ${why}`);
  if (value === undefined || value === true) {
    return { tracerProvider: null, attemptParent: "child", internals: false };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw fail(`${describeValue(value)}: use true, false or an object`);
  }
  const o = value as Record<string, unknown>;
  for (const key of Object.keys(o)) {
    if (!keys.has(key)) throw fail(`unknown option ${JSON.stringify(key)}; known: ${[...keys].join(", ")}`);
  }
  const provider = o.tracerProvider;
  if (
    provider !== undefined &&
    (typeof provider !== "object" ||
      provider === null ||
      typeof (provider as { getTracer?: unknown }).getTracer !== "function")
  ) {
    throw fail("tracerProvider must be an OpenTelemetry TracerProvider (an object with getTracer)");
  }
  const attemptParent = o.attemptParent ?? "child";
  if (attemptParent !== "child" && attemptParent !== "link") {
    throw fail(`attemptParent ${describeValue(attemptParent)}: use child or link`);
  }
  const internals = o.internals ?? false;
  if (typeof internals !== "boolean") throw fail(`internals ${describeValue(internals)}: use true or false`);
  return {
    tracerProvider: (provider as TracerProviderLike | undefined) ?? null,
    attemptParent,
    internals,
  };
}
