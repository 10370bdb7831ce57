/**
 * The gateway of durable machines: the statements of ./machine-sql.ts on one schema, on the pool or in a
 * held transaction of their own. Kept apart from `JobStore` (one concept, one file), it shares the job
 * store's pool and tables, and joins the job statements it needs (park, wake) in its own transactions.
 */
import type pg from "pg";
import type { MachineView } from "../../core/machine-view.js";
import { machineViewOf } from "./machine-view-of.js";
import { inHeldTransaction } from "../../db/held-client.js";
import type { Queryable, Tables } from "../../db/sql.js";
import { deliverSignal, parkJobs, type DeliverResult } from "../composition/signal-sql.js";
import {
  hasPendingEvent,
  lockMachine,
  markEvent,
  pendingEvents,
  readMachine,
  recordMachineTypes,
  relockMachine,
  saveMachine,
  storeEvent,
  type MachineRow,
  type MachineSave,
  type PendingEvent,
  type SendOutcome,
} from "./machine-sql.js";

/** The statements a machine's runner issues inside one of its transactions (the machine row locked). */
export class MachineTransaction {
  constructor(
    private readonly db: Queryable,
    private readonly t: Tables,
  ) {}

  /** Reads the machine row at a run's start (creating it on the first run); null when the job is not held. */
  lock(jobId: string, type: string, version: string, nodeId: string): Promise<MachineRow | null> {
    return lockMachine(this.db, this.t, jobId, type, version, nodeId);
  }

  /** Locks the machine row again (later transactions of a run); false when the job is no longer held. */
  relock(jobId: string, nodeId: string): Promise<boolean> {
    return relockMachine(this.db, this.t, jobId, nodeId);
  }

  save(jobId: string, nodeId: string, save: MachineSave): Promise<boolean> {
    return saveMachine(this.db, this.t, jobId, nodeId, save);
  }

  markEvent(
    jobId: string,
    seq: number,
    status: "consumed" | "ignored",
    stateAfterJson: string,
  ): Promise<boolean> {
    return markEvent(this.db, this.t, jobId, seq, status, stateAfterJson);
  }

  hasPendingEvent(jobId: string): Promise<boolean> {
    return hasPendingEvent(this.db, this.t, jobId);
  }

  /** Parks the job (WAITING, the attempt given back) until `timeoutMs`; false when no longer held. */
  async park(jobId: string, nodeId: string, timeoutMs: number | null): Promise<boolean> {
    const ids = await parkJobs(this.db, this.t, nodeId, [{ id: jobId, timeoutMs }]);
    return ids.has(jobId);
  }

  /** Stores an event (the send's half); see machine-sql.ts storeEvent. */
  storeEvent(jobId: string, eventJson: string): Promise<SendOutcome> {
    return storeEvent(this.db, this.t, jobId, eventJson);
  }

  /** Wakes the job if it is parked (the signal path: PENDING, or PAUSED under a pause). */
  wake(jobId: string): Promise<DeliverResult> {
    return deliverSignal(this.db, this.t, jobId, "null");
  }
}

/** Durable machines' statements on one schema. */
export class MachineStore {
  constructor(
    private readonly pool: pg.Pool,
    private readonly t: Tables,
  ) {}

  /** Runs `fn` in a transaction of its own: committed when it resolves, rolled back when it throws. */
  transaction<T>(fn: (tx: MachineTransaction) => Promise<T>): Promise<T> {
    return inHeldTransaction(this.pool, (db) => fn(new MachineTransaction(db, this.t)));
  }

  /** Records that `types` are durable machines, so sends from any process accept their jobs' events. */
  recordTypes(types: string[]): Promise<void> {
    return recordMachineTypes(this.pool, this.t, types);
  }

  /** The oldest `limit` pending events of a machine. */
  pendingEvents(jobId: string, limit: number): Promise<PendingEvent[]> {
    return pendingEvents(this.pool, this.t, jobId, limit);
  }

  /** A machine's inspection view with its latest `eventLimit` events; null for a job that is no machine. */
  async view(jobId: string, eventLimit = 50): Promise<MachineView | null> {
    const read = await readMachine(this.pool, this.t, jobId, eventLimit);
    return read ? machineViewOf(read.row, read.events) : null;
  }
}
