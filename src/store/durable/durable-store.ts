/**
 * The durable handlers' statements on one connection (the pool, or a transaction's client): the store
 * side of `ctx.step`, `ctx.sleep`, named signals, `ctx.spawn` and `ctx.waitFor` (docs/durable.md). A
 * gateway hands one out as `store.durable`, bound to the gateway's own connection, so a transaction's
 * gateway (`store.transaction(tx => tx.durable...)`) runs these in that transaction.
 *
 * This is the API the durable machines build on (issue 42): keep its methods stable.
 */
import type { Queryable, Tables } from "../../db/sql.js";
import { parkDurable, recheckDurable, wakeDue, type DurablePark } from "./durable-park-sql.js";
import {
  consumeSignal,
  pendingSignals,
  sendNamedSignal,
  type NamedSignalResult,
} from "./signal-inbox-sql.js";
import { notifyReleased, type ReleasedWork } from "../jobs/released-notify-sql.js";
import { pruneOrphans, type DurablePrunable, type DurablePruneBatch } from "./step-prune-sql.js";
import {
  beginWait,
  childStates,
  claimSpawn,
  discardSteps,
  linkChild,
  lockDead,
  loadSteps,
  readStep,
  recordSpawn,
  recordStep,
  type ChildState,
  type LoadedSteps,
  type StepWrite,
  type WaitBegin,
} from "./step-sql.js";
import type { StepRecord } from "./step-row.js";
import { restartMachines } from "../machines/machine-sql.js";

export type { DurablePark } from "./durable-park-sql.js";
export type { NamedSignalResult, SignalWoken } from "./signal-inbox-sql.js";
export type { DurablePrunable, DurablePruneBatch } from "./step-prune-sql.js";
export type { ChildState, LoadedSteps, StepWrite, WaitBegin } from "./step-sql.js";
export type { StepKind, StepRecord, StepStatus } from "./step-row.js";

/** The durable statements; see the file header. */
export interface DurableStore {
  /** Every recorded step of a job, with the database's time. */
  loadSteps(jobId: string): Promise<LoadedSteps>;
  /** One recorded step, or null. */
  readStep(jobId: string, name: string): Promise<StepRecord | null>;
  /** Records a step's outcome; returns the recorded row (another run's success, if it came first). */
  recordStep(write: StepWrite): Promise<StepRecord>;
  /** Writes a wait's waiting row once; returns the step as it stands and the database's time. */
  beginWait(begin: WaitBegin): Promise<{ step: StepRecord; now: Date }>;
  /** Consumes the oldest stored signal `name` into the wait's step; null when none is stored. */
  consumeSignal(jobId: string, name: string, attempt: number): Promise<StepRecord | null>;
  /** Stores a named signal (inside a transaction) and wakes the job if it waits on that name. */
  sendNamedSignal(jobId: string, name: string, payloadJson: string): Promise<NamedSignalResult>;
  /** The job's unconsumed signals, oldest first (at most 100). */
  pendingSignals(jobId: string): Promise<{ name: string; sentAt: Date }[]>;
  /** Claims a spawn's name (inside the spawn's transaction): true when the child is to be enqueued. */
  claimSpawn(jobId: string, name: string, attempt: number): Promise<boolean>;
  /** Stores the child on the spawn's row and links the child to its parent (same transaction). */
  recordSpawn(jobId: string, name: string, childId: string): Promise<StepRecord>;
  /** The states of awaited children. */
  childStates(ids: readonly string[]): Promise<ChildState[]>;
  /** Parks a RUNNING attempt of `nodeId` on a durable wait; false when the node no longer held it. */
  park(nodeId: string, park: DurablePark): Promise<boolean>;
  /** Wakes a parked job whose wait is over already; run after {@link DurableStore.park} committed. */
  recheck(jobId: string): Promise<boolean>;
  /** Wakes the durably parked jobs whose wait ends by `at` (pawl/testing's skip ahead). */
  wakeDue(at: Date): Promise<number>;
  /** Deletes every step of those of these jobs that are DEAD (a `dlq.retry` that starts them over). */
  discardSteps(jobIds: readonly string[]): Promise<number>;
  /**
   * Locks the finished rows of those of these jobs that are DEAD and returns their ids (a discarding
   * retry's first statement: step-sql.ts lockDead).
   */
  lockDead(jobIds: readonly string[]): Promise<string[]>;
  /**
   * Starts afresh the durable machines of those of these jobs that are DEAD (the same retry): snapshot,
   * timers, invoke occurrences and version reset; pending events kept (machine-sql.ts restartMachines).
   */
  restartMachines(jobIds: readonly string[]): Promise<number>;
  /** One batch of the pruner's pass over steps, signals or machines of jobs that are gone. */
  pruneOrphans(table: DurablePrunable, afterJobId: string, limit: number): Promise<DurablePruneBatch>;
  /** Hints the postgres wakeup channel from SQL that jobs were made runnable again (a bare client's wake). */
  notifyReleased(work: readonly ReleasedWork[]): Promise<void>;
}

/** The PostgreSQL {@link DurableStore}, on one connection. */
export class PostgresDurableStatements implements DurableStore {
  constructor(
    private readonly db: Queryable,
    private readonly t: Tables,
  ) {}

  loadSteps(jobId: string): Promise<LoadedSteps> {
    return loadSteps(this.db, this.t, jobId);
  }
  readStep(jobId: string, name: string): Promise<StepRecord | null> {
    return readStep(this.db, this.t, jobId, name);
  }
  recordStep(write: StepWrite): Promise<StepRecord> {
    return recordStep(this.db, this.t, write);
  }
  beginWait(begin: WaitBegin): Promise<{ step: StepRecord; now: Date }> {
    return beginWait(this.db, this.t, begin);
  }
  consumeSignal(jobId: string, name: string, attempt: number): Promise<StepRecord | null> {
    return consumeSignal(this.db, this.t, jobId, name, attempt);
  }
  sendNamedSignal(jobId: string, name: string, payloadJson: string): Promise<NamedSignalResult> {
    return sendNamedSignal(this.db, this.t, jobId, name, payloadJson);
  }
  pendingSignals(jobId: string): Promise<{ name: string; sentAt: Date }[]> {
    return pendingSignals(this.db, this.t, jobId);
  }
  claimSpawn(jobId: string, name: string, attempt: number): Promise<boolean> {
    return claimSpawn(this.db, this.t, jobId, name, attempt);
  }
  async recordSpawn(jobId: string, name: string, childId: string): Promise<StepRecord> {
    await linkChild(this.db, this.t, jobId, childId);
    return recordSpawn(this.db, this.t, jobId, name, childId);
  }
  childStates(ids: readonly string[]): Promise<ChildState[]> {
    return childStates(this.db, this.t, ids);
  }
  park(nodeId: string, park: DurablePark): Promise<boolean> {
    return parkDurable(this.db, this.t, nodeId, park);
  }
  recheck(jobId: string): Promise<boolean> {
    return recheckDurable(this.db, this.t, jobId);
  }
  wakeDue(at: Date): Promise<number> {
    return wakeDue(this.db, this.t, at);
  }
  discardSteps(jobIds: readonly string[]): Promise<number> {
    return discardSteps(this.db, this.t, jobIds);
  }
  lockDead(jobIds: readonly string[]): Promise<string[]> {
    return lockDead(this.db, this.t, jobIds);
  }
  restartMachines(jobIds: readonly string[]): Promise<number> {
    return restartMachines(this.db, this.t, jobIds);
  }
  pruneOrphans(table: DurablePrunable, afterJobId: string, limit: number): Promise<DurablePruneBatch> {
    return pruneOrphans(this.db, this.t, table, afterJobId, limit);
  }
  notifyReleased(work: readonly ReleasedWork[]): Promise<void> {
    return notifyReleased(this.db, this.t, work);
  }
}
