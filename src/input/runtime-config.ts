/**
 * The runtime's part of the configuration: timeouts, watchdog, polling, breakers, permits. Resolved and
 * validated once at createPawl, using the pure modules' own resolvers so each rule lives in one place.
 */
import { ValidationError } from "../core/errors.js";
import { resolveBreakerConfig, type BreakerConfig } from "../logic/breaker.js";
import { resolvePollingConfig, type PollingConfig } from "../logic/polling-strategy.js";
import { defaultTimeoutMs, resolveWatchdogConfig, type WatchdogConfig } from "../logic/watchdog-schedule.js";
import { intOption } from "./int-option.js";
import { resolveRateLimit, type RateLimit } from "../logic/rate-limit.js";
import { validateQueueName } from "./enqueue-input.js";
import {
  clusterOptionKeys,
  resolveClusterOptions,
  type ClusterOptions,
  type ResolvedClusterOptions,
} from "./cluster-options.js";

/** Runtime options of {@link createPawl} (the cluster's options included: see {@link ClusterOptions}). */
export interface RuntimeOptions extends ClusterOptions {
  /** The attempt timeout for types and jobs without their own (ms). Default 30 minutes. */
  defaultTimeoutMs?: number;
  /** Watchdog: `softTimeoutPercent` (80) and `cancellationGraceMs` (0). */
  watchdog?: Partial<WatchdogConfig>;
  /** The adaptive polling strategy (burst, normal, deep idle...). `pollIntervalMs` sets `minDelayMs`. */
  polling?: Partial<PollingConfig>;
  /** Circuit breaker defaults for every service. */
  breaker?: Partial<BreakerConfig>;
  /** Per-service breaker overrides. */
  breakers?: Record<string, Partial<BreakerConfig>>;
  /** Resource capacities (permits held at once, cluster-wide). A resource missing here is unlimited. */
  resources?: Record<string, number>;
  /** How long a job waits when its resource is saturated (ms). Default 5000. */
  permitRetryDelayMs?: number;
  /**
   * Per-queue rate limits: at most `limit` attempts of the queue's jobs start in any window of `perMs`,
   * across the cluster (`{ mail: { limit: 100, perMs: 60_000 } }`; docs/rate-limits.md).
   */
  queueRateLimits?: Record<string, { limit: number; perMs: number }>;
  /** A claimed job that waited longer than this in the local buffer is re-checked for cancellation (ms). Default 1000. */
  cancelRecheckMs?: number;
  /**
   * The time budget of each claim statement (ms; `SET LOCAL statement_timeout`). Past it the claim gives
   * up for this poll (the `claim-statement` event says `timeout`) and the rest of the node keeps running;
   * a kind of claim that timed out gets twice the time next, up to 60 times this (at most 60 s). Default
   * 500; 0: no budget (docs/fairness.md#one-slow-claim-never-stalls-the-node).
   */
  claimStatementTimeoutMs?: number;
}

/** Resolved runtime options. */
export interface ResolvedRuntimeOptions {
  defaultTimeoutMs: number;
  watchdog: WatchdogConfig;
  polling: PollingConfig;
  breakerFor: (service: string) => BreakerConfig;
  resources: ReadonlyMap<string, number>;
  /** Per-queue rate limits. */
  queueRateLimits: ReadonlyMap<string, RateLimit>;
  permitRetryDelayMs: number;
  cancelRecheckMs: number;
  /** The claim statements' time budget (ms; 0: none). */
  claimStatementTimeoutMs: number;
  /** Heartbeats, failure detection, leases, clock skew, recurring jobs, pruning. */
  cluster: ResolvedClusterOptions;
}

/** The runtime option names (createPawl accepts them beside the base options). */
export const runtimeOptionKeys = [
  "defaultTimeoutMs",
  "watchdog",
  "polling",
  "breaker",
  "breakers",
  "resources",
  "permitRetryDelayMs",
  "queueRateLimits",
  "cancelRecheckMs",
  "claimStatementTimeoutMs",
  ...clusterOptionKeys,
] as const;

/** Validates the runtime options. @throws ValidationError `INVALID_CONFIG`. */
export function resolveRuntimeOptions(
  o: RuntimeOptions,
  pollIntervalMs: number | undefined,
): ResolvedRuntimeOptions {
  const polling = { ...o.polling };
  if (pollIntervalMs !== undefined) {
    polling.minDelayMs = pollIntervalMs;
    // A poll interval above the default bounds lifts them, rather than failing on the defaults.
    polling.maxDelayMs = Math.max(polling.maxDelayMs ?? 30_000, pollIntervalMs);
    polling.deepIdleDelayMs = Math.max(polling.deepIdleDelayMs ?? 60_000, polling.maxDelayMs);
    polling.burstDelayMs = Math.min(polling.burstDelayMs ?? 500, pollIntervalMs);
  }
  const base = resolveBreakerConfig(o.breaker);
  const perService = new Map<string, BreakerConfig>();
  for (const [service, cfg] of Object.entries(o.breakers ?? {})) {
    perService.set(service, resolveBreakerConfig({ ...base, ...cfg }));
  }
  const resources = new Map<string, number>();
  for (const [name, cap] of Object.entries(o.resources ?? {})) {
    resources.set(name, intOption(`resources.${name}`, cap, 0, 1_000_000));
  }
  const queueRateLimits = new Map<string, RateLimit>();
  const qrl: unknown = o.queueRateLimits;
  if (qrl !== undefined) {
    if (typeof qrl !== "object" || qrl === null || Array.isArray(qrl)) {
      throw new ValidationError(
        "INVALID_CONFIG",
        "queueRateLimits must be an object of queue name -> { limit, perMs }",
      );
    }
    for (const [queue, limit] of Object.entries(qrl as Record<string, unknown>)) {
      try {
        validateQueueName(queue);
      } catch (error) {
        throw new ValidationError("INVALID_CONFIG", `queueRateLimits: ${(error as Error).message}`);
      }
      queueRateLimits.set(
        queue,
        resolveRateLimit(`queueRateLimits.${queue}`, limit, false, "INVALID_CONFIG"),
      );
    }
  }
  if (o.watchdog !== undefined && (typeof o.watchdog !== "object" || o.watchdog === null)) {
    throw new ValidationError("INVALID_CONFIG", "watchdog must be an object");
  }
  return {
    defaultTimeoutMs: intOption("defaultTimeoutMs", o.defaultTimeoutMs ?? defaultTimeoutMs, 1, 2 ** 31 - 1),
    watchdog: resolveWatchdogConfig(o.watchdog),
    polling: resolvePollingConfig(polling),
    breakerFor: (service) => perService.get(service) ?? base,
    resources,
    queueRateLimits,
    permitRetryDelayMs: intOption("permitRetryDelayMs", o.permitRetryDelayMs ?? 5000, 0, 2 ** 31 - 1),
    cancelRecheckMs: intOption("cancelRecheckMs", o.cancelRecheckMs ?? 1000, 0, 2 ** 31 - 1),
    claimStatementTimeoutMs: intOption(
      "claimStatementTimeoutMs",
      o.claimStatementTimeoutMs ?? 500,
      0,
      600_000,
    ),
    cluster: resolveClusterOptions(o),
  };
}
