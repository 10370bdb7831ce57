/**
 * The event half of the metrics: one listener per runtime event, each a counter increment, a histogram
 * observation or a gauge update. Per job that is two listeners (`job:started` and the outcome), each a
 * map lookup and a couple of additions (hot-path.ts); everything else happens per claim, per poll, per
 * beat or per sweep, or is rare (timeouts, breaker changes).
 */
import type { PawlEventName, PawlEvents } from "../src/index.js";
import type { TypeCounts, TypeTally } from "./hot-path.js";
import { jobOutcomes, type JobOutcome } from "./metric-labels.js";
import type { MetricSet } from "./metric-set.js";

/** Something that delivers the runtime's events (a {@link Pawl}). */
export interface EventSource {
  on<E extends PawlEventName>(name: E, listener: (payload: PawlEvents[E]) => void): () => void;
}

/** Hooks the event listeners share with the scrape-time collectors. */
export interface EventState {
  /** The last polling mode and delay seen in a `poll` event (used until the actor tree is readable). */
  lastPoll: { mode: string | null; delayMs: number | null };
  /** The last breaker state seen per service (kept when the node stops and its tree is gone). */
  breakers: Map<string, string>;
}

/** The `key` label of a rate-limit key: a payload key's value is left out (unbounded cardinality). */
export const rateKeyLabel = (key: string): string => (key.startsWith("key:") ? "key:*" : key);

/** Subscribes every listener; returns the unsubscribe functions. */
export function subscribeMetrics(
  source: EventSource,
  m: MetricSet,
  state: EventState,
  tally: TypeTally,
): (() => void)[] {
  // The counts of a type; its series start at 0 when it is first seen, so rate() works from its first job.
  const countsOf = (type: string): TypeCounts => {
    const known = tally.peek(type);
    if (known !== undefined) return known;
    const t = { type };
    m.jobsClaimed.inc(t, 0);
    m.jobsStarted.inc(t, 0);
    for (const outcome of jobOutcomes) m.jobOutcomes.inc({ type, outcome }, 0);
    m.jobTimeouts.inc(t, 0);
    m.softWarnings.inc(t, 0);
    m.cancelRequests.inc(t, 0);
    m.hardTimeouts.inc(t, 0);
    m.jobDuration.zero(type);
    m.pickupLatency.zero(type);
    return tally.of(type);
  };
  const outcome = (type: string, o: JobOutcome) => {
    countsOf(type).outcomes[o]++;
  };

  return [
    // Claims, boosts, polling
    source.on("claim", (e) => {
      for (const job of e.jobs) countsOf(job.type).claimed++;
      m.claimBatchSize.observe(e.jobs.length);
      for (const levels of e.boosts) {
        m.jobsBoosted.inc();
        m.boostLevels.observe(levels);
      }
    }),
    source.on("poll", (e) => {
      state.lastPoll.mode = e.mode;
      state.lastPoll.delayMs = e.delayMs;
      m.lastPoll.set(Date.now() / 1000);
      if (e.limit <= 0) return; // no room: no query ran
      m.polls.inc();
      if (e.claimed === 0) m.emptyPolls.inc();
      m.claimDuration.observe(e.durationMs / 1000);
    }),
    source.on("claim-statement", (e) => {
      m.claimStatement.observe({ kind: e.kind }, Math.max(0, e.durationMs) / 1000);
      if (e.outcome === "timeout") m.claimStatementTimeouts.inc({ kind: e.kind });
    }),
    source.on("wakeup", (e) => m.wakeups.inc({ source: e.source })),

    // Jobs
    source.on("job:started", (e) => {
      countsOf(e.job.type).started++;
      m.pickupLatency.observe(e.job.type, Math.max(0, e.pickupLatencyMs) / 1000);
    }),
    source.on("job:succeeded", (e) => {
      outcome(e.job.type, "succeeded");
      m.jobDuration.observe(e.job.type, Math.max(0, e.durationMs) / 1000);
    }),
    source.on("job:retried", (e) => {
      outcome(e.job.type, e.timedOut ? "timed_out" : "retried");
      if (e.timedOut) m.jobTimeouts.inc({ type: e.job.type });
    }),
    source.on("job:dead", (e) => {
      outcome(e.job.type, "dead");
      if (e.timedOut) m.jobTimeouts.inc({ type: e.job.type });
    }),
    source.on("job:snoozed", (e) => outcome(e.job.type, "snoozed")),
    source.on("job:canceled", (e) => outcome(e.job.type, "canceled")),
    source.on("job:rescheduled", (e) =>
      outcome(e.job.type, e.reason === "rate-limit" ? "rescheduled_rate_limit" : `rescheduled_${e.reason}`),
    ),
    source.on("job:waiting", (e) => {
      outcome(e.job.type, "waiting");
      if (e.durable) m.durableParks.inc({ type: e.job.type, reason: e.durable.reason });
    }),
    source.on("durable:step", (e) => m.durableSteps.inc({ type: e.type, kind: e.kind, outcome: e.outcome })),
    source.on("job:lost", (e) => outcome(e.job.type, "lost")),

    // Watchdog
    source.on("watchdog:soft-warning", (e) => m.softWarnings.inc({ type: e.job.type })),
    source.on("watchdog:cancel-request", (e) => m.cancelRequests.inc({ type: e.job.type })),
    source.on("watchdog:hard-timeout", (e) => m.hardTimeouts.inc({ type: e.job.type })),

    // Breakers and the coordinator's link
    source.on("breaker:change", (e) => {
      state.breakers.set(e.service, e.to);
      m.breakerTransitions.inc({ service: e.service, from: e.from.toLowerCase(), to: e.to.toLowerCase() });
    }),
    // Rate limits: payload keys are one label value, so a key per tenant cannot blow up the series.
    source.on("job:rate-limited", (e) => {
      for (const key of e.keys) m.rateLimited.inc({ type: e.job.type, key: rateKeyLabel(key) });
    }),
    source.on("rate-limit:window", (e) => {
      if (e.key.startsWith("key:")) return; // one gauge per payload value would be unbounded
      m.rateWindowUsed.set({ key: e.key }, e.used);
      m.rateWindowLimit.set({ key: e.key }, e.limit);
    }),
    source.on("coordinator:connected", (e) => m.coordinatorConnected.set({ transport: e.transport }, 1)),
    source.on("coordinator:disconnected", (e) => {
      m.coordinatorConnected.set({ transport: e.transport }, 0);
      m.coordinatorDisconnects.inc({ transport: e.transport });
    }),
    source.on("database:connection-error", (e) => m.databaseConnectionErrors.inc({ source: e.source })),

    // Cluster
    source.on("cluster:heartbeat", (e) => {
      m.heartbeats.inc();
      m.heartbeatAt.set(e.heartbeatAt.getTime() / 1000);
      m.heartbeatDuration.set(e.durationMs / 1000);
      m.eventLoopLag.set(e.lagMs / 1000);
    }),
    source.on("cluster:node-dead", () => m.nodesDeclaredDead.inc()),
    source.on("cluster:orphans-recovered", (e) => {
      for (const job of e.jobs) m.orphansRecovered.inc({ type: job.type, status: job.status.toLowerCase() });
    }),
    source.on("cluster:lease-audit", (e) => {
      for (const job of e.released) m.leasesReleasedByAudit.inc({ type: job.type });
    }),
    source.on("cluster:lease-acquired", (e) => m.leasesAcquired.inc({ lease: e.name })),
    source.on("cluster:lease-lost", (e) => m.leasesLost.inc({ lease: e.name })),
    source.on("cluster:clock-skew", (e) => {
      m.clockSkew.set(e.skewMs / 1000);
      m.clockSkewExceeded.set(e.exceeded ? 1 : 0);
    }),
    source.on("recurring:fired", (e) => m.recurringFires.inc({ schedule: e.name })),
    source.on("prune:done", (e) => {
      if (e.succeeded > 0) m.pruned.inc({ status: "succeeded" }, e.succeeded);
      if (e.canceled > 0) m.pruned.inc({ status: "canceled" }, e.canceled);
      if (e.dead > 0) m.pruned.inc({ status: "dead" }, e.dead);
    }),
    // A dropped time partition is pruning too: its SUCCEEDED rows count like deleted ones.
    source.on("history:done", (e) => {
      if (e.droppedRows > 0) m.pruned.inc({ status: "succeeded" }, e.droppedRows);
    }),

    source.on("error", (e) => m.errors.inc({ where: e.where })),
  ];
}
