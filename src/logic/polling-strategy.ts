/**
 * The adaptive polling strategy as a pure reducer: the poller feeds it each poll's result and each wakeup,
 * and sleeps for `state.delayMs`. Keeping it pure lets the whole policy be table-tested with made-up times.
 *
 * Modes:
 * - **burst** (`burstDelayMs`, 500 ms): entered on a wakeup signal, even from deep idle. A poll that finds
 *   work keeps the burst going (`burstRemaining` refills to `burstPolls`); each empty poll uses up one of
 *   `burstRemaining`, and at 0 the poller drops to normal (or straight to deep idle, below). Deep idle is
 *   not checked while a burst lasts.
 * - **normal** (2-30 s): steady state; the delay is computed as below.
 * - **deep-idle** (`deepIdleDelayMs`, 60 s): when `sample.at - lastWorkAt >= deepIdleAfterMs` (5 min). Left by
 *   the first poll that finds work, or at once by a wakeup.
 *
 * Rules of {@link afterPoll}, in order:
 * 1. The sample is appended to `window`, which keeps the last `windowSize` samples.
 * 2. `claimed > 0`: `lastWorkAt = sample.at`, `consecutiveEmpty = 0`; `claimed === 0`: `consecutiveEmpty++`.
 * 3. A full batch (`limit > 0 && claimed >= limit`) increments `consecutiveFull`; anything else resets it.
 * 4. The normal delay is
 *    `clamp(minDelayMs * emptyBackoffFactor^consecutiveEmpty, minDelayMs, maxDelayMs)`
 *    `* (0.5 + utilization)` (load factor: a busy worker polls more slowly, an idle one faster)
 *    `* trendFactor(window)` (1 - meanFill / 2: a window of full batches halves the delay),
 *    clamped to `[burstDelayMs, maxDelayMs]`.
 * 5. In burst and normal mode, `consecutiveFull >= fullBatchStreak` divides the delay by `fullBatchDivisor`;
 *    this may go below `burstDelayMs` but never below 1 ms. Delays are rounded to whole ms.
 */

import { readNumbers } from "./config-check.js";
import { ValidationError } from "../core/errors.js";

/** The three polling modes; see the file header. */
export type PollingMode = "burst" | "normal" | "deep-idle";

/** Tuning of the adaptive poller. All durations are in ms. */
export interface PollingConfig {
  /** Delay between polls in burst mode. `> 0`, `<= minDelayMs`. */
  burstDelayMs: number;
  /** Empty polls a burst lasts before falling back to normal. Integer `>= 1`. */
  burstPolls: number;
  /** Normal mode lower bound of the empty-poll backoff (before the load, trend and full-batch factors). */
  minDelayMs: number;
  /** Normal mode upper bound. `>= minDelayMs`. */
  maxDelayMs: number;
  /** Delay in deep idle. `>= maxDelayMs`. */
  deepIdleDelayMs: number;
  /** No work found for this long enters deep idle. `> 0`. */
  deepIdleAfterMs: number;
  /** Number of poll samples in the rolling window. Integer `>= 1`. */
  windowSize: number;
  /** Consecutive full batches after which the delay is divided by `fullBatchDivisor`. Integer `>= 1`. */
  fullBatchStreak: number;
  /** Divisor of the delay during a full-batch streak. `>= 1`. */
  fullBatchDivisor: number;
  /** Growth of the normal delay per consecutive empty poll. `>= 1`. */
  emptyBackoffFactor: number;
}

/** The defaults of the reference strategy: burst 500 ms, normal 2-30 s, deep idle 60 s after 5 min. */
export const defaultPollingConfig: PollingConfig = {
  burstDelayMs: 500,
  burstPolls: 4,
  minDelayMs: 2000,
  maxDelayMs: 30_000,
  deepIdleDelayMs: 60_000,
  deepIdleAfterMs: 300_000,
  windowSize: 10,
  fullBatchStreak: 3,
  fullBatchDivisor: 4,
  emptyBackoffFactor: 2,
};

/**
 * Completes a partial polling config with {@link defaultPollingConfig} and validates it.
 *
 * @throws ValidationError `INVALID_CONFIG` for unknown keys, non-finite numbers, out-of-range values
 *   (see {@link PollingConfig}) or an inconsistent ordering: `burstDelayMs <= minDelayMs <= maxDelayMs <=
 *   deepIdleDelayMs` must hold.
 *
 * @example
 * ```ts
 * resolvePollingConfig({ maxDelayMs: 10_000 });
 * resolvePollingConfig({ minDelayMs: 40_000 }); // throws: maxDelayMs must be >= minDelayMs
 * ```
 */
export function resolvePollingConfig(partial?: Partial<PollingConfig>): PollingConfig {
  const c = readNumbers("pollingConfig", defaultPollingConfig, partial);
  if (c.burstDelayMs <= 0) invalid("burstDelayMs", c.burstDelayMs, "must be > 0");
  for (const key of ["burstPolls", "windowSize", "fullBatchStreak"] as const) {
    if (!Number.isInteger(c[key]) || c[key] < 1) invalid(key, c[key], "must be an integer >= 1");
  }
  if (c.fullBatchDivisor < 1) invalid("fullBatchDivisor", c.fullBatchDivisor, "must be >= 1");
  if (c.emptyBackoffFactor < 1) invalid("emptyBackoffFactor", c.emptyBackoffFactor, "must be >= 1");
  if (c.deepIdleAfterMs <= 0) invalid("deepIdleAfterMs", c.deepIdleAfterMs, "must be > 0");
  if (c.minDelayMs < c.burstDelayMs) {
    invalid("minDelayMs", c.minDelayMs, `must be >= burstDelayMs (${c.burstDelayMs})`);
  }
  if (c.maxDelayMs < c.minDelayMs)
    invalid("maxDelayMs", c.maxDelayMs, `must be >= minDelayMs (${c.minDelayMs})`);
  if (c.deepIdleDelayMs < c.maxDelayMs) {
    invalid("deepIdleDelayMs", c.deepIdleDelayMs, `must be >= maxDelayMs (${c.maxDelayMs})`);
  }
  return c;
}

/** The result of one poll. */
export interface PollSample {
  /** When the poll ran, ms since the epoch. */
  at: number;
  /** How many jobs it claimed. */
  claimed: number;
  /** How many it asked for (the free slots); `0` means it could not claim anything. */
  limit: number;
}

/** The poller's adaptive state. Treat it as immutable; every function returns a new one. */
export interface PollingState {
  /** The current mode. */
  mode: PollingMode;
  /** How long to wait before the next poll, in whole ms. */
  delayMs: number;
  /** The last `windowSize` samples, oldest first. */
  window: readonly PollSample[];
  /** Polls in a row that claimed nothing. */
  consecutiveEmpty: number;
  /** Polls in a row that claimed a full batch. */
  consecutiveFull: number;
  /** When a poll last found work (or when polling started). */
  lastWorkAt: number;
  /** Empty polls left before a burst ends; 0 outside burst mode. */
  burstRemaining: number;
}

/**
 * The state before the first poll: normal mode, `minDelayMs`, and `lastWorkAt = now` so a fresh poller does
 * not start in deep idle.
 */
export function initialPollingState(now: number, config: PollingConfig): PollingState {
  return {
    mode: "normal",
    delayMs: config.minDelayMs,
    window: [],
    consecutiveEmpty: 0,
    consecutiveFull: 0,
    lastWorkAt: now,
    burstRemaining: 0,
  };
}

/**
 * The state after a poll; the poller then waits `delayMs`. See the file header for the rules.
 *
 * @param utilization Busy slots / concurrency; clamped to `0..1` (NaN counts as 0).
 *
 * @example
 * ```ts
 * let state = initialPollingState(clock.now(), config);
 * const claimed = await claim(limit);
 * state = afterPoll(state, { at: clock.now(), claimed: claimed.length, limit }, busy / concurrency, config);
 * clock.setTimeout(poll, state.delayMs);
 * ```
 */
export function afterPoll(
  state: PollingState,
  sample: PollSample,
  utilization: number,
  config: PollingConfig,
): PollingState {
  const window = [...state.window, sample].slice(-config.windowSize);
  const found = sample.claimed > 0;
  const full = sample.limit > 0 && sample.claimed >= sample.limit;
  const next: PollingState = {
    ...state,
    window,
    lastWorkAt: found ? sample.at : state.lastWorkAt,
    consecutiveEmpty: found ? 0 : state.consecutiveEmpty + 1,
    consecutiveFull: full ? state.consecutiveFull + 1 : 0,
  };
  const streak = next.consecutiveFull >= config.fullBatchStreak;

  if (state.mode === "burst") {
    const burstRemaining = found ? config.burstPolls : state.burstRemaining - 1;
    if (burstRemaining > 0) {
      return { ...next, mode: "burst", burstRemaining, delayMs: finish(config.burstDelayMs, streak, config) };
    }
  }
  if (sample.at - next.lastWorkAt >= config.deepIdleAfterMs) {
    return { ...next, mode: "deep-idle", burstRemaining: 0, delayMs: Math.round(config.deepIdleDelayMs) };
  }
  return { ...next, mode: "normal", burstRemaining: 0, delayMs: normalDelayMs(next, utilization, config) };
}

/**
 * The state after a wakeup signal (new work announced by this or another node): burst mode at
 * `burstDelayMs` for `burstPolls` empty polls, leaving deep idle at once. The empty-poll count restarts.
 * `lastWorkAt` is kept: it records work this poller found, and a burst that finds nothing falls back to
 * deep idle if the poller was there before.
 *
 * @example
 * ```ts
 * coordinator.onWakeup(() => { state = afterWakeup(state, clock.now(), config); pollNow(); });
 * ```
 */
export function afterWakeup(state: PollingState, _now: number, config: PollingConfig): PollingState {
  return {
    ...state,
    mode: "burst",
    delayMs: config.burstDelayMs,
    burstRemaining: config.burstPolls,
    consecutiveEmpty: 0,
  };
}

/** How long the poller has gone without finding work, in ms (never negative). */
export function idleFor(state: PollingState, now: number): number {
  return Math.max(0, now - state.lastWorkAt);
}

/**
 * The trend factor of rule 4: `1 - meanFill / 2`, where `meanFill` is the mean of `min(1, claimed / limit)`
 * over the samples with `limit > 0`. A window of full batches gives 0.5 (poll twice as often), an empty or
 * capacity-less window gives 1.
 */
export function trendFactor(window: readonly PollSample[]): number {
  let sum = 0;
  let count = 0;
  for (const s of window) {
    if (s.limit <= 0) continue;
    sum += Math.min(1, Math.max(0, s.claimed) / s.limit);
    count++;
  }
  return count === 0 ? 1 : 1 - sum / count / 2;
}

/** The load factor of rule 4: `0.5 + utilization`, with utilization clamped to `0..1` (NaN counts as 0). */
export function loadFactor(utilization: number): number {
  return 0.5 + (utilization >= 1 ? 1 : utilization > 0 ? utilization : 0);
}

function normalDelayMs(state: PollingState, utilization: number, config: PollingConfig): number {
  const backoff = config.minDelayMs * config.emptyBackoffFactor ** state.consecutiveEmpty;
  const base = clamp(backoff, config.minDelayMs, config.maxDelayMs);
  const adjusted = base * loadFactor(utilization) * trendFactor(state.window);
  const delay = clamp(adjusted, config.burstDelayMs, config.maxDelayMs);
  return finish(delay, state.consecutiveFull >= config.fullBatchStreak, config);
}

function finish(delayMs: number, fullStreak: boolean, config: PollingConfig): number {
  const d = fullStreak ? delayMs / config.fullBatchDivisor : delayMs;
  return Math.max(1, Math.round(d));
}

function clamp(value: number, min: number, max: number): number {
  // Infinity (a long empty streak) clamps to max; NaN cannot arise from validated configs.
  return Math.min(max, Math.max(min, value));
}

function invalid(field: keyof PollingConfig, value: number, rule: string): never {
  throw new ValidationError("INVALID_CONFIG", `pollingConfig.${field} ${rule}, got ${value}`);
}
