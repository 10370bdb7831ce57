/**
 * Circuit breaker transitions as pure functions over an immutable snapshot, so the breaker's whole life
 * (opening on a failure burst, probing after `openMs`, closing after good trials) can be table-tested with
 * made-up times. The owner keeps one snapshot per protected service and replaces it with each `next`.
 *
 * - **CLOSED**: calls pass. Outcomes of the last `windowMs` are kept; the breaker opens when the window holds
 *   `failureThreshold` failures, or at least `minimumCalls` calls with a failure share `>= failureRate`.
 * - **OPEN**: calls are refused until `openedAt + openMs`; then the next {@link breakerAllow} moves to
 *   HALF_OPEN. Results that arrive while OPEN (calls started before it opened) are ignored.
 * - **HALF_OPEN**: up to `halfOpenTrials` trial calls run at once; one trial failure reopens the breaker,
 *   `halfOpenTrials` trial successes close it with an empty window. Non-trial results are ignored.
 *
 * Every admitted trial must be recorded exactly once (a crash or timeout counts as a failure); otherwise its
 * slot stays taken and HALF_OPEN refuses every call.
 */

import { readNumbers } from "./config-check.js";
import { ValidationError } from "../core/errors.js";

/** The breaker's state. */
export type BreakerState = "CLOSED" | "OPEN" | "HALF_OPEN";

/** Tuning of a circuit breaker. Durations in ms. */
export interface BreakerConfig {
  /** Failures within the window that open the breaker, whatever the rate. Integer `>= 1`. */
  failureThreshold: number;
  /** Failure share `(0, 1]` that opens the breaker once the window holds `minimumCalls` calls. */
  failureRate: number;
  /** Calls within the window before `failureRate` is applied. Integer `>= 1`. */
  minimumCalls: number;
  /** Length of the sliding window of outcomes. `> 0`. */
  windowMs: number;
  /** How long the breaker stays OPEN before probing. `> 0`. */
  openMs: number;
  /** Trial successes needed to close, and the number of trials allowed at once. Integer `>= 1`. */
  halfOpenTrials: number;
}

/** 5 failures, or half of at least 10 calls, in a minute open the breaker for 30 s; one good trial closes it. */
export const defaultBreakerConfig: BreakerConfig = {
  failureThreshold: 5,
  failureRate: 0.5,
  minimumCalls: 10,
  windowMs: 60_000,
  openMs: 30_000,
  halfOpenTrials: 1,
};

/**
 * Completes a partial breaker config with {@link defaultBreakerConfig} and validates it.
 *
 * @throws ValidationError `INVALID_CONFIG` for unknown keys, non-finite numbers or out-of-range values (see
 *   {@link BreakerConfig}).
 *
 * @example
 * ```ts
 * resolveBreakerConfig({ openMs: 10_000 });
 * resolveBreakerConfig({ failureRate: 2 }); // throws: breakerConfig.failureRate must be > 0 and <= 1, got 2
 * ```
 */
export function resolveBreakerConfig(partial?: Partial<BreakerConfig>): BreakerConfig {
  const c = readNumbers("breakerConfig", defaultBreakerConfig, partial);
  for (const key of ["failureThreshold", "minimumCalls", "halfOpenTrials"] as const) {
    if (!Number.isInteger(c[key]) || c[key] < 1) invalid(key, c[key], "must be an integer >= 1");
  }
  if (!(c.failureRate > 0 && c.failureRate <= 1))
    invalid("failureRate", c.failureRate, "must be > 0 and <= 1");
  if (c.windowMs <= 0) invalid("windowMs", c.windowMs, "must be > 0");
  if (c.openMs <= 0) invalid("openMs", c.openMs, "must be > 0");
  return c;
}

/** One call's outcome, kept while CLOSED. */
export interface BreakerOutcome {
  /** When the result was recorded. */
  at: number;
  /** Whether the call succeeded. */
  ok: boolean;
}

/** Everything the breaker knows. Immutable: the functions return new snapshots. */
export interface BreakerSnapshot {
  /** The current state. */
  state: BreakerState;
  /** Outcomes within the window, oldest first; only kept while CLOSED. */
  outcomes: readonly BreakerOutcome[];
  /** When the breaker last opened; `null` while CLOSED. */
  openedAt: number | null;
  /** HALF_OPEN trials admitted and not yet recorded. */
  trialsInFlight: number;
  /** HALF_OPEN trials that succeeded. */
  trialSuccesses: number;
  /** How many state changes happened (a cheap change detector for metrics and tests). */
  transitions: number;
}

/** A closed breaker with no history. */
export function initialBreaker(): BreakerSnapshot {
  return {
    state: "CLOSED",
    outcomes: [],
    openedAt: null,
    trialsInFlight: 0,
    trialSuccesses: 0,
    transitions: 0,
  };
}

/**
 * Whether a call may go ahead now. `trial: true` marks a HALF_OPEN probe, which must be passed back to
 * {@link breakerRecord}. Refusals carry `retryInMs`: the time left until OPEN ends, or `openMs` when all
 * HALF_OPEN trial slots are taken.
 *
 * @example
 * ```ts
 * const d = breakerAllow(snapshot, now, cfg);
 * snapshot = d.next;
 * if (!d.allowed) return reschedule(job, d.retryInMs); // no retry is consumed
 * const ok = await run(job);
 * snapshot = breakerRecord(snapshot, ok, clock.now(), cfg, d.trial);
 * ```
 */
export function breakerAllow(s: BreakerSnapshot, now: number, cfg: BreakerConfig): BreakerDecision {
  if (s.state === "CLOSED") return { allowed: true, trial: false, next: s };
  let current = s;
  if (s.state === "OPEN") {
    const reopensAt = (s.openedAt ?? Number.NEGATIVE_INFINITY) + cfg.openMs;
    if (now < reopensAt) return { allowed: false, retryInMs: reopensAt - now, next: s };
    current = {
      ...s,
      state: "HALF_OPEN",
      trialsInFlight: 0,
      trialSuccesses: 0,
      transitions: s.transitions + 1,
    };
  }
  if (current.trialsInFlight < cfg.halfOpenTrials) {
    return { allowed: true, trial: true, next: { ...current, trialsInFlight: current.trialsInFlight + 1 } };
  }
  return { allowed: false, retryInMs: cfg.openMs, next: current };
}

/** The answer of {@link breakerAllow}; always carries the `next` snapshot to keep. */
export type BreakerDecision =
  | { allowed: true; trial: boolean; next: BreakerSnapshot }
  | { allowed: false; retryInMs: number; next: BreakerSnapshot };

/**
 * Records a call's result at `now`. `trial` must be the `trial` flag {@link breakerAllow} returned for the
 * call. See the file header for the transitions.
 *
 * @example
 * ```ts
 * let s = initialBreaker();
 * for (let i = 0; i < 5; i++) s = breakerRecord(s, false, 1000 + i, defaultBreakerConfig, false);
 * s.state; // "OPEN"
 * ```
 */
export function breakerRecord(
  s: BreakerSnapshot,
  ok: boolean,
  now: number,
  cfg: BreakerConfig,
  trial: boolean,
): BreakerSnapshot {
  switch (s.state) {
    case "OPEN":
      return s;
    case "HALF_OPEN": {
      if (!trial) return s;
      const trialsInFlight = Math.max(0, s.trialsInFlight - 1);
      if (!ok) return open(s, now);
      const trialSuccesses = s.trialSuccesses + 1;
      if (trialSuccesses >= cfg.halfOpenTrials) {
        return { ...initialBreaker(), transitions: s.transitions + 1 };
      }
      return { ...s, trialsInFlight, trialSuccesses };
    }
    case "CLOSED": {
      const outcomes = [...s.outcomes.filter((o) => now - o.at < cfg.windowMs), { at: now, ok }];
      const failures = outcomes.filter((o) => !o.ok).length;
      const calls = outcomes.length;
      const trips =
        failures >= cfg.failureThreshold ||
        (calls >= cfg.minimumCalls && failures / calls >= cfg.failureRate);
      return trips ? open(s, now) : { ...s, outcomes };
    }
  }
}

function open(s: BreakerSnapshot, now: number): BreakerSnapshot {
  return {
    state: "OPEN",
    outcomes: [],
    openedAt: now,
    trialsInFlight: 0,
    trialSuccesses: 0,
    transitions: s.transitions + 1,
  };
}

function invalid(field: keyof BreakerConfig, value: number, rule: string): never {
  throw new ValidationError("INVALID_CONFIG", `breakerConfig.${field} ${rule}, got ${value}`);
}

/**
 * The OPEN -> HALF_OPEN move when the open window has passed, without admitting a trial (the breaker
 * machine's timer uses it; {@link breakerAllow} makes the same move lazily when a call arrives first).
 * Returns `s` unchanged when the breaker is not OPEN or the window has not passed.
 */
export function breakerHalfOpen(s: BreakerSnapshot, now: number, cfg: BreakerConfig): BreakerSnapshot {
  if (s.state !== "OPEN" || now < (s.openedAt ?? Number.NEGATIVE_INFINITY) + cfg.openMs) return s;
  return { ...s, state: "HALF_OPEN", trialsInFlight: 0, trialSuccesses: 0, transitions: s.transitions + 1 };
}

/**
 * Gives back a HALF_OPEN trial slot whose call ended without a verdict on the service (the job snoozed,
 * was canceled, was handed back at shutdown or waited for a permit): the slot frees, nothing is counted.
 * Without this, a trial that never reports would keep its slot and the breaker would refuse for good.
 */
export function breakerRelease(s: BreakerSnapshot, trial: boolean): BreakerSnapshot {
  if (!trial || s.state !== "HALF_OPEN" || s.trialsInFlight === 0) return s;
  return { ...s, trialsInFlight: s.trialsInFlight - 1 };
}
