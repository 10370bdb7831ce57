/**
 * The facts `explain` decides on, as plain data. Two kinds: what each node publishes about itself in its
 * heartbeat ({@link NodeRegistry}: the types it runs, its queues and their limits, its breakers), and what
 * one read of the store says about a job and what surrounds it ({@link ExplainFacts}). They live in
 * logic/ because the decision (./explain.ts) is their only reader that must not do I/O; the store
 * imports the registry's shape from here so the writer and the reader cannot drift.
 */
import type { Job } from "../core/job.js";

/** A job type as a node registered it. */
export interface PublishedType {
  type: string;
  /** The type's default queue, or null (jobs go to `default` unless enqueued with their own). */
  queue: string | null;
  /** The circuit breaker's service, or null. */
  service: string | null;
  /** The resource whose permits each attempt holds, or null. */
  resource: string | null;
  /** The type's per-attempt timeout, or null for the node's default. */
  timeoutMs: number | null;
  /** The type's rate limit (`keyed`: by its key function's value), or null; absent from older nodes. */
  rateLimit?: { limit: number; perMs: number; keyed: boolean } | null;
}

/** One of a node's per-queue lanes (only with `queues`). */
export interface PublishedQueue {
  name: string;
  /** Jobs of this queue the node runs at once. */
  limit: number;
  /** Jobs of this queue running on the node at its last heartbeat. */
  running: number;
}

/** A node's breaker for one service, as of its last heartbeat. */
export interface PublishedBreaker {
  service: string;
  state: "CLOSED" | "OPEN" | "HALF_OPEN";
  /** When an OPEN breaker probes again (ms since the epoch, by that node's clock); null otherwise. */
  openUntil: number | null;
}

/**
 * What a node publishes in each heartbeat (`node_info.registry`): enough to tell, from any other process,
 * whether it could run a given job now. Bounded: at most {@link maxPublishedTypes} types.
 */
export interface NodeRegistry {
  types: PublishedType[];
  /** Per-queue lanes, or null when the node has one catch-all lane (it serves every queue). */
  queues: PublishedQueue[] | null;
  /** The node's slots, and how many were busy at its last heartbeat. */
  concurrency: number;
  busy: number;
  /** Breakers this node has spawned (a service no job has used yet has none: CLOSED). */
  breakers: PublishedBreaker[];
  /** Resource capacities from the node's configuration (a resource missing here is unlimited). */
  resources: Record<string, number>;
  /** Per-queue rate limits from the node's configuration; absent from older nodes. */
  queueRateLimits?: Record<string, { limit: number; perMs: number }>;
  /** The per-attempt timeout of types without their own. */
  defaultTimeoutMs: number;
}

/** The most types a heartbeat publishes (a node with more is reported as registering the first ones). */
export const maxPublishedTypes = 500;

/** A node row as explain reads it. */
export interface ExplainNode {
  nodeId: string;
  /** The heartbeat is within the dead-node threshold (by the database's clock). */
  alive: boolean;
  heartbeatAt: Date;
  /** Database time minus the heartbeat (ms). */
  ageMs: number;
  /** What the node published; null for a node that publishes nothing (an older version). */
  registry: NodeRegistry | null;
}

/** The fields of a job explain reads. */
export type ExplainJob = Pick<
  Job,
  | "id"
  | "type"
  | "queue"
  | "status"
  | "scheduledTime"
  | "attempts"
  | "maxAttempts"
  | "timeoutMs"
  | "pickedBy"
  | "pickedAt"
  | "lastError"
  | "cancelReason"
  | "updatedAt"
  | "finishedAt"
  | "flowId"
  | "waitingFor"
  | "pausedBy"
> &
  Partial<Pick<Job, "steps">>;

/** A pause of a queue or a job type. */
export interface ExplainPause {
  kind: "queue" | "type";
  name: string;
  pausedAt: Date;
  /** Who paused it, for people. */
  pausedBy: string | null;
}

/** A held permit of a resource. */
export interface ExplainPermit {
  jobId: string;
  nodeId: string;
  acquiredAt: Date;
}

/** The permits of one resource: how many are held, and the first holders. */
export interface ExplainPermits {
  held: number;
  holders: ExplainPermit[];
}

/** A rate-limit key's window, as the store keeps it (the limit it was last admitted under). */
export interface ExplainRateWindow {
  key: string;
  limit: number;
  perMs: number;
  /** Starts in (now - perMs, now]. */
  used: number;
  /** When a full window has room again; null when it is not full. */
  openAt: Date | null;
}

/** A flow dependency that has not finished. */
export interface ExplainDependency {
  id: string;
  /** The member's name in its flow. */
  step: string | null;
  type: string;
  status: string;
}

/** Everything {@link explainJob} decides on, gathered in one bounded read. */
export interface ExplainFacts {
  job: ExplainJob;
  /** The database's time when the facts were read. */
  now: Date;
  nodes: ExplainNode[];
  /** Every pause of a queue or job type. */
  pauses: ExplainPause[];
  /** Held permits by resource. */
  permits: Record<string, ExplainPermits>;
  /** The windows of the job's type and queue rate-limit keys (`type:<type>`, `queue:<queue>`) that exist. */
  rateWindows?: ExplainRateWindow[];
  /** The job's concurrency key, its limit and the key's jobs running now (migration 0011); null: no key. */
  concurrency?: { key: string; limit: number | null; running: number } | null;
  /** The job's unfinished flow dependencies (empty for a job not waiting on its flow). */
  dependencies: ExplainDependency[];
  /** The states of the children a durable job waits for (ctx.waitFor); absent when it waits for none. */
  children?: { id: string; status: string }[];
  /** The cluster's dead-node threshold and orphan sweep interval (for the expected rescue time). */
  deadNodeThresholdMs: number;
  orphanSweepIntervalMs: number;
}
