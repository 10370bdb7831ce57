/**
 * The thin loop every background service runs in: call `run()` (the service's runOnce), ask
 * `nextDelay` how long to wait given what happened, wait on the injectable clock, repeat. A failed run is
 * reported and the loop carries on; nothing here ever rejects into the host. stop() waits for a run in
 * flight, so a stopped service has no statement left running.
 */
import type { Clock, TimerHandle } from "./clock.js";

/**
 * The one shape of pawl's background work (the heartbeat, the orphan sweep, the pruner, the recurring
 * scheduler, the clock-skew check, the signal-timeout sweep, the cancel check): a pass that returns what
 * it did, which tests call directly. A {@link PeriodicTask} loops it; start and stop belong to the loop.
 */
export interface BackgroundService<R> {
  /** One pass; the result says what it did (and what the loop's next delay is decided from). */
  runOnce(): Promise<R>;
}

/** What a run ended with. */
export type RunOutcome<R> = { ok: true; result: R } | { ok: false; error: unknown };

/** How a {@link PeriodicTask} is built. */
export interface PeriodicTaskOptions<R> {
  /** The clock the waits run on. */
  clock: Clock;
  /** One pass of the service. */
  run: () => Promise<R>;
  /** The wait before the next pass (ms), given the last outcome. */
  nextDelay: (outcome: RunOutcome<R>) => number;
  /** Called with a failed pass's error (log it, emit it); never throws into the loop. */
  onError: (error: unknown) => void;
}

/**
 * Runs a service's runOnce() periodically.
 *
 * @example
 * ```ts
 * const loop = new PeriodicTask({ clock, run: () => pruner.runOnce(), nextDelay: () => 60_000, onError: report });
 * loop.start(10_000);
 * await loop.stop();
 * ```
 */
export class PeriodicTask<R> {
  private timer: TimerHandle | null = null;
  /** When the scheduled pass runs (clock ms), while one is scheduled. */
  private dueAtMs = 0;
  /** The latest time the next pass may run, asked for while a pass was in flight (clock ms). */
  private wakeByMs: number | null = null;
  private inFlight: Promise<void> | null = null;
  private active = false;

  constructor(private readonly options: PeriodicTaskOptions<R>) {}

  /** Whether the loop is running (started and not stopped). */
  get running(): boolean {
    return this.active;
  }

  /** Starts the loop; the first pass runs after `firstDelayMs`. Idempotent. */
  start(firstDelayMs = 0): void {
    if (this.active) return;
    this.active = true;
    this.schedule(firstDelayMs);
  }

  /** Runs a pass as soon as possible (after the one in flight, if any), then carries on as usual. */
  trigger(): void {
    if (!this.active || this.inFlight) return;
    this.schedule(0);
  }

  /**
   * Brings the next pass forward to at most `ms` from now; a pass already due sooner is left alone. Asked
   * while a pass is in flight (which may have read the state before the caller's change), the wait that
   * pass chooses is capped to the same time.
   */
  wakeWithin(ms: number): void {
    if (!this.active) return;
    const by = this.options.clock.now() + Math.max(0, ms);
    if (this.inFlight || this.timer === null) {
      this.wakeByMs = this.wakeByMs === null ? by : Math.min(this.wakeByMs, by);
      return;
    }
    if (this.dueAtMs > by) this.schedule(ms);
  }

  /** Stops the loop and waits for a pass in flight. */
  async stop(): Promise<void> {
    this.active = false;
    if (this.timer !== null) this.options.clock.clearTimeout(this.timer);
    this.timer = null;
    await this.inFlight;
  }

  private schedule(ms: number): void {
    if (this.timer !== null) this.options.clock.clearTimeout(this.timer);
    this.dueAtMs = this.options.clock.now() + Math.max(0, ms);
    this.timer = this.options.clock.setTimeout(
      () => {
        this.timer = null;
        this.inFlight = this.pass().finally(() => {
          this.inFlight = null;
        });
      },
      Math.max(0, ms),
    );
  }

  private async pass(): Promise<void> {
    let outcome: RunOutcome<R>;
    try {
      outcome = { ok: true, result: await this.options.run() };
    } catch (error) {
      outcome = { ok: false, error };
      try {
        this.options.onError(error);
      } catch {
        // A failing reporter must not stop the loop.
      }
    }
    if (!this.active) return;
    let delay: number;
    try {
      delay = this.options.nextDelay(outcome);
    } catch {
      delay = 1000;
    }
    if (!Number.isFinite(delay)) delay = 1000;
    if (this.wakeByMs !== null) {
      delay = Math.min(delay, this.wakeByMs - this.options.clock.now());
      this.wakeByMs = null;
    }
    this.schedule(delay);
  }
}

/** Waits `ms` on `clock`. */
export function sleep(clock: Clock, ms: number): Promise<void> {
  return new Promise((resolve) => clock.setTimeout(() => resolve(), ms));
}
