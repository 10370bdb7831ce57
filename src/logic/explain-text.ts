/**
 * The plain-English lines for explain's reasons ({@link describeReason}) and the short durations they are
 * written in. Its own file because it is presentation, not decision: the CLI and the console render with
 * it, while ./explain.ts decides which reasons hold and never needs the wording.
 */
import type { ExplainReason } from "./explain.js";

/**
 * One line of plain English for a reason, relative to `now` (for the CLI and the console).
 *
 * @example
 * ```ts
 * describeReason({ kind: "scheduled", at, inMs: 90_000 }, now); // "scheduled for 2030-01-01T00:01:30.000Z (in 1m 30s)"
 * ```
 */
export function describeReason(r: ExplainReason, now: Date): string {
  const ago = (d: Date | null) =>
    d ? ` since ${d.toISOString()} (${duration(now.getTime() - d.getTime())} ago)` : "";
  switch (r.kind) {
    case "finished":
      return (
        `finished ${r.outcome}${r.finishedAt ? ` at ${r.finishedAt.toISOString()}` : ""} after ${r.attempts} attempt(s)` +
        (r.cancelReason ? `; reason: ${r.cancelReason}` : "") +
        (r.lastError ? `; last error: ${r.lastError}` : "")
      );
    case "running":
      return (
        `running on node ${r.nodeId}${ago(r.since)}; heartbeat ${duration(r.heartbeatAgeMs)} old` +
        (r.deadline ? `; deadline ${r.deadline.toISOString()}` : "")
      );
    case "orphaned":
      return (
        `held by node ${r.nodeId}, which is dead (${r.heartbeatAt ? `last heartbeat ${r.heartbeatAt.toISOString()}` : "no node row"}); ` +
        `orphan recovery expected by ${r.expectedRescueAt.toISOString()}`
      );
    case "paused":
      return r.by === "job"
        ? `paused (the job itself)${ago(r.since)}`
        : `paused: its ${r.by} ${JSON.stringify(r.name)} is paused${ago(r.since)}${r.pausedBy ? ` by ${r.pausedBy}` : ""}`;
    case "waiting-signal":
      return "waiting for a signal (pawl.signal(id, payload) resumes it)";
    case "waiting-durable":
      if (r.wait === "sleep") return `sleeping until ${r.until?.toISOString() ?? "?"} (step '${r.step}')`;
      if (r.wait === "signal") {
        return (
          `waiting for signal '${r.step}' since ${r.since.toISOString()}` +
          (r.until ? `, times out at ${r.until.toISOString()}` : "")
        );
      }
      return (
        `waiting for ${r.pending?.length ?? 0} of ${r.total ?? 0} children (${(r.pending ?? []).join(", ")})` +
        ` (step '${r.step}')` +
        (r.until ? `, times out at ${r.until.toISOString()}` : "")
      );
    case "waiting-dependencies":
      return r.dependencies.length > 0
        ? `waiting for its flow ${r.flowId ?? ""} dependencies: ${r.dependencies
            .map((d) => `${d.step ?? d.id} (job ${d.id}, ${d.status})`)
            .join(", ")}`
        : `waiting for the rest of its flow ${r.flowId ?? ""} to finish`;
    case "scheduled":
      return `scheduled for ${r.at.toISOString()} (in ${duration(r.inMs)})`;
    case "no-node":
      return (
        `no live node runs type ${JSON.stringify(r.type)} in queue ${JSON.stringify(r.queue)}` +
        (r.typeWithoutQueue.length > 0
          ? ` (${r.typeWithoutQueue.join(", ")} register the type but not the queue)`
          : "") +
        `; alive: ${r.alive.length === 0 ? "none" : r.alive.map((n) => `${n.nodeId} [${n.types.join(", ")}]`).join("; ")}`
      );
    case "queue-full":
      return `queue ${JSON.stringify(r.queue)} is full on every node that serves it: ${r.nodes
        .map((n) => `${n.nodeId} ${n.running}/${n.limit}`)
        .join(", ")}`;
    case "breaker-open":
      return `breaker of service ${JSON.stringify(r.service)} is open on every node that runs it${
        r.until ? ` until ${r.until.toISOString()}` : ""
      }`;
    case "permits-exhausted":
      return `all ${r.capacity} permits of resource ${JSON.stringify(r.resource)} are held${
        r.holders.length > 0 ? ` by jobs ${r.holders.map((h) => `${h.jobId} (${h.nodeId})`).join(", ")}` : ""
      }`;
    case "key-at-limit":
      return `waiting: key ${r.key} has ${r.running} of ${r.limit} running`;
    case "rate-limited":
      return (
        `rate limited until ${r.until.toISOString()} (in ${duration(r.until.getTime() - now.getTime())}): ` +
        `${JSON.stringify(r.key)} had ${r.used} of ${r.limit} starts in the last ${duration(r.perMs)}`
      );
  }
}

/** A short human duration: `850ms`, `12s`, `1m 30s`, `2h 5m`, `3d 4h`. */
export function duration(ms: number): string {
  const abs = Math.abs(Math.round(ms));
  const sign = ms < 0 ? "-" : "";
  if (abs < 1000) return `${sign}${abs}ms`;
  const s = Math.floor(abs / 1000);
  if (s < 60) return `${sign}${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${sign}${m}m ${s % 60}s`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${sign}${h}h ${m % 60}m`;
  return `${sign}${Math.floor(h / 24)}d ${h % 24}h`;
}
