/**
 * Cron maths for recurring jobs: validation, the next fire time, and what to do when a recurring row is
 * found due (possibly late, after downtime). Built on `croner`, used only as a calculator: a paused `Cron`
 * with no callback, so no timer is ever started. Every function takes the time as an argument.
 *
 * Expressions have 5 fields (minute precision) or 6 (a leading seconds field); croner's nicknames such as
 * `@daily` work too. Times are computed in `timezone`, an IANA name, default `"UTC"` (never the host's
 * local zone, so results do not depend on the machine). Across DST changes croner's rules apply: a
 * fixed-time job (`30 2 * * *`) whose time falls in a spring-forward gap runs at the first valid time after
 * it and runs once when a time repeats in autumn; an interval job (`*\/30 * * * *`) skips times in the gap
 * and runs at both occurrences of a repeated time.
 */

import { Cron } from "croner";
import { ValidationError } from "../core/errors.js";

const defaultTimezone = "UTC";

/**
 * Checks an expression and a time zone, throwing a clear error instead of failing later in the scheduler.
 * An expression that can never fire (such as `0 0 30 2 *`) is rejected too.
 *
 * @throws ValidationError `INVALID_CRON` for a malformed expression, one that never fires, or a time zone
 *   that is not a known IANA name.
 *
 * @example
 * ```ts
 * validateCron("0 3 * * *", "Europe/Paris"); // ok
 * validateCron("61 * * * *"); // throws: invalid cron expression "61 * * * *": Invalid value for minute: 61
 * ```
 */
export function validateCron(expression: string, timezone?: string): void {
  const cron = compile(expression, timezone);
  // Without a year field every pattern repeats with the 400-year Gregorian cycle, so one search is enough.
  if (cron.nextRun(new Date(0)) === null) {
    throw new ValidationError("INVALID_CRON", `cron expression ${JSON.stringify(expression)} never fires`);
  }
}

/**
 * The first fire time strictly after `afterMs`, in ms since the epoch; `null` if there is none.
 *
 * @throws ValidationError `INVALID_CRON` as {@link validateCron} (except for never-firing expressions,
 *   which give `null`), `INVALID_OPTION` when `afterMs` is not finite.
 *
 * @example
 * ```ts
 * nextFire("0 3 * * *", Date.UTC(2024, 0, 1, 3, 0)); // Date.UTC(2024, 0, 2, 3, 0)
 * nextFire("0 3 * * *", Date.UTC(2024, 0, 1, 12), "Europe/Paris"); // Date.UTC(2024, 0, 2, 2, 0)
 * ```
 */
export function nextFire(expression: string, afterMs: number, timezone?: string): number | null {
  if (!Number.isFinite(afterMs)) {
    throw new ValidationError("INVALID_OPTION", `afterMs must be a finite number, got ${afterMs}`);
  }
  const next = compile(expression, timezone).nextRun(new Date(afterMs));
  return next === null ? null : next.getTime();
}

/**
 * What happens to fires that were due while nothing was polling (downtime, a long pause):
 * - `"catch-up-one"`: the missed fires are collapsed into one, run at once.
 * - `"skip"`: missed fires are dropped; only a fire that is still current is run.
 */
export type MissedFirePolicy = "skip" | "catch-up-one";

/** The outcome of {@link planFire}. */
export interface FirePlan {
  /** The scheduled time of the one fire to enqueue now, or `null` to enqueue nothing. */
  fireAtMs: number | null;
  /** The row's new next fire time; strictly after `nowMs` whenever the row was due. */
  nextFireAtMs: number;
}

/**
 * Decides what a recurring row whose next fire is `nextFireAtMs` does at `nowMs`.
 *
 * - Not due yet (`nextFireAtMs > nowMs`): nothing fires and the row is unchanged.
 * - `"catch-up-one"`: fires once with `fireAtMs = nextFireAtMs`, however late, and advances `nextFireAtMs`
 *   to the first fire strictly after `nowMs`. Any other fires in between are dropped.
 * - `"skip"`: the due fire is on time when the schedule's following fire is still after `nowMs`
 *   (`nextFire(nextFireAtMs) > nowMs`), i.e. it is late by less than one period. Then it fires with
 *   `fireAtMs = nextFireAtMs`. Otherwise it was missed: nothing fires, except that a later fire falling
 *   exactly on `nowMs` is not missed and fires (`fireAtMs = nowMs`). Either way `nextFireAtMs` advances to
 *   the first fire strictly after `nowMs`.
 *
 * At most one fire is returned per call, so a row is never flooded after downtime.
 *
 * @throws ValidationError `INVALID_CRON` as {@link validateCron}, including when the expression has no fire
 *   after `nowMs`.
 *
 * @example
 * ```ts
 * const day = 86_400_000;
 * // Daily job at midnight UTC, due at 0; the poller is back 2 days and 10 hours later:
 * planFire("0 0 * * *", 0, 2 * day + 36e5 * 10, "catch-up-one"); // { fireAtMs: 0, nextFireAtMs: 3 * day }
 * planFire("0 0 * * *", 0, 2 * day + 36e5 * 10, "skip"); // { fireAtMs: null, nextFireAtMs: 3 * day }
 * ```
 */
export function planFire(
  expression: string,
  nextFireAtMs: number,
  nowMs: number,
  policy: MissedFirePolicy,
  timezone?: string,
): FirePlan {
  if (nextFireAtMs > nowMs) return { fireAtMs: null, nextFireAtMs };
  const advanced = nextFire(expression, nowMs, timezone);
  if (advanced === null) {
    throw new ValidationError(
      "INVALID_CRON",
      `cron expression ${JSON.stringify(expression)} has no fire after ${nowMs}`,
    );
  }
  if (policy === "catch-up-one") return { fireAtMs: nextFireAtMs, nextFireAtMs: advanced };
  if (policy !== "skip") {
    throw new ValidationError(
      "INVALID_OPTION",
      `missed-fire policy must be "skip" or "catch-up-one", got ${String(policy)}`,
    );
  }
  const following = nextFire(expression, nextFireAtMs, timezone);
  if (following === null || following > nowMs) return { fireAtMs: nextFireAtMs, nextFireAtMs: advanced };
  const firesNow = nextFire(expression, nowMs - 1, timezone) === nowMs;
  return { fireAtMs: firesNow ? nowMs : null, nextFireAtMs: advanced };
}

/** Parses an expression and checks the zone; croner only notices a bad zone when it computes a date. */
function compile(expression: string, timezone: string | undefined): Cron {
  const zone = timezone ?? defaultTimezone;
  if (typeof expression !== "string" || expression.trim() === "") {
    throw new ValidationError(
      "INVALID_CRON",
      `cron expression must be a non-empty string, got ${JSON.stringify(expression)}`,
    );
  }
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
  } catch {
    throw new ValidationError(
      "INVALID_CRON",
      `unknown time zone ${JSON.stringify(zone)} for cron expression ${JSON.stringify(expression)}`,
    );
  }
  try {
    return new Cron(expression, { timezone: zone, paused: true, mode: "5-or-6-parts" });
  } catch (error) {
    const reason = error instanceof Error ? error.message.replace(/^CronPattern: /, "") : String(error);
    throw new ValidationError(
      "INVALID_CRON",
      `invalid cron expression ${JSON.stringify(expression)}: ${reason}`,
      {
        cause: error,
      },
    );
  }
}
