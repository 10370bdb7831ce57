/**
 * The health verdict of a node, as a pure function of what was observed and `now` (table-tested in
 * test/unit/logic/health.test.ts). The facts are gathered by api/node-health.ts; this file decides.
 *
 * Checks, each `pass`, `warn`, `fail` or `skip` (not a running node):
 * - `database`: a `select 1` answered within the timeout.
 * - `heartbeat`: the age of this node's last written heartbeat. Past `deadNodeThresholdMs` the others
 *   treat the node as dead and take its jobs back: fail. Past two intervals (a missed beat): warn.
 * - `claimLoop`: the last successful poll is no older than the delay it chose plus the dead-node
 *   threshold, or the node has no room to claim into (busy, so it does not poll).
 * - `outcomeBacklog`: finished jobs whose outcome is not written yet. At the limit the node stops
 *   claiming (fail); from half of it, warn.
 * - `coordinator`: the wakeup transport is connected (or none is configured). Disconnected is a warn:
 *   polling still finds the work, only later.
 *
 * Readiness (`ready`): the node runs, is not stopping, and no check fails. Liveness (`live`): false only
 * when restarting the process would help, which is when the claim loop is stuck while the database
 * answers; a database outage fails readiness, not liveness, so an orchestrator does not restart every
 * node of a cluster because PostgreSQL is away.
 */

/** The state of one check. */
export type HealthStatus = "pass" | "warn" | "fail" | "skip";

/** One check of a {@link HealthReport}. */
export interface HealthCheck {
  /** The state. */
  status: HealthStatus;
  /** What was observed, in words (no connection strings, no database error text). */
  detail: string;
}

/** The names of the checks. */
export type HealthCheckName = "database" | "heartbeat" | "claimLoop" | "outcomeBacklog" | "coordinator";

/** What `pawl.health()` answers. */
export interface HealthReport {
  /** The worst check: `fail` if any fails, else `warn` if any warns, else `pass`. */
  status: "pass" | "warn" | "fail";
  /** Whether the node should receive work (a readiness probe): running, not stopping, no check failing. */
  ready: boolean;
  /** Whether the process is alive in a way a restart would not improve (a liveness probe). */
  live: boolean;
  /** `running`, `stopping`, or `client` (not started: only the database is checked). */
  state: "running" | "stopping" | "client";
  /** Each check. */
  checks: Record<HealthCheckName, HealthCheck>;
  /** When the report was made (local clock, ms since the epoch). */
  at: number;
}

/** What the verdict is made from (gathered by api/node-health.ts). */
export interface HealthFacts {
  state: "running" | "stopping" | "client";
  /** The database's answer: ok, or why not (a short reason, never the error's text). */
  database: { ok: true; latencyMs: number } | { ok: false; reason: string };
  /** When the last heartbeat was written (local ms), or null before the first. */
  lastHeartbeatAt: number | null;
  /** When the node started (local ms), for a heartbeat or poll that has not happened yet. */
  startedAt: number | null;
  heartbeatIntervalMs: number;
  deadNodeThresholdMs: number;
  /** The last successful poll (local ms) and the delay it chose, or null before the first. */
  lastPoll: { at: number; delayMs: number } | null;
  /** Room to claim into now (0: busy, draining or held back by unwritten outcomes). */
  room: number;
  pendingOutcomes: number;
  outcomeBacklogLimit: number;
  /** The wakeup transport, or null when none was made. */
  coordinator: { transport: string; connected: boolean } | null;
}

const skip = (detail: string): HealthCheck => ({ status: "skip", detail });

/**
 * The verdict on `facts` at `now`.
 *
 * @example
 * ```ts
 * healthReport({ ...facts, lastHeartbeatAt: now - 20_000 }, now).checks.heartbeat.status; // "fail" (threshold 15 s)
 * ```
 */
export function healthReport(facts: HealthFacts, now: number): HealthReport {
  const node = facts.state !== "client";
  const checks: Record<HealthCheckName, HealthCheck> = {
    database: facts.database.ok
      ? { status: "pass", detail: `answered in ${Math.round(facts.database.latencyMs)} ms` }
      : { status: "fail", detail: facts.database.reason },
    heartbeat: node ? heartbeatCheck(facts, now) : skip("not a running node"),
    claimLoop: node ? claimLoopCheck(facts, now) : skip("not a running node"),
    outcomeBacklog: node ? backlogCheck(facts) : skip("not a running node"),
    coordinator: node ? coordinatorCheck(facts) : skip("not a running node"),
  };
  const states = Object.values(checks).map((c) => c.status);
  const status = states.includes("fail") ? "fail" : states.includes("warn") ? "warn" : "pass";
  return {
    status,
    ready: facts.state === "running" && status !== "fail",
    live: !(checks.claimLoop.status === "fail" && checks.database.status === "pass"),
    state: facts.state,
    checks,
    at: now,
  };
}

function heartbeatCheck(f: HealthFacts, now: number): HealthCheck {
  const since = f.lastHeartbeatAt ?? f.startedAt;
  if (since === null) return { status: "warn", detail: "no heartbeat yet" };
  const age = Math.max(0, now - since);
  const what = f.lastHeartbeatAt === null ? "no heartbeat since the start" : "last heartbeat";
  const detail = `${what} ${Math.round(age)} ms ago (dead after ${f.deadNodeThresholdMs} ms)`;
  if (age > f.deadNodeThresholdMs) return { status: "fail", detail };
  if (age > 2 * f.heartbeatIntervalMs) return { status: "warn", detail };
  return { status: "pass", detail };
}

function claimLoopCheck(f: HealthFacts, now: number): HealthCheck {
  if (f.state === "stopping") return { status: "pass", detail: "draining: no more claims" };
  if (f.room === 0) return { status: "pass", detail: "no room to claim into (busy)" };
  const last = f.lastPoll ?? (f.startedAt === null ? null : { at: f.startedAt, delayMs: 0 });
  if (last === null) return { status: "warn", detail: "no poll yet" };
  const age = Math.max(0, now - last.at);
  const allowed = last.delayMs + f.deadNodeThresholdMs;
  const detail = `${f.lastPoll === null ? "no poll since the start" : "last poll"} ${Math.round(age)} ms ago (next due after ${last.delayMs} ms)`;
  return { status: age > allowed ? "fail" : "pass", detail };
}

function backlogCheck(f: HealthFacts): HealthCheck {
  const detail = `${f.pendingOutcomes} outcomes waiting to be written (claims stop at ${f.outcomeBacklogLimit})`;
  if (f.pendingOutcomes >= f.outcomeBacklogLimit) return { status: "fail", detail };
  if (f.pendingOutcomes >= f.outcomeBacklogLimit / 2) return { status: "warn", detail };
  return { status: "pass", detail };
}

function coordinatorCheck(f: HealthFacts): HealthCheck {
  const c = f.coordinator;
  if (c === null || c.transport === "none")
    return { status: "pass", detail: "no wakeup transport: polling only" };
  if (c.connected) return { status: "pass", detail: `${c.transport} connected` };
  return {
    status: "warn",
    detail: `${c.transport} disconnected: work is found by polling until it reconnects`,
  };
}
