/**
 * The heartbeat: this node's row in scheduler_node, written on an interval that adapts to load. Each beat
 * measures the event loop's worst delay since the previous beat (perf_hooks' monitorEventLoopDelay) and
 * how long the statement took, and the pure {@link heartbeatDelayMs} shortens the next wait by both, so a
 * busy node beats more often, not less. The service also tracks since when its beats have succeeded
 * without a break, which gates the orphan sweep after a database outage.
 *
 * Each beat also publishes what the node runs now (`node_info.registry`, built by {@link buildNodeRegistry}):
 * its types, lanes and breakers. That is how `pawl.explain` on any process can say that no live node runs a
 * type, or that every node that does has its breaker open, without asking the nodes.
 */
import { monitorEventLoopDelay, type IntervalHistogram } from "node:perf_hooks";
import type { Clock } from "../core/clock.js";
import { maxPublishedTypes, type NodeRegistry, type PublishedBreaker } from "../logic/explain-facts.js";
import type { ActorTree } from "../node/inspect.js";
import type { HeartbeatResult, PawlEventEmitter } from "../core/events.js";
import type { Logger } from "../core/logger.js";
import type { ClusterStore } from "../store/job-store.js";
import type { NodeInfo } from "../store/cluster/node-sql.js";
import { heartbeatDelayMs } from "../logic/cluster-logic.js";
import type { BackgroundService } from "../core/periodic.js";

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

/** What a {@link HeartbeatService} works with. */
export interface HeartbeatDeps {
  /** Where beats are written (a gateway on a connection of its own, when the node has one). */
  store: ClusterStore;
  nodeId: string;
  info: NodeInfo;
  intervalMs: number;
  clock: Clock;
  events: PawlEventEmitter;
  logger: Logger;
  lag?: LagProbe;
  /** What the node runs now, published with each beat (see {@link buildNodeRegistry}); null: nothing yet. */
  registry?: () => NodeRegistry | null;
  /**
   * Called once when a beat finds a migration recorded as breaking that is newer than this release knows
   * (`node_info.schemaVersion`): a newer release migrated the schema in a way this node cannot run beside,
   * so the node should stop. Absent: only logged.
   */
  onIncompatibleSchema?: (found: {
    newestBreaking: number;
    schemaVersion: number;
    releaseVersion: number;
  }) => void;
}

/** What {@link buildNodeRegistry} reads: the node's registered types, its live actor tree, its config. */
export interface RegistrySource {
  types: Iterable<{
    type: string;
    queue: string | undefined;
    service: string | undefined;
    resource: string | undefined;
    timeoutMs: number | undefined;
    rateLimit?: { limit: number; perMs: number; key: unknown } | undefined;
  }>;
  /** `pawl.inspect()`: null before start(). */
  tree: ActorTree | null;
  concurrency: number;
  resources: ReadonlyMap<string, number>;
  /** Per-queue rate limits. */
  queueRateLimits?: ReadonlyMap<string, { limit: number; perMs: number }>;
  defaultTimeoutMs: number;
  /** How long a service's breaker stays OPEN (its config's `openMs`). */
  breakerOpenMs: (service: string) => number;
}

/**
 * The registry a node publishes: read from its actor tree (lanes, busy slots, breakers), which is what
 * the inspector shows too, so the two never disagree. Bounded to {@link maxPublishedTypes} types.
 */
export function buildNodeRegistry(src: RegistrySource): NodeRegistry {
  const types = [...src.types].slice(0, maxPublishedTypes).map((t) => ({
    type: t.type,
    queue: t.queue ?? null,
    service: t.service ?? null,
    resource: t.resource ?? null,
    timeoutMs: t.timeoutMs ?? null,
    rateLimit: t.rateLimit
      ? { limit: t.rateLimit.limit, perMs: t.rateLimit.perMs, keyed: t.rateLimit.key !== undefined }
      : null,
  }));
  const ctx = (src.tree?.context ?? {}) as {
    busy?: number;
    queues?: { queue: string | null; limit: number; running: number }[];
  };
  const breakers: PublishedBreaker[] = [];
  for (const child of src.tree?.children ?? []) {
    if (child.machine !== "breaker") continue;
    const c = child.context as { service: string; state: PublishedBreaker["state"]; openedAt: number | null };
    const openUntil =
      c.state === "OPEN" && c.openedAt !== null ? c.openedAt + src.breakerOpenMs(c.service) : null;
    breakers.push({ service: c.service, state: c.state, openUntil });
  }
  return {
    types,
    queues: ctx.queues
      ? ctx.queues.map((q) => ({ name: q.queue ?? "default", limit: q.limit, running: q.running }))
      : null,
    concurrency: src.concurrency,
    busy: ctx.busy ?? 0,
    breakers,
    resources: Object.fromEntries(src.resources),
    queueRateLimits: Object.fromEntries(
      [...(src.queueRateLimits ?? [])].map(([q, l]) => [q, { limit: l.limit, perMs: l.perMs }]),
    ),
    defaultTimeoutMs: src.defaultTimeoutMs,
  };
}

/** Writes this node's heartbeat. */
export class HeartbeatService implements BackgroundService<HeartbeatResult> {
  private healthy: number | null = null;
  private readonly lag: LagProbe;
  private last: HeartbeatResult | null = null;
  /** Whether an incompatible schema was already reported (once per service). */
  private incompatibleReported = false;

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
      // A registry that fails to build must not cost the beat: the node would be declared dead.
      let registry: NodeRegistry | null = null;
      try {
        registry = this.deps.registry?.() ?? null;
      } catch (error) {
        logger.warn("could not build the node registry for the heartbeat", { error: String(error) });
      }
      const info = registry ? { ...this.deps.info, registry } : this.deps.info;
      row = await this.deps.store.writeHeartbeat(nodeId, info, now);
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
    this.checkSchema(row.schemaVersion, row.newestBreaking);
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

  /** Reacts, once, to a breaking migration newer than this release (see `onIncompatibleSchema`). */
  private checkSchema(schemaVersion: number | null, newestBreaking: number | null): void {
    const releaseVersion = this.deps.info.schemaVersion;
    if (this.incompatibleReported || newestBreaking === null || releaseVersion === undefined) return;
    if (newestBreaking <= releaseVersion) return;
    this.incompatibleReported = true;
    this.deps.logger.error(
      `the schema has migration ${newestBreaking}, which is incompatible with this release (it knows up to ` +
        `${releaseVersion}): this node stops; deploy the newer release on it`,
      { nodeId: this.deps.nodeId, schemaVersion: schemaVersion ?? newestBreaking, releaseVersion },
    );
    this.deps.onIncompatibleSchema?.({
      newestBreaking,
      schemaVersion: schemaVersion ?? newestBreaking,
      releaseVersion,
    });
  }

  /** The wait after a failed beat. */
  failureDelayMs(): number {
    return heartbeatDelayMs({ intervalMs: this.deps.intervalMs, lagMs: 0, beatDurationMs: 0, failed: true });
  }
}
