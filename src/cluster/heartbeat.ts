/**
 * The heartbeat: this node's row in scheduler_node, written on an interval that adapts to load. Each beat
 * measures the event loop's worst delay since the previous beat (perf_hooks' monitorEventLoopDelay) and
 * how long the statement took, and the pure {@link heartbeatDelayMs} shortens the next wait by both, so a
 * busy node beats more often, not less. The service also tracks since when its beats have succeeded
 * without a break, which gates the orphan sweep after a database outage.
 */
import { monitorEventLoopDelay, type IntervalHistogram } from "node:perf_hooks";
import type { Clock } from "../clock.js";
import type { PawlEventEmitter } from "../events.js";
import type { Logger } from "../logger.js";
import type { Queryable, Tables } from "../store/sql.js";
import { upsertHeartbeat, type NodeInfo } from "../store/node-sql.js";
import { heartbeatDelayMs } from "./cluster-logic.js";

/** Measures event-loop lag. */
export interface LagProbe {
  start(): void;
  stop(): void;
  /** The worst delay since the previous read (ms); resets the measurement. */
  read(): number;
}

/** A probe on perf_hooks' event-loop delay histogram (10 ms resolution). */
export function eventLoopLagProbe(): LagProbe {
  let h: IntervalHistogram | null = null;
  return {
    start() {
      if (h) return;
      h = monitorEventLoopDelay({ resolution: 10 });
      h.enable();
    },
    stop() {
      h?.disable();
      h = null;
    },
    read() {
      if (!h) return 0;
      const max = h.max / 1e6;
      h.reset();
      return Number.isFinite(max) && max > 0 ? max : 0;
    },
  };
}

/** What one beat did. */
export interface HeartbeatResult {
  /** The heartbeat time written (database time). */
  heartbeatAt: Date;
  /** When this run of the node registered (database time). */
  startedAt: Date;
  /** The worst event-loop delay since the previous beat (ms). */
  lagMs: number;
  /** How long the statement took (ms, local clock). */
  durationMs: number;
  /** The wait chosen before the next beat (ms). */
  nextDelayMs: number;
  /** The sweep had declared this node dead before this beat: its jobs may have been recovered. */
  wasDeclaredDead: boolean;
}

/** What a {@link HeartbeatService} works with. */
export interface HeartbeatDeps {
  db: Queryable;
  tables: Tables;
  nodeId: string;
  info: NodeInfo;
  intervalMs: number;
  clock: Clock;
  events: PawlEventEmitter;
  logger: Logger;
  lag?: LagProbe;
}

/** Writes this node's heartbeat. */
export class HeartbeatService {
  private healthy: number | null = null;
  private readonly lag: LagProbe;
  private last: HeartbeatResult | null = null;

  constructor(private readonly deps: HeartbeatDeps) {
    this.lag = deps.lag ?? eventLoopLagProbe();
  }

  /** When the current run of successful beats began (local clock), or null after a failed beat. */
  get healthySince(): number | null {
    return this.healthy;
  }

  /** The last successful beat. */
  get lastBeat(): HeartbeatResult | null {
    return this.last;
  }

  /** Starts measuring event-loop lag. */
  startProbe(): void {
    this.lag.start();
  }

  /** Stops measuring. */
  stopProbe(): void {
    this.lag.stop();
  }

  /**
   * Writes one heartbeat. `now` overrides the database's time (tests). A failure marks the node
   * unhealthy (see {@link healthySince}) and rethrows.
   */
  async runOnce(now: Date | null = null): Promise<HeartbeatResult> {
    const { clock, events, logger, nodeId } = this.deps;
    const lagMs = Math.round(this.lag.read());
    const started = clock.now();
    let row;
    try {
      row = await upsertHeartbeat(this.deps.db, this.deps.tables, nodeId, this.deps.info, now);
    } catch (error) {
      this.healthy = null;
      throw error;
    }
    const finished = clock.now();
    this.healthy ??= finished;
    const durationMs = finished - started;
    const nextDelayMs = heartbeatDelayMs({
      intervalMs: this.deps.intervalMs,
      lagMs,
      beatDurationMs: durationMs,
      failed: false,
    });
    if (row.wasDeclaredDead) {
      logger.warn(
        "this node had been declared dead by the cluster (missed heartbeats); its running jobs may have been recovered and may run again elsewhere",
        {
          nodeId,
        },
      );
    }
    const result: HeartbeatResult = {
      heartbeatAt: row.heartbeatAt,
      startedAt: row.startedAt,
      lagMs,
      durationMs,
      nextDelayMs,
      wasDeclaredDead: row.wasDeclaredDead,
    };
    this.last = result;
    events.emit("cluster:heartbeat", { nodeId, ...result });
    return result;
  }

  /** The wait after a failed beat. */
  failureDelayMs(): number {
    return heartbeatDelayMs({ intervalMs: this.deps.intervalMs, lagMs: 0, beatDurationMs: 0, failed: true });
  }
}
