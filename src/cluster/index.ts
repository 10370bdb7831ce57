/**
 * The cluster: heartbeats, failure detection and orphan recovery, leases, clock skew, recurring jobs and
 * pruning. Pawl wires {@link ClusterServices} into start() and stop(); everything here can also be built
 * on its own (tests, tools) from a store gateway's cluster slice ({@link ClusterStore}).
 */
export { ClusterServices, readClusterView, recurringDelay } from "./cluster-services.js";
export type { ClusterServicesDeps, ClusterView, PrepareResult } from "./cluster-services.js";
export { clusterOptionKeys, defaultClusterOptions, resolveClusterOptions } from "../input/cluster-options.js";
export type { ClusterOptions, ResolvedClusterOptions } from "../input/cluster-options.js";
export {
  estimateClockSkew,
  heartbeatDelayMs,
  leaseDeadline,
  skewExceeded,
  sweepReady,
} from "../logic/cluster-logic.js";
export type { ClockSkew, HeartbeatDelayInput } from "../logic/cluster-logic.js";
export { ClockSkewMonitor } from "./clock-skew.js";
export type { ClockSkewReading } from "./clock-skew.js";
export { HeartbeatService, eventLoopLagProbe } from "./heartbeat.js";
export type { LagProbe } from "./heartbeat.js";
export type { HeartbeatResult } from "../core/events.js";
export { Lease, LeaseManager, leaseNames } from "./lease.js";
export { OrphanSweeper } from "./orphan-sweeper.js";
export type { SweepResult } from "./orphan-sweeper.js";
export { PeriodicTask } from "../core/periodic.js";
export { Pruner } from "./pruner.js";
export type { PruneResult } from "./pruner.js";
export { RecurringScheduler, listSchedules, registerSchedule, unregisterSchedule } from "./recurring.js";
export type { FiredChild, RecurringResult, Schedule, ScheduleOptions } from "./recurring.js";
export type { NodeInfo, NodeStatus, DeadNode } from "../store/cluster/node-sql.js";
export type { LockRow } from "../store/cluster/lock-sql.js";
export type { RecoveredJob } from "../store/cluster/orphan-sql.js";
export type { ClusterStore } from "../store/job-store.js";
