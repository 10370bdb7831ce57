/**
 * Turns what a caller passed to enqueue into a row to insert, or a typed error. Everything is checked
 * before any SQL runs, so bad input never writes anything.
 */
import { ValidationError } from "../core/errors.js";
import { describeValue, storableText } from "../core/input-text.js";
import { serializePayload } from "./payload.js";
import { resolvePriority, type Priority } from "./priority.js";
import type { SqlClient } from "../db/sql.js";
import { validateConcurrency } from "./concurrency-input.js";

/** Options of {@link Pawl.enqueue}. */
export interface EnqueueOptions {
  /** A priority name or 0-100; higher runs first. Default: the type's, else `normal` (10). */
  priority?: Priority;
  /** Run no earlier than this many milliseconds from the database's now. */
  delayMs?: number;
  /** Run no earlier than this time. Exclusive with `delayMs`. */
  runAt?: Date;
  /** The attempt timeout. Default: the type's, else the runtime's (30 minutes). */
  timeoutMs?: number;
  /** Attempts before the job goes DEAD. Default: the type's, else 25. */
  maxAttempts?: number;
  /** At most one live (PENDING or RUNNING) job per key: a second enqueue returns the live one. */
  uniqueKey?: string;
  /** The queue. Default: the type's, else `default`. */
  queue?: string;
  /**
   * Groups the job with others (a tenant id, say: any 1-500 characters, nothing registered) for
   * `concurrencyLimit` and for fair claiming across keys (docs/fairness.md).
   */
  concurrencyKey?: string;
  /**
   * At most this many jobs of `concurrencyKey` run at once, across every node (an integer from 1).
   * Default: the type's `concurrencyLimit`, else no limit. Needs `concurrencyKey`.
   */
  concurrencyLimit?: number;
  /**
   * The caller's transaction: the job exists once that commits. A pg client, or any object whose
   * `query(text, values)` resolves to `{ rows }` (an adapter over a query builder's transaction).
   */
  client?: SqlClient;
}

/** Defaults and checks a registered type contributes to enqueue. */
export interface TypeDefaults {
  priority?: Priority;
  timeoutMs?: number;
  maxAttempts?: number;
  queue?: string;
  /** The limit of a job enqueued with a `concurrencyKey` and no `concurrencyLimit` of its own. */
  concurrencyLimit?: number;
  /** Rejects a payload by throwing, or by returning false or a message. */
  validate?: PayloadValidator;
}

/** A per-type payload check: throw, or return false or a message, to reject. */
export type PayloadValidator = (payload: unknown) => void | boolean | string | undefined;

/** A validated row, ready for the insert statement. */
export interface NewJob {
  type: string;
  queue: string;
  payloadJson: string;
  priority: number;
  runAt: Date | null;
  delayMs: number;
  timeoutMs: number | null;
  maxAttempts: number;
  uniqueKey: string | null;
  /** The concurrency key (migration 0011); absent or null: none. */
  concurrencyKey?: string | null;
  /** The key's limit as this job states it; absent or null: no limit. */
  concurrencyLimit?: number | null;
  /**
   * The JSON text of the producer span's trace context (src/tracing/carrier.ts), set by tracing just
   * before the insert; absent without tracing.
   */
  traceContext?: string | null;
}

const optionKeys = new Set([
  "priority",
  "delayMs",
  "runAt",
  "timeoutMs",
  "maxAttempts",
  "uniqueKey",
  "queue",
  "concurrencyKey",
  "concurrencyLimit",
  "client",
]);
/** The longest job type name. */
export const maxTypeLength = 200;
/** The longest queue name. */
export const maxQueueLength = 100;
/** The longest unique key. */
export const maxUniqueKeyLength = 500;
/** The default number of attempts. */
export const defaultMaxAttempts = 25;
const maxInt32 = 2_147_483_647;

function name(kind: "job type" | "queue", value: unknown, max: number): string {
  const code = kind === "job type" ? "INVALID_JOB_TYPE" : "INVALID_OPTION";
  // Text PostgreSQL cannot store gets the one storable-text message; then the stricter name rules.
  if (typeof value === "string") storableText(kind, value, code);
  if (typeof value !== "string" || value.length === 0 || value.length > max || /[\s\p{Cc}]/u.test(value)) {
    throw new ValidationError(
      code,
      `invalid ${kind} ${describeValue(value)}: use 1-${max} characters without spaces or control characters`,
    );
  }
  return value;
}

/** Validates a job type name. @throws ValidationError `INVALID_JOB_TYPE`. */
export function validateJobType(type: unknown): string {
  return name("job type", type, maxTypeLength);
}

/** Validates a queue name. @throws ValidationError `INVALID_OPTION`. */
export function validateQueueName(queue: unknown): string {
  return name("queue", queue, maxQueueLength);
}

function positiveInt(option: string, value: unknown, min: number, max: number): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    throw new ValidationError(
      "INVALID_OPTION",
      `invalid ${option} ${describeValue(value)}: use an integer from ${min} to ${max}`,
    );
  }
  return value;
}

/** Runs a type's validator; a throw, `false` or a string rejects. @throws ValidationError `VALIDATION_FAILED`. */
export function runValidator(type: string, validate: PayloadValidator | undefined, payload: unknown): void {
  if (!validate) return;
  let verdict: ReturnType<PayloadValidator>;
  try {
    verdict = validate(payload);
  } catch (error) {
    throw new ValidationError(
      "VALIDATION_FAILED",
      `payload rejected by the validator of ${type}: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
  if (verdict === false || typeof verdict === "string") {
    const why = typeof verdict === "string" ? verdict : "validator returned false";
    throw new ValidationError("VALIDATION_FAILED", `payload rejected by the validator of ${type}: ${why}`);
  }
}

/**
 * Checks a `client` option (of an enqueue or a flow): absent, or something with a `query` method (a pg
 * client or any {@link SqlClient}). @throws ValidationError `INVALID_OPTION`.
 */
export function validateClientOption(client: unknown): void {
  if (
    client !== undefined &&
    (typeof client !== "object" ||
      client === null ||
      typeof (client as { query?: unknown }).query !== "function")
  ) {
    throw new ValidationError(
      "INVALID_OPTION",
      "client must be a pg client or a SqlClient (an object with query(text, values))",
    );
  }
}

/**
 * Validates one enqueue call.
 *
 * @throws ValidationError for any bad field; nothing has been written.
 */
export function buildNewJob(
  type: unknown,
  payload: unknown,
  options: EnqueueOptions | undefined,
  defaults: TypeDefaults | undefined,
  maxPayloadBytes: number,
): NewJob {
  const t = validateJobType(type);
  const o: Record<string, unknown> = (options ?? {}) as Record<string, unknown>;
  if (typeof o !== "object" || o === null || Array.isArray(o)) {
    throw new ValidationError("INVALID_OPTION", "enqueue options must be an object");
  }
  for (const key of Object.keys(o)) {
    if (!optionKeys.has(key)) {
      throw new ValidationError(
        "UNKNOWN_OPTION",
        `unknown enqueue option ${JSON.stringify(key)}; known: ${[...optionKeys].join(", ")}`,
      );
    }
  }
  const payloadJson = serializePayload(payload === undefined ? {} : payload, maxPayloadBytes);
  runValidator(t, defaults?.validate, payload);

  if (o.delayMs !== undefined && o.runAt !== undefined) {
    throw new ValidationError("INVALID_OPTION", "give delayMs or runAt, not both");
  }
  let delayMs = 0;
  if (o.delayMs !== undefined) {
    if (typeof o.delayMs !== "number" || !Number.isFinite(o.delayMs) || o.delayMs < 0) {
      throw new ValidationError(
        "INVALID_OPTION",
        `invalid delayMs ${describeValue(o.delayMs)}: use a finite number of milliseconds >= 0`,
      );
    }
    delayMs = Math.round(o.delayMs);
  }
  let runAt: Date | null = null;
  if (o.runAt !== undefined) {
    if (!(o.runAt instanceof Date) || Number.isNaN(o.runAt.getTime())) {
      throw new ValidationError("INVALID_OPTION", `invalid runAt ${String(o.runAt)}: use a valid Date`);
    }
    runAt = o.runAt;
  }
  const uniqueKey = o.uniqueKey === undefined ? null : storableText("uniqueKey", o.uniqueKey);
  if (uniqueKey !== null && (uniqueKey.length === 0 || uniqueKey.length > maxUniqueKeyLength)) {
    throw new ValidationError(
      "INVALID_OPTION",
      `invalid uniqueKey ${describeValue(uniqueKey)}: use a string of 1-${maxUniqueKeyLength} characters`,
    );
  }
  validateClientOption(o.client);
  const concurrency = validateConcurrency(o.concurrencyKey, o.concurrencyLimit, defaults?.concurrencyLimit);
  const timeout = o.timeoutMs ?? defaults?.timeoutMs;
  const attempts = o.maxAttempts ?? defaults?.maxAttempts ?? defaultMaxAttempts;
  return {
    type: t,
    queue: validateQueueName(o.queue ?? defaults?.queue ?? "default"),
    payloadJson,
    priority: resolvePriority(o.priority ?? defaults?.priority ?? "normal"),
    runAt,
    delayMs,
    timeoutMs: timeout === undefined ? null : positiveInt("timeoutMs", timeout, 1, maxInt32),
    maxAttempts: positiveInt("maxAttempts", attempts, 1, 1000),
    uniqueKey,
    ...concurrency,
  };
}
