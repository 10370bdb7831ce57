/**
 * One injectable clock for everything pawl schedules in-process: xstate's delayed transitions and the
 * runtime's own timers. Tests pass a {@link ManualClock} and move time by hand; production uses
 * {@link systemClock}. Scheduling decisions that touch rows use the database's `now()` instead.
 */

/** A handle returned by {@link Clock.setTimeout}. */
export type TimerHandle = unknown;

/**
 * The clock interface. It is shaped like xstate's `Clock` (setTimeout/clearTimeout) plus `now()`, so one
 * object drives both machine delays and plain timers.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Calls `fn` after `ms` milliseconds of this clock's time. */
  setTimeout(fn: (...args: unknown[]) => void, ms: number): TimerHandle;
  /** Cancels a timer set by {@link Clock.setTimeout}; unknown handles are ignored. */
  clearTimeout(handle: TimerHandle): void;
}

/** The real clock. Timers are unref'd so a forgotten one never keeps the host process alive. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, ms) {
    const t = setTimeout(fn, Math.max(0, ms));
    t.unref?.();
    return t;
  },
  clearTimeout(handle) {
    clearTimeout(handle as NodeJS.Timeout);
  },
};

interface ManualTimer {
  id: number;
  at: number;
  fn: (...args: unknown[]) => void;
}

/**
 * A clock that only moves when told to. `advance(ms)` fires every due timer in time order, including timers
 * that fired timers set; it is deterministic, so tests never sleep.
 *
 * @example
 * ```ts
 * const clock = new ManualClock(0);
 * clock.setTimeout(() => fired.push(clock.now()), 100);
 * clock.advance(100); // fired = [100]
 * ```
 */
export class ManualClock implements Clock {
  private current: number;
  private nextId = 1;
  private timers: ManualTimer[] = [];

  constructor(start = 0) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  setTimeout(fn: (...args: unknown[]) => void, ms: number): TimerHandle {
    const id = this.nextId++;
    this.timers.push({ id, at: this.current + Math.max(0, ms), fn });
    return id;
  }

  clearTimeout(handle: TimerHandle): void {
    this.timers = this.timers.filter((t) => t.id !== handle);
  }

  /** How many timers are pending. */
  get pending(): number {
    return this.timers.length;
  }

  /** Moves time forward by `ms`, firing due timers in order (ties in the order they were set). */
  advance(ms: number): void {
    const target = this.current + ms;
    for (;;) {
      let next: ManualTimer | undefined;
      for (const t of this.timers) {
        if (
          t.at <= target &&
          (next === undefined || t.at < next.at || (t.at === next.at && t.id < next.id))
        ) {
          next = t;
        }
      }
      if (next === undefined) break;
      this.timers = this.timers.filter((t) => t !== next);
      this.current = Math.max(this.current, next.at);
      next.fn();
    }
    this.current = target;
  }

  /** Sets the time to `at` (never backwards), firing timers due on the way. */
  set(at: number): void {
    this.advance(Math.max(0, at - this.current));
  }
}
