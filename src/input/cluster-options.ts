/**
 * The cluster's part of the configuration: heartbeats, failure detection, leases, clock skew, recurring
 * jobs and pruning. Every option is a top-level key of createPawl (so `createPawl({ deadNodeThresholdMs:
 * 5000 })`), resolved and validated here once, so each rule lives in one place.
 */
import { ValidationError } from "../core/errors.js";
import { intOption } from "./int-option.js";

const second = 1000;
const minute = 60 * second;
const hour = 60 * minute;
const day = 24 * hour;
const maxMs = 2 ** 31 - 1;

/** Cluster options of {@link createPawl}. Every field is optional. */
export interface ClusterOptions {
  /**
   * How often this node writes its heartbeat (ms), at most. The interval shrinks when the event loop lags
   * or the database is slow, so that a busy node still beats several times per threshold. Default 5000;
   * at most a third of `deadNodeThresholdMs`.
   */
  heartbeatIntervalMs?: number;
  /** A node whose heartbeat is older than this (database time) is dead and its jobs are recovered (ms). Default 15,000. */
  deadNodeThresholdMs?: number;
  /** How often a node tries to take the sweep lease and recover dead nodes' jobs (ms). Default 2000. */
  orphanSweepIntervalMs?: number;
  /** How long a dead node's row stays in scheduler_node before it is deleted (ms). Default 1 hour. */
  nodeRetentionMs?: number;
  /** SUCCEEDED jobs are deleted this long after they finished (ms). Default 1 day. */
  succeededRetentionMs?: number;
  /** CANCELED jobs are deleted this long after they were canceled (ms). Default 1 day. */
  canceledRetentionMs?: number;
  /** DEAD jobs (the dead letter queue) are deleted this long after they died (ms). Default 14 days. */
  deadRetentionMs?: number;
  /** Rows deleted per pruning statement; small batches keep locks short. Default 1000. */
  pruneBatchSize?: number;
  /** How often a node tries to prune (ms). Default 60,000. */
  pruneIntervalMs?: number;
  /** The longest wait between two checks for due recurring jobs (ms); the check also wakes for the next due fire. Default 10,000. */
  recurringCheckIntervalMs?: number;
  /**
   * The time-to-live of a maintenance lease (ms): a lease held by a node that crashed mid-pass frees itself
   * after this. Passes are short and give their lease back, and long ones stop near the deadline and go
   * on in the next pass, so it can be short. Default and maximum: `deadNodeThresholdMs`, so a node dying
   * while it sweeps never delays the recovery of its own jobs beyond the threshold.
   */
  leaseTtlMs?: number;
  /** How often the local clock is compared with the database's (ms). Default 60,000. */
  clockSkewCheckIntervalMs?: number;
  /** A skew larger than this (either way) is logged as a warning and reported (ms). Default 1000. */
  clockSkewWarnMs?: number;
  /**
   * How often a node audits its own leases (ms): rows leased to it that it does not run (a claim committed
   * but its reply was lost) go back to PENDING. The audit reads the live table (no index names the lease),
   * so it runs rarely on its own; a failed claim brings it forward to `leaseAuditGraceMs` later.
   * Default 60,000 (docs/fault-tolerance.md#lost-replies).
   */
  leaseAuditIntervalMs?: number;
  /**
   * How old a lease must be before the audit may release it, and how long after a failed claim the audit
   * runs (ms): the time a released lease can stay stranded after the failure the node saw. Default 2000.
   */
  leaseAuditGraceMs?: number;
}

/** {@link ClusterOptions} with defaults applied. */
export type ResolvedClusterOptions = Required<ClusterOptions>;

/** The cluster option names (createPawl accepts them beside the base options). */
export const clusterOptionKeys = [
  "heartbeatIntervalMs",
  "deadNodeThresholdMs",
  "orphanSweepIntervalMs",
  "nodeRetentionMs",
  "succeededRetentionMs",
  "canceledRetentionMs",
  "deadRetentionMs",
  "pruneBatchSize",
  "pruneIntervalMs",
  "recurringCheckIntervalMs",
  "leaseTtlMs",
  "clockSkewCheckIntervalMs",
  "clockSkewWarnMs",
  "leaseAuditIntervalMs",
  "leaseAuditGraceMs",
] as const satisfies readonly (keyof ClusterOptions)[];

/** The defaults. */
export const defaultClusterOptions: ResolvedClusterOptions = {
  heartbeatIntervalMs: 5 * second,
  deadNodeThresholdMs: 15 * second,
  orphanSweepIntervalMs: 2 * second,
  nodeRetentionMs: hour,
  succeededRetentionMs: day,
  canceledRetentionMs: day,
  deadRetentionMs: 14 * day,
  pruneBatchSize: 1000,
  pruneIntervalMs: minute,
  recurringCheckIntervalMs: 10 * second,
  leaseTtlMs: 15 * second,
  clockSkewCheckIntervalMs: minute,
  clockSkewWarnMs: second,
  leaseAuditIntervalMs: minute,
  leaseAuditGraceMs: 2 * second,
};

/**
 * Applies defaults and validates.
 *
 * @throws ValidationError `INVALID_CONFIG` naming the option: out of range, or a heartbeat too slow for
 *   the dead-node threshold (fewer than three beats per threshold would declare a live node dead after
 *   one slow beat), a node retention shorter than the threshold, or a lease TTL longer than it.
 *
 * @example
 * ```ts
 * resolveClusterOptions({ deadNodeThresholdMs: 3000 }); // heartbeatIntervalMs becomes 1000
 * ```
 */
export function resolveClusterOptions(o: ClusterOptions = {}): ResolvedClusterOptions {
  const threshold = intOption(
    "deadNodeThresholdMs",
    o.deadNodeThresholdMs ?? defaultClusterOptions.deadNodeThresholdMs,
    300,
    maxMs,
  );
  // A threshold below the default lowers the default heartbeat with it (three beats per threshold).
  const heartbeatDefault = Math.min(defaultClusterOptions.heartbeatIntervalMs, Math.floor(threshold / 3));
  const heartbeatIntervalMs = intOption(
    "heartbeatIntervalMs",
    o.heartbeatIntervalMs ?? heartbeatDefault,
    50,
    maxMs,
  );
  if (heartbeatIntervalMs * 3 > threshold) {
    throw new ValidationError(
      "INVALID_CONFIG",
      `invalid heartbeatIntervalMs ${heartbeatIntervalMs}: use at most a third of deadNodeThresholdMs (${threshold})`,
    );
  }
  const nodeRetentionMs = intOption(
    "nodeRetentionMs",
    o.nodeRetentionMs ?? Math.max(defaultClusterOptions.nodeRetentionMs, threshold),
    0,
    maxMs,
  );
  if (nodeRetentionMs < threshold) {
    throw new ValidationError(
      "INVALID_CONFIG",
      `invalid nodeRetentionMs ${nodeRetentionMs}: use at least deadNodeThresholdMs (${threshold})`,
    );
  }
  const leaseTtlMs = intOption("leaseTtlMs", o.leaseTtlMs ?? threshold, 100, maxMs);
  if (leaseTtlMs > threshold) {
    throw new ValidationError(
      "INVALID_CONFIG",
      `invalid leaseTtlMs ${leaseTtlMs}: use at most deadNodeThresholdMs (${threshold}), or a node dying mid-sweep delays the rescue`,
    );
  }
  const d = defaultClusterOptions;
  return {
    heartbeatIntervalMs,
    deadNodeThresholdMs: threshold,
    orphanSweepIntervalMs: intOption(
      "orphanSweepIntervalMs",
      o.orphanSweepIntervalMs ?? d.orphanSweepIntervalMs,
      10,
      maxMs,
    ),
    nodeRetentionMs,
    succeededRetentionMs: intOption(
      "succeededRetentionMs",
      o.succeededRetentionMs ?? d.succeededRetentionMs,
      0,
      Number.MAX_SAFE_INTEGER,
    ),
    canceledRetentionMs: intOption(
      "canceledRetentionMs",
      o.canceledRetentionMs ?? d.canceledRetentionMs,
      0,
      Number.MAX_SAFE_INTEGER,
    ),
    deadRetentionMs: intOption(
      "deadRetentionMs",
      o.deadRetentionMs ?? d.deadRetentionMs,
      0,
      Number.MAX_SAFE_INTEGER,
    ),
    pruneBatchSize: intOption("pruneBatchSize", o.pruneBatchSize ?? d.pruneBatchSize, 1, 100_000),
    pruneIntervalMs: intOption("pruneIntervalMs", o.pruneIntervalMs ?? d.pruneIntervalMs, 10, maxMs),
    recurringCheckIntervalMs: intOption(
      "recurringCheckIntervalMs",
      o.recurringCheckIntervalMs ?? d.recurringCheckIntervalMs,
      10,
      maxMs,
    ),
    leaseTtlMs,
    clockSkewCheckIntervalMs: intOption(
      "clockSkewCheckIntervalMs",
      o.clockSkewCheckIntervalMs ?? d.clockSkewCheckIntervalMs,
      10,
      maxMs,
    ),
    clockSkewWarnMs: intOption("clockSkewWarnMs", o.clockSkewWarnMs ?? d.clockSkewWarnMs, 0, maxMs),
    leaseAuditIntervalMs: intOption(
      "leaseAuditIntervalMs",
      o.leaseAuditIntervalMs ?? d.leaseAuditIntervalMs,
      100,
      maxMs,
    ),
    leaseAuditGraceMs: intOption("leaseAuditGraceMs", o.leaseAuditGraceMs ?? d.leaseAuditGraceMs, 10, maxMs),
  };
}
