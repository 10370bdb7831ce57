/**
 * When an attempt's watchdog actor is armed. Most attempts end within milliseconds, long before any
 * watchdog step is due, so arming every one would cost two actor events (ARM, DISARM) for nothing.
 * Instead an attempt is armed once it has run {@link watchdogArmDelayMs} (or at once when its first step
 * is due sooner), by one sweep timer shared by every slot: a short attempt costs no timer of its own.
 */
import type { Clock } from "../../core/clock.js";
import type { JobRun } from "./job-run.js";

/**
 * The watchdog actor is armed once an attempt has run this long (or earlier, when its first step is due
 * earlier). The steps keep their absolute times, so nothing changes for the attempts it watches; the
 * many attempts that end sooner skip two actor events each.
 */
export const watchdogArmDelayMs = 20;

/** What arming needs from the runtime. */
export interface WatchdogArmingDeps {
  /** The attempts in flight. */
  runs: ReadonlyMap<string, JobRun>;
  clock: Clock;
  /** Sends to an actor after the current step (see NodeRuntime.sendLater). */
  sendLater: (systemId: string, event: { type: string } & Record<string, unknown>) => void;
}

/** Arms the slots' watchdogs, at once or through the shared sweep. */
export class WatchdogArming {
  private timer: unknown = null;

  constructor(private readonly deps: WatchdogArmingDeps) {}

  /** Arms the slot's watchdog for an attempt now (two actor events per attempt that needs watching). */
  arm(run: JobRun): void {
    run.armAt = 0;
    if (run.settled || !run.ctx) return;
    run.armed = true;
    this.deps.sendLater(`watchdog-${run.slot}`, {
      type: "ARM",
      jobId: run.claimed.id,
      startedAt: run.startedAt,
      timeoutMs: run.ctx.deadlineMs - run.startedAt,
    });
  }

  /** Arms the watchdog of `run` once it has run {@link watchdogArmDelayMs}. */
  later(run: JobRun): void {
    run.armAt = run.startedAt + watchdogArmDelayMs;
    if (this.timer !== null) return;
    this.timer = this.deps.clock.setTimeout(() => this.sweep(), watchdogArmDelayMs / 2);
  }

  /** Cancels the sweep (the node is stopping). */
  stop(): void {
    if (this.timer !== null) this.deps.clock.clearTimeout(this.timer);
    this.timer = null;
  }

  private sweep(): void {
    this.timer = null;
    const now = this.deps.clock.now();
    let waiting = false;
    for (const run of this.deps.runs.values()) {
      if (run.armAt === 0 || run.settled) continue;
      if (run.armAt <= now) this.arm(run);
      else waiting = true;
    }
    if (waiting) this.timer = this.deps.clock.setTimeout(() => this.sweep(), watchdogArmDelayMs / 2);
  }
}
