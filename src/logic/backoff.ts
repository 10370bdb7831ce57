/**
 * Retry backoff as plain maths. The base schedule (`backoffDelayMs`) is exact and deterministic so it can
 * be tested to the millisecond; jitter is a separate step that takes its randomness as an argument, so
 * nothing here reads a clock or calls `Math.random()`.
 */

import { readNumbers } from "./config-check.js";
import { ValidationError } from "../core/errors.js";

/** How a failed job's next attempt is delayed. */
export interface RetryPolicy {
  /** Delay before the second attempt (after the first failure), in ms. `>= 0`. */
  baseMs: number;
  /** Growth per further failure. `>= 1`; `1` gives a constant delay. */
  factor: number;
  /** Upper bound of the base schedule, in ms. `>= baseMs`. Jitter only ever shortens, so this is a hard cap. */
  maxMs: number;
  /** Fraction of the delay that is randomised, `0..1`: `0.2` spreads delays over `[0.8 * d, d]`. */
  jitter: number;
}

/** The defaults: 1 s, doubling, capped at one hour, 20 % jitter. */
export const defaultRetryPolicy: RetryPolicy = { baseMs: 1000, factor: 2, maxMs: 3_600_000, jitter: 0.2 };

/**
 * Completes a partial retry policy with {@link defaultRetryPolicy} and validates it.
 *
 * @throws ValidationError `INVALID_CONFIG` for unknown keys, non-finite numbers, `baseMs < 0`,
 *   `factor < 1`, `maxMs < baseMs`, or `jitter` outside `0..1`.
 *
 * @example
 * ```ts
 * resolveRetryPolicy({ baseMs: 500 }); // { baseMs: 500, factor: 2, maxMs: 3_600_000, jitter: 0.2 }
 * resolveRetryPolicy({ factor: 0.5 }); // throws: retryPolicy.factor must be >= 1, got 0.5
 * ```
 */
export function resolveRetryPolicy(partial?: Partial<RetryPolicy>): RetryPolicy {
  const p = readNumbers("retryPolicy", defaultRetryPolicy, partial);
  if (p.baseMs < 0) invalid("baseMs", p.baseMs, "must be >= 0");
  if (p.factor < 1) invalid("factor", p.factor, "must be >= 1");
  if (p.maxMs < p.baseMs) invalid("maxMs", p.maxMs, `must be >= baseMs (${p.baseMs})`);
  if (p.jitter < 0 || p.jitter > 1) invalid("jitter", p.jitter, "must be between 0 and 1");
  return p;
}

/**
 * The base schedule, without jitter: attempt 1 waits `baseMs`, attempt n waits
 * `min(maxMs, baseMs * factor^(n-1))`. `attempt` is the number of the attempt that just failed; values
 * below 1 (and NaN) count as 1, fractions are floored. Huge attempts give `maxMs`, never Infinity or NaN.
 *
 * @example
 * ```ts
 * backoffDelayMs(1, defaultRetryPolicy); // 1000
 * backoffDelayMs(4, defaultRetryPolicy); // 8000
 * backoffDelayMs(1e9, defaultRetryPolicy); // 3_600_000
 * ```
 */
export function backoffDelayMs(attempt: number, policy: RetryPolicy): number {
  const n = attempt >= 1 ? Math.floor(attempt) : 1;
  // Guards against NaN: 0 * Infinity, and 1 ** Infinity for an infinite attempt. Any other overflow is
  // Infinity, which the min() turns into maxMs.
  if (policy.baseMs === 0) return 0;
  const growth = policy.factor === 1 ? 1 : policy.factor ** (n - 1);
  return Math.min(policy.maxMs, policy.baseMs * growth);
}

/**
 * Randomises a delay downwards: the result is uniform over `[delayMs * (1 - jitter), delayMs]` as `random`
 * goes over `[0, 1)`, so the cap of the base schedule is never exceeded. Rounded to whole ms.
 *
 * @param random A number in `[0, 1)`, e.g. `Math.random()`; `0` keeps the full delay.
 * @throws ValidationError `INVALID_OPTION` when `delayMs` is negative or not finite, `jitter` is outside
 *   `0..1`, or `random` is outside `[0, 1)`.
 *
 * @example
 * ```ts
 * applyJitter(1000, 0.2, 0); // 1000
 * applyJitter(1000, 0.2, 0.5); // 900
 * ```
 */
export function applyJitter(delayMs: number, jitter: number, random: number): number {
  if (!(delayMs >= 0 && Number.isFinite(delayMs))) badArgument("delayMs", delayMs, "a finite number >= 0");
  if (!(jitter >= 0 && jitter <= 1)) badArgument("jitter", jitter, "between 0 and 1");
  if (!(random >= 0 && random < 1)) badArgument("random", random, "in [0, 1)");
  return Math.round(delayMs * (1 - jitter * random));
}

/**
 * The delay before the next attempt after `attempt` failed: the base schedule with the policy's jitter.
 *
 * @example
 * ```ts
 * const nextRunAt = now + retryDelayMs(job.attempt, policy, Math.random());
 * ```
 */
export function retryDelayMs(attempt: number, policy: RetryPolicy, random: number): number {
  return applyJitter(backoffDelayMs(attempt, policy), policy.jitter, random);
}

function invalid(field: keyof RetryPolicy, value: number, rule: string): never {
  throw new ValidationError("INVALID_CONFIG", `retryPolicy.${field} ${rule}, got ${value}`);
}

function badArgument(name: string, value: number, rule: string): never {
  throw new ValidationError("INVALID_OPTION", `${name} must be ${rule}, got ${value}`);
}
