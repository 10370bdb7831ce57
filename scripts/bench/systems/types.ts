/**
 * What every benchmarked system implements. The workloads (scripts/bench/measure.ts) are written once
 * against this interface, so every system is timed by the same code: the same pre-insertion, the same
 * window, the same completion check in the database.
 */

/** The systems, in the order the tables list them. */
export const SYSTEMS = ["pawl", "graphile-tuned", "graphile-defaults", "pg-boss", "floor"] as const;
export type SystemName = (typeof SYSTEMS)[number];

/** Runs one attempt of job number `i` (the `i` of its payload). Throwing fails the attempt. */
export type JobHandler = (i: number) => void;

/** Options of {@link BenchSystem.startWorkers}. */
export interface WorkerOptions {
  concurrency: number;
  handler: JobHandler;
  /** `latency`: an idle worker waiting for single jobs; `drain`: a backlog to work through. */
  mode: "drain" | "latency";
}

/** Running workers. */
export interface RunningWorkers {
  /** Stops them; returns system-specific diagnostics (claims, polls, errors) when there are any. */
  stop(): Promise<Record<string, unknown> | undefined>;
}

/** One benchmarked system, inside one measurement process. */
export interface BenchSystem {
  readonly name: SystemName;
  /** Whether single jobs can be timed from enqueue to handler start (the floor has no wakeup path). */
  readonly supportsPickup: boolean;
  /**
   * The period of the system's polling when polls (not wakeups) find new jobs, else 0. The pickup
   * workload spreads its enqueues uniformly over it: sampling right after each pickup would otherwise
   * lock onto the poll phase and always land just after a poll (the worst case, every time).
   */
  readonly pollPeriodMs: number;
  /** Creates the schema and tables when needed and empties them. */
  reset(): Promise<void>;
  /** Inserts jobs `from .. from + n - 1` (payload `{ i }`), runnable now. Not timed. */
  preinsert(from: number, n: number): Promise<void>;
  /** VACUUM ANALYZE of the system's job tables (after pre-insertion, before the window). */
  vacuum(): Promise<void>;
  /** Starts workers. The timed window of a drain starts just before this call. */
  startWorkers(options: WorkerOptions): Promise<RunningWorkers>;
  /** Jobs not yet completed in the database (the drain ends when this reaches 0). */
  remaining(): Promise<number>;
  /** Enqueues job `i` through the system's single-job API. */
  enqueueOne(i: number): Promise<void>;
  /** Enqueues jobs `from .. from + n - 1` through the system's bulk API, in one call. */
  enqueueBulk(from: number, n: number): Promise<void>;
  /** Releases everything. */
  close(): Promise<void>;
}

/** Connection settings every adapter receives. */
export interface SystemContext {
  url: string;
}

/** A planned failure (the mixed workload): thrown by handlers, recognised so it is not reported as an error. */
export class PlannedFailure extends Error {
  constructor() {
    super("planned failure (mixed workload)");
    this.name = "PlannedFailure";
  }
}

/** Loads the adapter of a system (each is imported only when used, so pawl-only runs never load the peers). */
export async function loadSystem(name: SystemName, ctx: SystemContext): Promise<BenchSystem> {
  switch (name) {
    case "pawl": {
      const { PawlSystem } = await import("./pawl.js");
      return new PawlSystem(ctx);
    }
    case "graphile-tuned":
    case "graphile-defaults": {
      const { createGraphileSystem } = await import("./graphile.js");
      return createGraphileSystem(ctx, name === "graphile-tuned");
    }
    case "pg-boss": {
      const { createPgBossSystem } = await import("./pg-boss.js");
      return createPgBossSystem(ctx);
    }
    case "floor": {
      const { FloorSystem } = await import("./floor.js");
      return new FloorSystem(ctx);
    }
  }
}
