/**
 * Prometheus metrics for a pawl node. {@link createMetrics} subscribes to the runtime's typed events
 * (claims, polls, wakeups, job outcomes, watchdog steps, breaker changes, cluster beats and sweeps: see
 * metric-events.ts) and counts them; gauges that describe the present (slots, polling mode, breaker
 * states, the coordinator's connection and counters) are read from `pawl.inspect()` when Prometheus
 * scrapes; the queue depth, the cluster view and the concurrency keys' load come from cached, bounded,
 * time-limited reads, so a scrape never loads the database. The core never imports prom-client: everything here is built on
 * what it emits. Every name is declared in metric-set.ts.
 */
import type { HealthReport } from "../src/logic/health.js";
import { promClient, type Registry } from "./prom-client.js";
import { releaseInfo, type ActorNode, type ActorTree } from "../src/index.js";
import type { JobCount } from "../src/store/jobs/read-jobs.js";
import type { ConcurrencyKeys, ConcurrencyKeysBounds } from "../src/store/operator/concurrency-keys-sql.js";
import { CachedRead } from "./cached-read.js";
import { TypeTally } from "./hot-path.js";
import { subscribeMetrics, type EventSource, type EventState } from "./metric-events.js";
import {
  breakerStates,
  buildMetricSet,
  pollingModes,
  queueStatuses,
  type CoordinatorCounterKey,
  type MetricSet,
} from "./metric-set.js";

/** The part of the cluster view the metrics read (what `pawl.cluster()` returns). */
export interface ClusterSnapshot {
  nodes: readonly { nodeId: string; ageMs: number; alive: boolean }[];
  leases: readonly { name: string; owner: string; held: boolean }[];
}

/**
 * What metrics read from a node: a {@link Pawl} satisfies it. Spelled out so tests (and wrappers) can
 * pass something smaller.
 */
export interface MetricsSource extends EventSource {
  /** The node's id (the `node_id` label of `pawl_node_info`). */
  readonly nodeId: string;
  /** Whether the node runs jobs now. */
  readonly running: boolean;
  /** The live actor tree, or null before start. */
  inspect(): ActorTree | null;
  /**
   * The job store: its bounded `counts()`, and the operator read of the concurrency keys' load (without
   * it, a smaller source, the `pawl_concurrency_*` gauges stay at 0).
   */
  readonly store: {
    counts(maxTypes?: number): Promise<JobCount[]>;
    readonly operator?: {
      concurrencyKeys(bounds?: ConcurrencyKeysBounds): Promise<ConcurrencyKeys>;
    };
  };
  /** The cluster's node rows and leases; without it the `pawl_cluster_nodes`-style gauges stay empty. */
  cluster?(): Promise<ClusterSnapshot>;
}

/** Options of {@link createMetrics}. */
export interface MetricsOptions {
  /** The registry to register on. Default: a new one for this node. Give each node its own. */
  registry?: Registry;
  /** The prefix of every metric name. Default `pawl_`. */
  prefix?: string;
  /** Also collect prom-client's default Node.js process metrics (with the same prefix). Default false. */
  defaultMetrics?: boolean;
  /** How long one queue depth count is reused (ms); scrapes in between never touch the database. Default 5000. */
  queueDepthCacheMs?: number;
  /** The most status/type groups the queue depth count returns. Default 200. */
  queueDepthMaxTypes?: number;
  /** How long one read of the cluster view (node rows, leases) is reused (ms). Default 5000. */
  clusterCacheMs?: number;
  /** How long one read of the concurrency keys' load is reused (ms). Default 5000. */
  concurrencyKeysCacheMs?: number;
  /** How long a scrape waits for a cached read in flight before it reports the last values (ms). Default 2000. */
  readTimeoutMs?: number;
}

/** What {@link createMetrics} returns. */
export interface PawlMetrics {
  /** The registry the metrics live on. */
  readonly registry: Registry;
  /** The Content-Type of {@link PawlMetrics.metrics}' output. */
  readonly contentType: string;
  /** The exposition text for a scrape. Never rejects because of pawl (failed reads keep the last values). */
  metrics(): Promise<string>;
  /** The node's `health()`, when the source has one: `serveMetrics` serves it as `/healthz` and `/readyz`. */
  readonly health?: () => Promise<HealthReport>;
  /** Unsubscribes from the node's events and removes the metrics from the registry. Idempotent. */
  close(): void;
}

function nonNegativeInt(name: string, value: number | undefined, fallback: number): number {
  const v = value ?? fallback;
  if (!Number.isInteger(v) || v < 0)
    throw new TypeError(`createMetrics: ${name} must be an integer >= 0, got ${v}`);
  return v;
}

/**
 * Creates the Prometheus metrics of a pawl node.
 *
 * @example
 * ```ts
 * import { createServer } from "node:http";
 * import { createMetrics, metricsHandler } from "pawl/observability";
 *
 * const metrics = createMetrics(pawl);
 * createServer(metricsHandler(metrics)).listen(9464);
 * // on shutdown: metrics.close();
 * ```
 * @throws TypeError for a bad option; MissingDependencyError when prom-client is not installed;
 *   prom-client's Error when the registry already holds these names.
 */
export function createMetrics(pawl: MetricsSource, options: MetricsOptions = {}): PawlMetrics {
  const prefix = options.prefix ?? "pawl_";
  if (!/^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(prefix)) {
    throw new TypeError(`createMetrics: invalid prefix ${JSON.stringify(prefix)}`);
  }
  const { Registry, collectDefaultMetrics } = promClient();
  const registry = options.registry ?? new Registry();
  const timeoutMs = nonNegativeInt("readTimeoutMs", options.readTimeoutMs, 2000);
  const maxTypes = nonNegativeInt("queueDepthMaxTypes", options.queueDepthMaxTypes, 200);

  // One inspect() per scrape: prom-client calls every collect() in one synchronous pass, so the tree
  // taken by the first is reused by the rest and dropped on the next microtask.
  let memo: { tree: ActorTree | null } | null = null;
  const tree = (): ActorTree | null => {
    if (memo === null) {
      let t: ActorTree | null = null;
      try {
        t = pawl.inspect();
      } catch {
        m.errors.inc({ where: "metrics inspect" });
      }
      memo = { tree: t };
      queueMicrotask(() => (memo = null));
    }
    return memo.tree;
  };
  const state: EventState = { lastPoll: { mode: null, delayMs: null }, breakers: new Map() };
  const lastCoordinator = new Map<CoordinatorCounterKey, number>();

  const readError = (read: string) => (reason: "failed" | "timeout") =>
    m.scrapeReadErrors.inc({ read, reason });
  const depth = new CachedRead<readonly JobCount[]>(() => pawl.store.counts(maxTypes), [], {
    ttlMs: nonNegativeInt("queueDepthCacheMs", options.queueDepthCacheMs, 5000),
    timeoutMs,
    onError: readError("queue_depth"),
  });
  const readCluster = pawl.cluster?.bind(pawl);
  const clusterView = readCluster
    ? new CachedRead<ClusterSnapshot | null>(readCluster, null, {
        ttlMs: nonNegativeInt("clusterCacheMs", options.clusterCacheMs, 5000),
        timeoutMs,
        onError: readError("cluster"),
      })
    : null;
  // The keys' load is counts only (top: 0): the busiest keys are the console's, never labels here.
  const keyLoad = pawl.store.operator
    ? new CachedRead<ConcurrencyKeys | null>(
        () => pawl.store.operator?.concurrencyKeys({ top: 0 }) ?? Promise.resolve(null),
        null,
        {
          ttlMs: nonNegativeInt("concurrencyKeysCacheMs", options.concurrencyKeysCacheMs, 5000),
          timeoutMs,
          onError: readError("concurrency_keys"),
        },
      )
    : null;
  const depthSeries = new Set<string>();
  const nodeSeries = new Set<string>();
  const leaseSeries = new Set<string>();

  const tally = new TypeTally();
  const built = buildMetricSet(
    registry,
    prefix,
    {
      inspect: () => void tree(),
      node: () => m.nodeRunning.set(pawl.running ? 1 : 0),
      slots: () => {
        const t = tree();
        if (!t) return;
        m.inFlight.set(num(t.context.busy));
        m.freeSlots.set(num(t.context.free));
        m.buffered.set(t.buffered);
      },
      polling: () => {
        const strategy = find(tree(), "strategy");
        const mode = str(strategy?.context.mode) ?? state.lastPoll.mode;
        const delayMs =
          typeof strategy?.context.delayMs === "number" ? strategy.context.delayMs : state.lastPoll.delayMs;
        if (mode !== null)
          for (const md of pollingModes) m.pollingMode.set({ mode: md }, md === mode ? 1 : 0);
        if (delayMs !== null) m.pollDelay.set(delayMs / 1000);
      },
      breakers: () => {
        for (const child of tree()?.children ?? []) {
          if (child.machine !== "breaker") continue;
          const service = str(child.context.service);
          const s = str(child.context.state);
          if (service !== null && s !== null) state.breakers.set(service, s);
        }
        for (const [service, current] of state.breakers) {
          const lower = current.toLowerCase();
          for (const s of breakerStates) m.breakerState.set({ service, state: s }, s === lower ? 1 : 0);
        }
      },
      coordinator: () => {
        const c = tree()?.coordinator;
        if (c && typeof c.transport === "string") {
          m.coordinatorConnected.set({ transport: c.transport }, c.connected ? 1 : 0);
        }
      },
      coordinatorCounter: (key) => () => {
        const v = tree()?.coordinator?.[key];
        if (typeof v !== "number" || !Number.isFinite(v)) return;
        const before = lastCoordinator.get(key) ?? 0;
        // The status holds running totals; a smaller one means a new coordinator started from zero.
        const delta = v >= before ? v - before : v;
        lastCoordinator.set(key, v);
        if (delta > 0) counterFor(key).inc(delta);
      },
      queueDepth: async () => {
        const { value: counts, at } = await depth.get();
        if (at === 0) return;
        let dead = 0;
        const seen = new Set<string>();
        for (const c of counts) {
          const status = c.status.toLowerCase();
          if (!(queueStatuses as readonly string[]).includes(status)) continue;
          if (status === "dead") dead += c.count;
          m.queueDepth.set({ status, type: c.type }, c.count);
          seen.add(JSON.stringify([status, c.type]));
        }
        for (const series of prune(depthSeries, seen)) {
          const [status = "", type = ""] = JSON.parse(series) as string[];
          m.queueDepth.remove({ status, type });
        }
        m.dlqSize.set(dead);
        m.queueDepthUpdated.set(at / 1000);
      },
      cluster: async () => {
        if (!clusterView) return;
        const { value: view, at } = await clusterView.get();
        if (!view) return;
        let alive = 0;
        const nodes = new Set<string>();
        for (const n of view.nodes) {
          if (n.alive) alive++;
          nodes.add(n.nodeId);
          m.nodeHeartbeatAge.set({ node_id: n.nodeId }, Math.max(0, n.ageMs) / 1000);
        }
        for (const nodeId of prune(nodeSeries, nodes)) m.nodeHeartbeatAge.remove({ node_id: nodeId });
        m.clusterNodes.set({ state: "alive" }, alive);
        m.clusterNodes.set({ state: "dead" }, view.nodes.length - alive);
        const leases = new Set<string>();
        for (const l of view.leases) {
          leases.add(l.name);
          m.leaseHeld.set({ lease: l.name }, l.held && l.owner === pawl.nodeId ? 1 : 0);
        }
        for (const lease of prune(leaseSeries, leases)) m.leaseHeld.remove({ lease });
        m.clusterUpdated.set(at / 1000);
      },
      concurrency: async () => {
        if (!keyLoad) return;
        const { value: load, at } = await keyLoad.get();
        if (!load) return;
        m.keysActive.set(load.activeKeys);
        m.keysAtLimit.set(load.keysAtLimit);
        m.keyedRunning.set(load.running);
        m.keyedWaiting.set(load.waiting);
        m.keysUpdated.set(at / 1000);
      },
      settled: async () => {
        await Promise.all([depth.get(), clusterView?.get(), keyLoad?.get()]);
      },
    },
    tally,
  );
  const m: MetricSet = built.metrics;
  const counterFor = (key: CoordinatorCounterKey) =>
    ({
      published: m.hintsPublished,
      received: m.hintsReceived,
      suppressed: m.hintsSuppressed,
      dropped: m.hintsDropped,
      malformed: m.malformed,
      reconnects: m.reconnects,
    })[key];

  m.nodeInfo.set({ node_id: pawl.nodeId }, 1);
  const release = releaseInfo();
  m.buildInfo.set({ version: release.version, schema_version: String(release.schemaVersion) }, 1);
  for (const source of ["local", "coordinator"]) m.wakeups.inc({ source }, 0);
  if (options.defaultMetrics && !registry.getSingleMetric(`${prefix}process_cpu_user_seconds_total`)) {
    collectDefaultMetrics({ register: registry, prefix });
  }
  const offs = subscribeMetrics(pawl, m, state, tally);

  let closed = false;
  const source = pawl as MetricsSource & { health?: () => Promise<HealthReport> };
  return {
    registry,
    contentType: registry.contentType,
    metrics: () => registry.metrics(),
    ...(typeof source.health === "function"
      ? { health: () => (source.health as () => Promise<HealthReport>).call(pawl) }
      : {}),
    close() {
      if (closed) return;
      closed = true;
      for (const off of offs.splice(0)) off();
      for (const name of built.names) registry.removeSingleMetric(name);
    },
  };
}

/** Keeps `current` as the known series; returns those that were known before and are gone now. */
function prune(known: Set<string>, current: ReadonlySet<string>): string[] {
  const gone = [...known].filter((k) => !current.has(k));
  known.clear();
  for (const k of current) known.add(k);
  return gone;
}

function find(tree: ActorTree | null, id: string): ActorNode | undefined {
  if (!tree) return undefined;
  const stack: ActorNode[] = [...tree.children];
  while (stack.length > 0) {
    const node = stack.pop() as ActorNode;
    if (node.id === id) return node;
    stack.push(...node.children);
  }
  return undefined;
}

function num(v: unknown): number {
  return typeof v === "number" && Number.isFinite(v) ? v : 0;
}

function str(v: unknown): string | null {
  return typeof v === "string" ? v : null;
}
