/**
 * The errors of durable machines (docs/durable-machines.md): the control error a machine's runner throws
 * once it has parked its job, and the typed error of a send to a machine that has ended.
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
  ) {
    super("MACHINE_FINISHED", `machine ${jobId} has finished (${status}); the event was not stored`);
    this.name = "MachineFinishedError";
  }
}
