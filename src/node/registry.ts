/**
 * Registered job types: the handler and the per-type options, validated at register() so a typo in
 * an option fails at start-up, not at the first job.
 */
import { validateConcurrencyLimit } from "../input/concurrency-input.js";
import type { TypeDefaults, PayloadValidator } from "../input/enqueue-input.js";
import { validateJobType, validateQueueName } from "../input/enqueue-input.js";
import { ValidationError } from "../core/errors.js";
import { resolveRetryPolicy, type RetryPolicy } from "../logic/backoff.js";
import { resolvePriority, type Priority } from "../input/priority.js";
import type { JobContext } from "./attempt/job-context.js";
import { isStandardSchema, schemaValidator, type StandardSchema } from "../core/standard-schema.js";
import { resolveRateLimit, type RateLimit, type RateLimitOptions } from "../logic/rate-limit.js";

/** A job handler: receives the payload and the attempt's context; its return value is the job's result. */
export type Handler<P = unknown, R = unknown> = (payload: P, ctx: JobContext) => R | Promise<R>;

/** A retry schedule: a policy, or a function of the attempt number and the error giving the delay in ms. */
export type RetryOption = Partial<RetryPolicy> | ((attempt: number, error: Error) => number);

/** Options of {@link Pawl.register}. */
export interface RegisterOptions<P = unknown> {
  /** The attempt timeout (ms). Default: the runtime's `defaultTimeoutMs` (30 minutes). */
  timeoutMs?: number;
  /** Attempts before DEAD, for jobs enqueued without their own. Default 25. */
  maxAttempts?: number;
  /** The retry backoff. Default: exponential from 1 s, doubling, capped at 1 h, 20% jitter. */
  retry?: RetryOption;
  /** The target service: jobs of this type share that service's circuit breaker. */
  service?: string;
  /** A resource whose cluster-wide permits (capacity from config `resources`) each attempt holds. */
  resource?: string;
  /**
   * At most `limit` attempts start in any window of `perMs`, across the cluster: per type, or per value
   * of `key(payload)` (docs/rate-limits.md). A job over the limit waits for the window's next opening
   * without using an attempt.
   */
  rateLimit?: RateLimitOptions<P>;
  /**
   * Checks the payload at enqueue and before each attempt; a rejected payload is never run. A function
   * (throw, or return false or a message, to reject), or a Standard Schema (zod, valibot, arktype, ...),
   * which also gives the handler's payload type when the task map declares none. A schema must validate
   * synchronously: one that answers with a Promise rejects the payload (see src/core/standard-schema.ts).
   */
  validate?: PayloadValidator | StandardSchema<P, unknown>;
  /** The default queue of the type's jobs. */
  queue?: string;
  /** The default priority of the type's jobs. */
  priority?: Priority;
  /**
   * The limit of this type's jobs enqueued with a `concurrencyKey` and no `concurrencyLimit` of their
   * own: at most this many jobs of one key run at once, across the cluster (docs/fairness.md).
   */
  concurrencyLimit?: number;
  /**
   * Errors for which this returns true go straight to DEAD (besides NonRetryableError and Discard).
   *
   * @deprecated Throw a `NonRetryableError` from the handler (wrap the error: `new NonRetryableError(e.message,
   *   { cause: e })`), the one documented way to end a job without retries. This option still works.
   */
  nonRetryable?: (error: Error) => boolean;
  /** @internal Type parameter carrier. */
  readonly __payload?: P;
}

/** A registered type with its options resolved. */
export interface JobType {
  type: string;
  handler: Handler;
  timeoutMs: number | undefined;
  maxAttempts: number | undefined;
  retry: RetryPolicy | ((attempt: number, error: Error) => number);
  service: string | undefined;
  resource: string | undefined;
  rateLimit: RateLimit | undefined;
  validate: PayloadValidator | undefined;
  queue: string | undefined;
  priority: Priority | undefined;
  /** The default concurrency limit for keyed jobs of the type (absent: none). */
  concurrencyLimit?: number | undefined;
  nonRetryable: ((error: Error) => boolean) | undefined;
}

const keys = new Set([
  "timeoutMs",
  "maxAttempts",
  "retry",
  "service",
  "resource",
  "rateLimit",
  "validate",
  "queue",
  "priority",
  "concurrencyLimit",
  "nonRetryable",
]);

function int(name: string, v: unknown, min: number, max: number): number | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max) {
    throw new ValidationError(
      "INVALID_OPTION",
      `invalid ${name} ${JSON.stringify(v)}: use an integer from ${min} to ${max}`,
    );
  }
  return v;
}

function label(name: string, v: unknown): string | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== "string" || !/^[A-Za-z0-9_.:\-/]{1,100}$/.test(v)) {
    throw new ValidationError(
      "INVALID_OPTION",
      `invalid ${name} ${JSON.stringify(v)}: use 1-100 letters, digits or _.:-/`,
    );
  }
  return v;
}

/** Validates a registration. @throws ValidationError naming the bad option. */
export function resolveJobType(type: string, handler: unknown, options: RegisterOptions = {}): JobType {
  validateJobType(type);
  if (typeof handler !== "function") {
    throw new ValidationError("INVALID_OPTION", `the handler of ${type} must be a function`);
  }
  for (const k of Object.keys(options)) {
    if (!keys.has(k))
      throw new ValidationError("UNKNOWN_OPTION", `unknown register option ${JSON.stringify(k)} for ${type}`);
  }
  // The one place a validator is normalised: a Standard Schema becomes a validator function here, so
  // enqueue, flows, schedules, pawl/testing and the attempt's payload check all run a function.
  const validate = isStandardSchema(options.validate) ? schemaValidator(options.validate) : options.validate;
  if (validate !== undefined && typeof validate !== "function") {
    throw new ValidationError(
      "INVALID_OPTION",
      `validate of ${type} must be a function or a Standard Schema (zod, valibot, arktype, ...)`,
    );
  }
  if (options.nonRetryable !== undefined && typeof options.nonRetryable !== "function") {
    throw new ValidationError("INVALID_OPTION", `nonRetryable of ${type} must be a function`);
  }
  const retry = options.retry;
  if (options.priority !== undefined) resolvePriority(options.priority);
  return {
    type,
    handler: handler as Handler,
    timeoutMs: int("timeoutMs", options.timeoutMs, 1, 2 ** 31 - 1),
    maxAttempts: int("maxAttempts", options.maxAttempts, 1, 1000),
    retry: typeof retry === "function" ? retry : resolveRetryPolicy(retry),
    service: label("service", options.service),
    resource: label("resource", options.resource),
    rateLimit:
      options.rateLimit === undefined
        ? undefined
        : resolveRateLimit(`rateLimit of ${type}`, options.rateLimit, true, "INVALID_OPTION"),
    validate,
    queue: options.queue === undefined ? undefined : validateQueueName(options.queue),
    priority: options.priority,
    concurrencyLimit:
      options.concurrencyLimit === undefined ? undefined : validateConcurrencyLimit(options.concurrencyLimit),
    nonRetryable: options.nonRetryable,
  };
}

/**
 * The enqueue defaults a registered type contributes. The timeout is left out on purpose: a row stores
 * only an explicit per-job timeout, so changing a type's timeout applies to jobs already enqueued.
 */
export function typeDefaults(t: JobType): TypeDefaults {
  return {
    ...(t.priority !== undefined ? { priority: t.priority } : {}),
    ...(t.maxAttempts !== undefined ? { maxAttempts: t.maxAttempts } : {}),
    ...(t.queue !== undefined ? { queue: t.queue } : {}),
    ...(t.validate !== undefined ? { validate: t.validate } : {}),
    ...(t.concurrencyLimit !== undefined ? { concurrencyLimit: t.concurrencyLimit } : {}),
  };
}
