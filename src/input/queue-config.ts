/**
 * The `queues` option of createPawl: per-queue concurrency on one node (`{ default: 10, mail: 5 }`).
 * Validated here, where it is read, so a bad value is a clear error at createPawl.
 */
import { ValidationError } from "../core/errors.js";
import { validateQueueName } from "./enqueue-input.js";

/** The most slots one queue (and all queues together) may have on a node. */
export const maxQueueConcurrency = 10_000;

/** Resolved `queues`: the limit of each queue, and the node's concurrency (their sum). */
export interface QueueLimits {
  limits: ReadonlyMap<string, number>;
  concurrency: number;
}

/**
 * Validates `queues` against `concurrency`. The node's concurrency is the sum of the limits; an explicit
 * `concurrency` must equal it (a smaller one would let one full queue take slots another is promised).
 * Returns null when `queues` is not given.
 *
 * @throws ValidationError `INVALID_CONFIG` naming the queue.
 * @example
 * ```ts
 * resolveQueueLimits({ default: 10, mail: 5 }, undefined); // { limits: Map { default: 10, mail: 5 }, concurrency: 15 }
 * ```
 */
export function resolveQueueLimits(queues: unknown, concurrency: unknown): QueueLimits | null {
  if (queues === undefined) return null;
  if (typeof queues !== "object" || queues === null || Array.isArray(queues)) {
    throw new ValidationError(
      "INVALID_CONFIG",
      "queues must be an object of queue name -> concurrency, e.g. { default: 10 }",
    );
  }
  const limits = new Map<string, number>();
  let sum = 0;
  for (const [name, limit] of Object.entries(queues as Record<string, unknown>)) {
    try {
      validateQueueName(name);
    } catch (error) {
      throw new ValidationError("INVALID_CONFIG", `queues: ${(error as Error).message}`);
    }
    if (typeof limit !== "number" || !Number.isInteger(limit) || limit < 1 || limit > maxQueueConcurrency) {
      throw new ValidationError(
        "INVALID_CONFIG",
        `queues.${name} must be an integer from 1 to ${maxQueueConcurrency}, got ${JSON.stringify(limit)}`,
      );
    }
    limits.set(name, limit);
    sum += limit;
  }
  if (limits.size === 0) throw new ValidationError("INVALID_CONFIG", "queues needs at least one queue");
  if (sum > maxQueueConcurrency) {
    throw new ValidationError(
      "INVALID_CONFIG",
      `queues add up to ${sum} slots; the most is ${maxQueueConcurrency}`,
    );
  }
  if (concurrency !== undefined && concurrency !== sum) {
    throw new ValidationError(
      "INVALID_CONFIG",
      `concurrency ${JSON.stringify(concurrency)} does not match queues, which add up to ${sum}: omit concurrency ` +
        "(it is the sum of the queues) or make them agree",
    );
  }
  return { limits, concurrency: sum };
}
