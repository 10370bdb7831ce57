/**
 * Options every coordinator takes, whatever its transport, and the one backoff schedule they share.
 *
 * They are validated where they are constructed (here), so a bad value fails when the coordinator is
 * built, with the option's name in the message, instead of as odd timing at run time. The backoff is a
 * pure function of the attempt number so the schedule can be checked exactly; jitter is applied apart.
 */
import { systemClock, type Clock } from "../src/core/clock.js";
import { ValidationError } from "../src/core/errors.js";
import { silentLogger, type Logger } from "../src/core/logger.js";
import { DEFAULT_COALESCE_MS } from "./coalescer.js";

/** How a transport retries after losing its server. */
export interface ReconnectOptions {
  /** Delay before the first retry, in ms. Default 200. */
  initialDelayMs?: number;
  /** Upper bound of the delay between retries, in ms. Default 10,000. */
  maxDelayMs?: number;
}

/** Options shared by every coordinator. */
export interface CoordinatorOptions {
  /** This node's id: the `source` of its hints, and how it recognises (and ignores) its own. */
  nodeId: string;
  /** Where the coordinator logs. Default: silent. */
  logger?: Logger;
  /** The coalescing window for work hints in ms (0 disables coalescing). Default 5. */
  coalesceMs?: number;
  /** The clock for the coalescer's timers. Default: the system clock. */
  clock?: Clock;
  /**
   * How long `start()` waits for the first connection before resolving anyway (the transport keeps
   * connecting in the background), in ms. Default 3,000.
   */
  startTimeoutMs?: number;
  /** Reconnection backoff. Retries never stop; only their spacing is configurable. */
  reconnect?: ReconnectOptions;
}

/** {@link CoordinatorOptions} with defaults applied. */
export interface ResolvedCoordinatorOptions {
  nodeId: string;
  logger: Logger;
  coalesceMs: number;
  clock: Clock;
  startTimeoutMs: number;
  reconnect: Required<ReconnectOptions>;
}

/** Checks a non-negative integer option and names it in the error. */
export function coordinatorInt(name: string, value: unknown, min: number, max: number): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    throw new ValidationError(
      "INVALID_COORDINATOR",
      `coordinator option ${name} must be an integer from ${min} to ${max}, got ${String(value)}`,
    );
  }
  return value;
}

/** Applies defaults to {@link CoordinatorOptions} and validates them. */
export function resolveCoordinatorOptions(options: CoordinatorOptions): ResolvedCoordinatorOptions {
  if (typeof options.nodeId !== "string" || options.nodeId.length === 0 || options.nodeId.length > 200) {
    throw new ValidationError(
      "INVALID_COORDINATOR",
      "coordinator option nodeId must be a 1-200 character string",
    );
  }
  const initialDelayMs = coordinatorInt(
    "reconnect.initialDelayMs",
    options.reconnect?.initialDelayMs ?? 200,
    1,
    600_000,
  );
  const maxDelayMs = coordinatorInt(
    "reconnect.maxDelayMs",
    options.reconnect?.maxDelayMs ?? Math.max(10_000, initialDelayMs),
    initialDelayMs,
    600_000,
  );
  return {
    nodeId: options.nodeId,
    logger: options.logger ?? silentLogger,
    coalesceMs: coordinatorInt("coalesceMs", options.coalesceMs ?? DEFAULT_COALESCE_MS, 0, 60_000),
    clock: options.clock ?? systemClock,
    startTimeoutMs: coordinatorInt("startTimeoutMs", options.startTimeoutMs ?? 3_000, 0, 600_000),
    reconnect: { initialDelayMs, maxDelayMs },
  };
}

/**
 * The delay before retry number `attempt` (1-based), without jitter: doubling from `initialDelayMs`,
 * capped at `maxDelayMs`.
 *
 * @example
 * ```ts
 * backoffDelay(1, { initialDelayMs: 200, maxDelayMs: 1000 }); // 200
 * backoffDelay(4, { initialDelayMs: 200, maxDelayMs: 1000 }); // 1000
 * ```
 */
export function backoffDelay(attempt: number, reconnect: Required<ReconnectOptions>): number {
  const exponent = Math.min(Math.max(0, attempt - 1), 30);
  return Math.min(reconnect.maxDelayMs, reconnect.initialDelayMs * 2 ** exponent);
}

/** Spreads a delay by ±`fraction` so nodes that lost the server together do not retry in lockstep. */
export function withJitter(delayMs: number, fraction = 0.2, random: () => number = Math.random): number {
  return Math.max(0, Math.round(delayMs * (1 + (random() * 2 - 1) * fraction)));
}
