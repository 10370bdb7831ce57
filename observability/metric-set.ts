/**
 * The metrics pawl exposes: every name, help text, label set and bucket layout in one table, so the
 * documentation, the Grafana dashboard and the alert rules can be checked against it (a unit test does).
 * Names follow the Prometheus conventions: a prefix (`pawl_` by default), counters end in `_total`,
 * durations are `_seconds`, and labels are low-cardinality (job type, service, outcome; never a job id).
 *
 * This file only declares; metrics.ts fills the metrics from the runtime's events and snapshots.
 */
import { promClient, type Counter, type Histogram, type Registry } from "./prom-client.js";
import { TypeHistogram, type TypeTally } from "./hot-path.js";

export { breakerStates, jobOutcomes, pollingModes, queueStatuses, type JobOutcome } from "./metric-labels.js";

/** Buckets of the claim batch size (jobs per non-empty claim; a claim takes at most 500). */
export const batchSizeBuckets = [1, 2, 5, 10, 20, 50, 100, 200, 500];
/** The kinds of claim statement (the `claim-statement` event's `kind`). */
export const claimStatementKinds = ["keyed", "unkeyed", "floored", "full"] as const;

/** Starts every kind's series at 0, so rate() and the alerts see a kind from its first statement. */
function zeroKinds<M extends Histogram<"kind"> | Counter<"kind">>(metric: M): M {
  for (const kind of claimStatementKinds) {
    if (metric instanceof promClient().Histogram) metric.zero({ kind });
    else metric.inc({ kind }, 0);
  }
  return metric;
}

/** Buckets of the claim query duration (seconds). */
export const claimDurationBuckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
/** Buckets of the age boost (levels; one level per boost interval, 15 minutes by default). */
export const boostLevelBuckets = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96];
/** Buckets of the handler duration (seconds). */
export const jobDurationBuckets = [
  0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800,
];
/** Buckets of the pickup latency, from the job's scheduled time to its start (seconds). */
export const pickupLatencyBuckets = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600,
];

/** How metrics that are computed at scrape time get their values. */
export interface Collectors {
  /** Reads the actor tree for this scrape (so a failure to read it is counted in the same scrape). */
  inspect: () => void;
  node: () => void;
  slots: () => void;
  polling: () => void;
  breakers: () => void;
  coordinator: () => void;
  coordinatorCounter: (key: CoordinatorCounterKey) => () => void;
  /** Waits for the cached queue depth count (if one is due) and sets its gauges. */
  queueDepth: () => Promise<void>;
  /** Waits for the cached cluster view (if one is due) and sets its gauges. */
  cluster: () => Promise<void>;
  /** Waits for the cached read of the concurrency keys' load (if one is due) and sets its gauges. */
  concurrency: () => Promise<void>;
  /** Waits for the cached reads in flight, so their errors are counted in the same scrape. */
  settled: () => Promise<void>;
}

/** The numeric fields of the coordinator's status that become counters. */
export type CoordinatorCounterKey =
  "published" | "received" | "suppressed" | "malformed" | "reconnects" | "dropped";

/** Builds every metric on `registry`. Throws (prom-client) when a name is already registered there. */
export function buildMetricSet(registry: Registry, prefix: string, c: Collectors, tally: TypeTally) {
  const { Counter, Gauge, Histogram } = promClient();
  const registers = [registry];
  const names: string[] = [];
  const named = (name: string) => {
    names.push(prefix + name);
    return prefix + name;
  };
  const counter = <L extends string>(
    name: string,
    help: string,
    labelNames: readonly L[] = [],
    collect?: () => void,
  ) => new Counter<L>({ name: named(name), help, labelNames, registers, ...(collect ? { collect } : {}) });
  const gauge = <L extends string>(
    name: string,
    help: string,
    labelNames: readonly L[],
    collect: (() => void) | (() => Promise<void>) | undefined,
  ) => new Gauge<L>({ name: named(name), help, labelNames, registers, ...(collect ? { collect } : {}) });
  const histogram = (name: string, help: string, buckets: number[]) =>
    new Histogram({ name: named(name), help, buckets, registers });
  const byType = (name: string, help: string, buckets: number[]) =>
    new TypeHistogram(named(name), help, buckets).register(registry);

  const metrics = {
    // Node
    nodeInfo: gauge("node_info", "Always 1; labels describe this pawl node.", ["node_id"], undefined),
    buildInfo: gauge(
      "build_info",
      "Always 1; labels name this process's pawl release and the schema version it needs.",
      ["version", "schema_version"],
      undefined,
    ),
    nodeRunning: gauge(
      "node_running",
      "1 while the node runs jobs (started and not stopped), else 0.",
      [],
      c.node,
    ),
    errors: counter(
      "errors_total",
      "Errors inside the runtime that were logged and survived, by where.",
      ["where"],
      c.inspect,
    ),

    // Claims and boosts
    jobsClaimed: new Counter({
      name: named("jobs_claimed_total"),
      help: "Jobs claimed by this node, by job type.",
      labelNames: ["type"] as const,
      registers,
      collect(this: Counter<"type">) {
        tally.flushClaimed(this);
      },
    }),
    claimBatchSize: histogram("claim_batch_size", "Jobs per non-empty claim.", batchSizeBuckets),
    claimDuration: histogram(
      "claim_duration_seconds",
      "Duration of claim queries (empty ones included).",
      claimDurationBuckets,
    ),
    claimStatement: zeroKinds(
      new Histogram<"kind">({
        name: named("claim_statement_seconds"),
        help: "Duration of each claim statement, by kind (keyed, unkeyed, floored, full), timed-out ones included.",
        labelNames: ["kind"],
        buckets: claimDurationBuckets,
        registers,
      }),
    ),
    claimStatementTimeouts: zeroKinds(
      counter(
        "claim_statement_timeouts_total",
        "Claim statements that ran out of their time budget (claimStatementTimeoutMs) and gave up for a poll, by kind.",
        ["kind"],
      ),
    ),
    polls: counter("polls_total", "Claim queries run by the poller."),
    emptyPolls: counter("empty_polls_total", "Claim queries that claimed nothing."),
    lastPoll: gauge(
      "last_poll_timestamp_seconds",
      "Unix time of the poller's last cycle (a claim query, or a skip for want of room).",
      [],
      undefined,
    ),
    jobsBoosted: counter("jobs_boosted_total", "Claimed jobs whose priority was raised by the age boost."),
    boostLevels: histogram(
      "boost_levels",
      "Levels added by the age boost to each boosted claimed job.",
      boostLevelBuckets,
    ),

    // Polling
    pollingMode: gauge(
      "polling_mode",
      "The poller's current mode (1 for the current one).",
      ["mode"],
      c.polling,
    ),
    pollDelay: gauge("poll_delay_seconds", "The poller's current delay between polls.", [], c.polling),
    wakeups: counter("wakeups_total", "Poller wakeups, by source (local enqueue or coordinator hint).", [
      "source",
    ]),

    // Jobs
    jobsStarted: new Counter({
      name: named("jobs_started_total"),
      help: "Attempts whose handler started, by job type.",
      labelNames: ["type"] as const,
      registers,
      collect(this: Counter<"type">) {
        tally.flushStarted(this);
      },
    }),
    jobOutcomes: new Counter({
      name: named("job_outcomes_total"),
      help: "Finished attempts by job type and outcome (one outcome per attempt).",
      labelNames: ["type", "outcome"] as const,
      registers,
      collect(this: Counter<"type" | "outcome">) {
        tally.flushOutcomes(this);
      },
    }),
    jobTimeouts: counter(
      "job_timeouts_total",
      "Attempts that timed out (then retried or dead), by job type.",
      ["type"],
    ),
    jobDuration: byType(
      "job_duration_seconds",
      "Handler run time of succeeded attempts, by job type.",
      jobDurationBuckets,
    ),
    pickupLatency: byType(
      "job_pickup_latency_seconds",
      "Time from a job's scheduled time to the start of its attempt, by job type.",
      pickupLatencyBuckets,
    ),
    inFlight: gauge("jobs_in_flight", "Attempts running now (busy slots).", [], c.slots),
    freeSlots: gauge("slots_free", "Free slots (concurrency minus busy slots).", [], c.slots),
    buffered: gauge(
      "jobs_buffered",
      "Claimed jobs waiting in the local buffer for a free slot.",
      [],
      c.slots,
    ),

    // Watchdog
    softWarnings: counter("watchdog_soft_warnings_total", "Attempts that passed their soft timeout.", [
      "type",
    ]),
    cancelRequests: counter(
      "watchdog_cancel_requests_total",
      "Cancellation requests set by the watchdog before the deadline.",
      ["type"],
    ),
    hardTimeouts: counter("watchdog_hard_timeouts_total", "Attempts aborted at their hard deadline.", [
      "type",
    ]),

    // Circuit breakers
    breakerState: gauge(
      "breaker_state",
      "Circuit breaker state per service (1 for the current state).",
      ["service", "state"],
      c.breakers,
    ),
    breakerTransitions: counter("breaker_transitions_total", "Circuit breaker state changes.", [
      "service",
      "from",
      "to",
    ]),

    // Rate limits (the `key` label: `type:<type>` or `queue:<queue>`; every payload key is `key:*`)
    rateLimited: counter(
      "rate_limited_total",
      "Attempts a rate limit refused (handed back until the window opens, no attempt used), by full key.",
      ["type", "key"],
    ),
    rateWindowUsed: gauge(
      "rate_limit_window_used",
      "Starts in the key's current window, cluster-wide, as of this node's last admission of the key.",
      ["key"],
      undefined,
    ),
    rateWindowLimit: gauge(
      "rate_limit_window_limit",
      "The key's limit (starts per window), as of this node's last admission of the key.",
      ["key"],
      undefined,
    ),

    // Coordinator
    coordinatorConnected: gauge(
      "coordinator_connected",
      "1 while the coordinator's transport is connected.",
      ["transport"],
      c.coordinator,
    ),
    hintsPublished: counter(
      "coordinator_hints_published_total",
      "Wakeup hints handed to the transport.",
      [],
      c.coordinatorCounter("published"),
    ),
    hintsReceived: counter(
      "coordinator_hints_received_total",
      "Wakeup hints received from other nodes.",
      [],
      c.coordinatorCounter("received"),
    ),
    hintsSuppressed: counter(
      "coordinator_hints_suppressed_total",
      "Hints dropped as this node's own or merged by coalescing.",
      [],
      c.coordinatorCounter("suppressed"),
    ),
    hintsDropped: counter(
      "coordinator_hints_dropped_total",
      "Hints not sent: published while disconnected, under backpressure, or too large.",
      [],
      c.coordinatorCounter("dropped"),
    ),
    malformed: counter(
      "coordinator_malformed_messages_total",
      "Messages on the coordinator channel that were not valid hints.",
      [],
      c.coordinatorCounter("malformed"),
    ),
    reconnects: counter(
      "coordinator_reconnects_total",
      "Successful coordinator reconnections after an outage.",
      [],
      c.coordinatorCounter("reconnects"),
    ),
    coordinatorDisconnects: counter(
      "coordinator_disconnects_total",
      "Coordinator outages (one per lost connection, however many reconnect attempts it took), by transport.",
      ["transport"],
    ),
    // Durable handlers (docs/durable.md): bounded labels, never a step's name.
    durableSteps: counter(
      "durable_steps_total",
      "Durable calls by job type, kind (step, sleep, signal, spawn, wait) and outcome (run: its body ran and was recorded; replayed: its record was returned; failed: its body threw).",
      ["type", "kind", "outcome"],
    ),
    durableParks: counter(
      "durable_parks_total",
      "Durable jobs parked, by job type and what they wait for (sleep, signal, children).",
      ["type", "reason"],
    ),
    databaseConnectionErrors: counter(
      "database_connection_errors_total",
      "Database connections that failed and were dropped (server restart, terminated backend), by whether pawl held the connection or it sat idle in the pool.",
      ["source"],
    ),

    // Queue depth (a cached, bounded query)
    queueDepth: gauge(
      "queue_depth",
      "Jobs by status (pending, running, dead) and type, from a cached bounded count.",
      ["status", "type"],
      c.queueDepth,
    ),
    dlqSize: gauge("dlq_size", "Jobs in the dead letter queue (status DEAD).", [], c.queueDepth),
    queueDepthUpdated: gauge(
      "queue_depth_updated_timestamp_seconds",
      "Unix time of the last successful queue depth count.",
      [],
      c.queueDepth,
    ),
    scrapeReadErrors: counter(
      "scrape_read_errors_total",
      "Cached database reads behind a scrape (queue_depth, cluster, concurrency_keys) that failed or timed out; the last values are kept.",
      ["read", "reason"],
      c.settled,
    ),

    // Concurrency keys (a cached, bounded query; counts over every key, never a series per key)
    keysActive: gauge(
      "concurrency_keys_active",
      "Concurrency keys with a running or a due waiting job, cluster-wide.",
      [],
      c.concurrency,
    ),
    keysAtLimit: gauge(
      "concurrency_keys_at_limit",
      "Concurrency keys whose next due job waits because the key already runs that job's limit.",
      [],
      c.concurrency,
    ),
    keyedRunning: gauge(
      "concurrency_keyed_jobs_running",
      "Jobs with a concurrency key running now, cluster-wide.",
      [],
      c.concurrency,
    ),
    keyedWaiting: gauge(
      "concurrency_keyed_jobs_waiting",
      "Due jobs with a concurrency key not running (counted up to a cap, 100,000 by default).",
      [],
      c.concurrency,
    ),
    keysUpdated: gauge(
      "concurrency_keys_updated_timestamp_seconds",
      "Unix time of the last successful read of the concurrency keys' load.",
      [],
      c.concurrency,
    ),

    // Cluster: this node's heartbeat, sweeps, leases and clock (events) ...
    heartbeats: counter("cluster_heartbeats_total", "Heartbeats this node wrote."),
    heartbeatAt: gauge(
      "cluster_heartbeat_timestamp_seconds",
      "Unix time (the database's clock) of this node's last heartbeat.",
      [],
      undefined,
    ),
    heartbeatDuration: gauge(
      "cluster_heartbeat_duration_seconds",
      "How long this node's last heartbeat write took.",
      [],
      undefined,
    ),
    eventLoopLag: gauge(
      "event_loop_lag_max_seconds",
      "The worst event-loop delay between this node's last two heartbeats.",
      [],
      undefined,
    ),
    nodesDeclaredDead: counter(
      "cluster_nodes_declared_dead_total",
      "Nodes this node's orphan sweep declared dead.",
    ),
    orphansRecovered: counter(
      "cluster_orphans_recovered_total",
      "RUNNING jobs of dead nodes recovered by this node, by job type and the status they got (pending, dead).",
      ["type", "status"],
    ),
    leasesReleasedByAudit: counter(
      "cluster_lease_audit_released_total",
      "Rows leased to this node that it did not run (a claim's reply was lost), released by its lease audit, by job type.",
      ["type"],
    ),
    leasesAcquired: counter("cluster_leases_acquired_total", "Maintenance leases this node took, by lease.", [
      "lease",
    ]),
    leasesLost: counter(
      "cluster_leases_lost_total",
      "Maintenance leases this node lost while holding them.",
      ["lease"],
    ),
    clockSkew: gauge(
      "cluster_clock_skew_seconds",
      "The database's clock minus this node's (positive: the database is ahead).",
      [],
      undefined,
    ),
    clockSkewExceeded: gauge(
      "cluster_clock_skew_exceeded",
      "1 when the clock skew is above the node's clockSkewWarnMs.",
      [],
      undefined,
    ),
    recurringFires: counter(
      "recurring_fires_total",
      "Recurring schedule fires this node enqueued, by schedule.",
      ["schedule"],
    ),
    pruned: counter(
      "pruned_jobs_total",
      "Finished jobs deleted by this node's pruner (rows deleted, or the rows of a dropped history partition), by status.",
      ["status"],
    ),

    // ... and the cluster as this node reads it (a cached query of the node and lease tables).
    clusterNodes: gauge(
      "cluster_nodes",
      "Node rows by state: alive (heartbeat within the dead-node threshold) or dead.",
      ["state"],
      c.cluster,
    ),
    nodeHeartbeatAge: gauge(
      "cluster_node_heartbeat_age_seconds",
      "Age of each node's last heartbeat, by the database's clock.",
      ["node_id"],
      c.cluster,
    ),
    leaseHeld: gauge(
      "cluster_lease_held",
      "1 while this node holds the maintenance lease.",
      ["lease"],
      c.cluster,
    ),
    clusterUpdated: gauge(
      "cluster_view_updated_timestamp_seconds",
      "Unix time of the last successful read of the cluster view.",
      [],
      c.cluster,
    ),
  };
  return { metrics, names };
}

/** The metrics built by {@link buildMetricSet}. */
export type MetricSet = ReturnType<typeof buildMetricSet>["metrics"];
