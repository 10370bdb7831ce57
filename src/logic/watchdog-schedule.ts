/**
 * When the watchdog of a running attempt acts, computed up front from the attempt's start and timeout. The
 * watchdog actor only sets timers for these steps; the order rules (which flip when the cancellation grace
 * is longer than the soft-warning margin) live here, where they can be tested exactly.
 *
 * Steps for an attempt started at `startedAt` with deadline `startedAt + timeoutMs`:
 * 1. `soft-warning` at `startedAt + floor(timeoutMs * softTimeoutPercent / 100)`; omitted at 100 %.
 * 2. `cancel-request` at `deadline - cancellationGraceMs`; omitted when the grace is 0 or `>= timeoutMs`.
 * 3. `hard-timeout` at the deadline, always present and always last.
 * Steps are sorted by time; on a tie `cancel-request` comes before `soft-warning`.
 */

import { readNumbers } from "./config-check.js";
import { ValidationError } from "../core/errors.js";

/** Tuning of the per-attempt watchdog. */
export interface WatchdogConfig {
  /** Percentage of the timeout after which a warning is logged. `0 < pct <= 100`; 100 disables the warning. */
  softTimeoutPercent: number;
  /**
   * How long before the deadline the attempt's cancellation request is set, in ms, so a cooperative job can
   * stop at a safe point before it is aborted. `>= 0`; 0 disables the early request.
   */
  cancellationGraceMs: number;
}

/** Warn at 80 %, no early cancellation request. */
export const defaultWatchdogConfig: WatchdogConfig = { softTimeoutPercent: 80, cancellationGraceMs: 0 };

/** The timeout of a job that sets none: 30 minutes. */
export const defaultTimeoutMs = 30 * 60_000;

/**
 * Completes a partial watchdog config with {@link defaultWatchdogConfig} and validates it.
 *
 * @throws ValidationError `INVALID_CONFIG` for unknown keys, non-finite numbers, `softTimeoutPercent`
 *   outside `(0, 100]` or a negative `cancellationGraceMs`.
 *
 * @example
 * ```ts
 * resolveWatchdogConfig({ cancellationGraceMs: 60_000 }); // { softTimeoutPercent: 80, cancellationGraceMs: 60_000 }
 * ```
 */
export function resolveWatchdogConfig(partial?: Partial<WatchdogConfig>): WatchdogConfig {
  const c = readNumbers("watchdogConfig", defaultWatchdogConfig, partial);
  if (!(c.softTimeoutPercent > 0 && c.softTimeoutPercent <= 100)) {
    invalid("softTimeoutPercent", c.softTimeoutPercent, "must be > 0 and <= 100");
  }
  if (c.cancellationGraceMs < 0) invalid("cancellationGraceMs", c.cancellationGraceMs, "must be >= 0");
  return c;
}

/** What the watchdog does at a step. */
export type WatchdogStepKind = "soft-warning" | "cancel-request" | "hard-timeout";

/** One scheduled watchdog action. */
export interface WatchdogStep {
  /** The action. */
  kind: WatchdogStepKind;
  /** When it is due, ms since the epoch. */
  at: number;
}

const tieOrder: Record<WatchdogStepKind, number> = {
  "cancel-request": 0,
  "soft-warning": 1,
  "hard-timeout": 2,
};

/**
 * The watchdog steps of one attempt, sorted by time (see the file header for the rules).
 *
 * @throws ValidationError `INVALID_OPTION` when `timeoutMs` is not a finite number > 0 or `startedAt` is
 *   not finite.
 *
 * @example
 * ```ts
 * watchdogSchedule(0, 1000, { softTimeoutPercent: 80, cancellationGraceMs: 300 });
 * // [{ kind: "cancel-request", at: 700 }, { kind: "soft-warning", at: 800 }, { kind: "hard-timeout", at: 1000 }]
 * ```
 */
export function watchdogSchedule(
  startedAt: number,
  timeoutMs: number,
  config: WatchdogConfig,
): WatchdogStep[] {
  if (!Number.isFinite(startedAt)) badArgument("startedAt", startedAt, "a finite number");
  if (!(timeoutMs > 0 && Number.isFinite(timeoutMs)))
    badArgument("timeoutMs", timeoutMs, "a finite number > 0");
  const deadline = startedAt + timeoutMs;
  const steps: WatchdogStep[] = [];
  if (config.softTimeoutPercent < 100) {
    steps.push({
      kind: "soft-warning",
      at: startedAt + Math.floor((timeoutMs * config.softTimeoutPercent) / 100),
    });
  }
  const grace = config.cancellationGraceMs;
  if (grace > 0 && grace < timeoutMs) steps.push({ kind: "cancel-request", at: deadline - grace });
  steps.push({ kind: "hard-timeout", at: deadline });
  return steps.sort((a, b) => a.at - b.at || tieOrder[a.kind] - tieOrder[b.kind]);
}

/**
 * The first step still ahead at `now` (`at > now`), or `null` when all are due.
 *
 * @example
 * ```ts
 * const step = nextStep(steps, clock.now());
 * if (step) clock.setTimeout(() => act(step), step.at - clock.now());
 * ```
 */
export function nextStep(steps: readonly WatchdogStep[], now: number): WatchdogStep | null {
  return steps.find((s) => s.at > now) ?? null;
}

/**
 * The steps that fall due in `(fromExclusive, toInclusive]`, in order: what a watchdog that last looked at
 * `fromExclusive` must do now. Steps are never returned twice across consecutive windows.
 */
export function dueSteps(
  steps: readonly WatchdogStep[],
  fromExclusive: number,
  toInclusive: number,
): WatchdogStep[] {
  return steps.filter((s) => s.at > fromExclusive && s.at <= toInclusive);
}

function invalid(field: keyof WatchdogConfig, value: number, rule: string): never {
  throw new ValidationError("INVALID_CONFIG", `watchdogConfig.${field} ${rule}, got ${value}`);
}

function badArgument(name: string, value: number, rule: string): never {
  throw new ValidationError("INVALID_OPTION", `${name} must be ${rule}, got ${value}`);
}
