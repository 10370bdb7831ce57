/**
 * The cluster's pure decisions, each taking the time (and every measurement) as arguments so they can be
 * tested exactly: how long to wait before the next heartbeat, how far the local clock is from the
 * database's, when a lease holder must stop, and whether this node may declare others dead yet.
 */

/** What the heartbeat interval decision looks at. */
export interface HeartbeatDelayInput {
  /** The configured interval: the longest wait between two beats (ms). */
  intervalMs: number;
  /** The worst event-loop delay seen since the previous beat (ms): timers fire this late. */
  lagMs: number;
  /** How long the previous beat's statement took, connection wait included (ms). */
  beatDurationMs: number;
  /** Whether the previous beat failed (the database was unreachable). */
  failed: boolean;
}

/**
 * The delay before the next heartbeat. The time between two rows written is roughly the delay plus the
 * event-loop lag (the timer fires late) plus the statement's duration, so the delay is shortened by both
 * to keep the beats `intervalMs` apart: a lagging loop beats *more* often, never less, and does not miss
 * the dead-node threshold. It never drops below a floor of a tenth of the interval (at least 50 ms), so a
 * stuck loop does not turn into a busy one. After a failed beat the next one is tried after half the
 * interval, so a node that lost the database is back in the table soon after it returns.
 *
 * @example
 * ```ts
 * heartbeatDelayMs({ intervalMs: 5000, lagMs: 0, beatDurationMs: 2, failed: false }); // 4998
 * heartbeatDelayMs({ intervalMs: 5000, lagMs: 1500, beatDurationMs: 500, failed: false }); // 3000
 * heartbeatDelayMs({ intervalMs: 5000, lagMs: 9000, beatDurationMs: 0, failed: false }); // 500 (the floor)
 * ```
 */
export function heartbeatDelayMs(input: HeartbeatDelayInput): number {
  const interval = Math.max(1, input.intervalMs);
  const floor = Math.max(Math.min(50, interval), Math.round(interval / 10));
  if (input.failed) return Math.max(floor, Math.round(interval / 2));
  const lag = Number.isFinite(input.lagMs) && input.lagMs > 0 ? input.lagMs : 0;
  const duration =
    Number.isFinite(input.beatDurationMs) && input.beatDurationMs > 0 ? input.beatDurationMs : 0;
  return Math.max(floor, Math.round(interval - lag - duration));
}

/** A clock comparison: the database's time against the local clock. */
export interface ClockSkew {
  /** Database time minus local time (ms); positive when the database is ahead. */
  skewMs: number;
  /** The round trip of the query that read the database's time (ms). */
  roundTripMs: number;
  /** How wrong `skewMs` can be: half the round trip (ms). */
  uncertaintyMs: number;
}

/**
 * Estimates the skew from one `SELECT now()`: the database read its clock somewhere between sending and
 * receiving, so it is compared with the midpoint of the two local readings (Cristian's algorithm).
 *
 * @example
 * ```ts
 * estimateClockSkew(1000, 1010, 3005); // { skewMs: 2000, roundTripMs: 10, uncertaintyMs: 5 }
 * ```
 */
export function estimateClockSkew(sentAtMs: number, receivedAtMs: number, databaseMs: number): ClockSkew {
  const roundTripMs = Math.max(0, receivedAtMs - sentAtMs);
  const midpoint = sentAtMs + roundTripMs / 2;
  return { skewMs: Math.round(databaseMs - midpoint), roundTripMs, uncertaintyMs: roundTripMs / 2 };
}

/**
 * Whether a skew is certainly above the warning level: by more than `warnMs` even after taking off the
 * measurement's uncertainty, so a slow query alone never raises the warning.
 */
export function skewExceeded(skew: ClockSkew, warnMs: number): boolean {
  return Math.abs(skew.skewMs) - skew.uncertaintyMs > warnMs;
}

/**
 * The local time by which a lease holder must have finished: the database granted the lease after the
 * request was sent, so the lease lasts at least `ttlMs` from `requestSentAtMs` by the local clock. A
 * margin (a tenth of the TTL, at most one second) covers timer lateness; the holder checks it between
 * steps and stops when it has passed, so singleton work never runs on past its lease.
 */
export function leaseDeadline(requestSentAtMs: number, ttlMs: number): number {
  return requestSentAtMs + ttlMs - Math.min(1000, Math.round(ttlMs / 10));
}

/**
 * Whether this node may run an orphan sweep: only once its own heartbeats have succeeded without a break
 * for a whole dead-node threshold. After an outage of the database (a restart, a network cut) every
 * node's heartbeat is old; the first node back must give the others a threshold to beat again before it
 * judges them, or it would take the jobs of live nodes.
 *
 * @param healthySinceMs When the current run of successful beats began (local clock), or `null` while
 *   the last beat failed or none succeeded yet.
 */
export function sweepReady(healthySinceMs: number | null, nowMs: number, thresholdMs: number): boolean {
  return healthySinceMs !== null && nowMs - healthySinceMs >= thresholdMs;
}

/**
 * How long a node's periodic sweep rests the sweep lease: half the sweep interval. Every node tries to
 * sweep once per interval; while the lease rests, every try is refused in one statement, so the cluster
 * sweeps one to two times per interval however many nodes try (not once per node), and a lone node still
 * sweeps at every try. Nobody, the last sweeper neither, takes a resting lease, so a node of an older
 * release that waits for this lease for its startup cleanup gets it.
 *
 * @example
 * ```ts
 * sweepRestMs(2000); // 1000
 * ```
 */
export function sweepRestMs(sweepIntervalMs: number): number {
  return Math.floor(sweepIntervalMs / 2);
}

/**
 * The wait before the next signal-timeout sweep: until the next deadline (the earliest of every parked
 * job's, read by the sweep; at least 10 ms, so an overdue one does not spin), never longer than
 * `idleIntervalMs` (nor shorter than `intervalMs` while none is near). A node that parks a job wakes its
 * own sweep for that deadline, and every node learns the earliest deadline at each pass, so only a
 * deadline parked by a node that died before its next pass elsewhere waits up to `idleIntervalMs`.
 * Deadlines far ahead (100,000 jobs sleeping for days) therefore cost an idle node nothing more than none
 * (issue 41). A failed sweep (`nextDeadlineMs` undefined) waits `intervalMs`.
 *
 * @example
 * ```ts
 * signalSweepDelayMs(null, 1000, 10_000); // 10000: no parked job has a deadline
 * signalSweepDelayMs(250.2, 1000, 10_000); // 251
 * signalSweepDelayMs(-5, 1000, 10_000); // 10: overdue
 * signalSweepDelayMs(86_400_000, 1000, 10_000); // 10000: a deadline a day ahead
 * signalSweepDelayMs(undefined, 1000, 10_000); // 1000: the sweep failed
 * ```
 */
export function signalSweepDelayMs(
  nextDeadlineMs: number | null | undefined,
  intervalMs: number,
  idleIntervalMs: number,
): number {
  if (nextDeadlineMs === undefined) return intervalMs;
  if (nextDeadlineMs === null) return Math.max(intervalMs, idleIntervalMs);
  return Math.min(Math.max(intervalMs, idleIntervalMs), Math.max(10, Math.ceil(nextDeadlineMs)));
}
