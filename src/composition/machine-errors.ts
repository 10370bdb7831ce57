/**
 * The errors of durable machines (docs/durable-machines.md): the control error a machine's runner throws
 * once it has parked its job, and the typed errors of a send to a machine that has ended or to a job that is
 * no machine.
 */
import { PawlError } from "../core/errors.js";

/**
 * Thrown by a durable machine's runner after it committed its snapshot and parked its job (WAITING, the
 * attempt given back) in one transaction: the attempt ends with nothing more to write. Internal: a
 * machine's handler is pawl's own, never the user's.
 */
export class MachineParked extends Error {
  constructor(
    /** When the machine wakes on its own (its earliest timer, ms from now); null: only an event wakes it. */
    readonly timeoutMs: number | null,
  ) {
    super(timeoutMs === null ? "machine parked until an event" : `machine parked for up to ${timeoutMs} ms`);
    this.name = "MachineParked";
  }
}

/**
 * Raised by `pawl.send()` when the machine has ended: it reached a final state, or its job is DEAD or
 * CANCELED. Code `MACHINE_FINISHED`; nothing was stored.
 *
 * @example
 * ```ts
 * try { await pawl.send(orderJobId, { type: "CANCEL" }); }
 * catch (e) { if (e instanceof MachineFinishedError) console.log(`already ${e.status}`); }
 * ```
 */
export class MachineFinishedError extends PawlError {
  constructor(
    /** The machine's job. */
    readonly jobId: string,
    /** The job's status when the send was refused (SUCCEEDED, DEAD or CANCELED). */
    readonly status: string,
    /**
     * Set when this send's wake found another live job holding the machine's unique key: the machine was
     * CANCELED then (the live job wins, as for a signal) and the event is never delivered.
     */
    readonly liveJobId?: string,
  ) {
    super(
      "MACHINE_FINISHED",
      liveJobId === undefined
        ? `machine ${jobId} has finished (${status}); the event was not stored`
        : `machine ${jobId} was canceled: live job ${liveJobId} holds its unique key; the event is not delivered`,
    );
    this.name = "MachineFinishedError";
  }
}

/**
 * Raised by `pawl.send()` when the job is not a durable machine: its type was never registered with
 * `registerMachine` on a node that started, and it has not run as one. Such a job would never consume the
 * event. Code `NOT_A_MACHINE`; nothing was stored. Use `pawl.signal()` for a job's signal wait.
 *
 * @example
 * ```ts
 * try { await pawl.send(jobId, { type: "PAY" }); }
 * catch (e) { if (e instanceof NotAMachineError) console.log(`job type ${e.type} is no machine`); }
 * ```
 */
export class NotAMachineError extends PawlError {
  constructor(
    /** The job. */
    readonly jobId: string,
    /** The job's type. */
    readonly type: string,
  ) {
    super(
      "NOT_A_MACHINE",
      `job ${jobId} (type "${type}") is not a durable machine (no started node registered its type with ` +
        "registerMachine); the event was not stored",
    );
    this.name = "NotAMachineError";
  }
}
