/**
 * Clock skew: the database's clock is the cluster's single time source for scheduling, so each node
 * compares its own clock with it at start and periodically. One `SELECT clock_timestamp()` is compared
 * with the midpoint of the local times before and after it ({@link estimateClockSkew}); a skew above the
 * warning level (net of the measurement's uncertainty) is logged and reported as an event.
 */
import type { Clock } from "../core/clock.js";
import type { PawlEventEmitter } from "../core/events.js";
import type { Logger } from "../core/logger.js";
import type { ClusterStore } from "../store/job-store.js";
import { estimateClockSkew, skewExceeded, type ClockSkew } from "../logic/cluster-logic.js";
import type { BackgroundService } from "../core/periodic.js";

/** A skew reading. */
export interface ClockSkewReading extends ClockSkew {
  /** Whether it is above `clockSkewWarnMs`. */
  exceeded: boolean;
  /** When it was taken (local clock, ms since the epoch). */
  checkedAt: number;
}

/** What a {@link ClockSkewMonitor} works with. */
export interface ClockSkewDeps {
  /** Whose clock is read (the heartbeat's gateway, so the reading does not queue behind job traffic). */
  store: ClusterStore;
  warnMs: number;
  clock: Clock;
  events: PawlEventEmitter;
  logger: Logger;
}

/** Compares the local clock with the database's. */
export class ClockSkewMonitor implements BackgroundService<ClockSkewReading> {
  private last: ClockSkewReading | null = null;

  constructor(private readonly deps: ClockSkewDeps) {}

  /** The latest reading, or null before the first. */
  get reading(): ClockSkewReading | null {
    return this.last;
  }

  /** Measures once; warns and emits `cluster:clock-skew`. */
  async runOnce(): Promise<ClockSkewReading> {
    const { clock, events, logger } = this.deps;
    const sent = clock.now();
    const db = await this.deps.store.databaseClock();
    const received = clock.now();
    const skew = estimateClockSkew(sent, received, db.getTime());
    const exceeded = skewExceeded(skew, this.deps.warnMs);
    const reading: ClockSkewReading = { ...skew, exceeded, checkedAt: received };
    this.last = reading;
    if (exceeded) {
      logger.warn("the local clock differs from the database's; scheduling uses the database's clock", {
        skewMs: skew.skewMs,
        roundTripMs: skew.roundTripMs,
        warnMs: this.deps.warnMs,
      });
    }
    events.emit("cluster:clock-skew", { skewMs: skew.skewMs, roundTripMs: skew.roundTripMs, exceeded });
    return reading;
  }
}
