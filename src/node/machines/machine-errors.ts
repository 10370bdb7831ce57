/**
 * Why a durable machine's job ends DEAD without retries: its saved snapshot no longer fits the machine
 * registered for it. Retrying cannot help (the same snapshot meets the same definition), so these are
 * {@link NonRetryableError}s, recorded on the job with the name of what is missing.
 */
import { NonRetryableError } from "../attempt/job-errors.js";

/**
 * A machine's saved snapshot names a state (or a running invoked actor) that the registered definition no
 * longer has. The job ends DEAD with this error; `missing` names the state path (`order.legacyReview`) or
 * the actor.
 *
 * @example
 * ```ts
 * const job = await pawl.getJob(id);
 * job?.lastError?.name; // "MachineSnapshotMismatchError"
 * ```
 */
export class MachineSnapshotMismatchError extends NonRetryableError {
  constructor(
    /** The machine's job type. */
    readonly type: string,
    /** The version the snapshot was restored against. */
    readonly version: string,
    /** What is missing: a state's path, or an actor's name. */
    readonly missing: { kind: "state"; path: string } | { kind: "actor"; src: string },
  ) {
    super(
      missing.kind === "state"
        ? `the saved snapshot of machine "${type}" is in state '${missing.path}', which version ${version} no longer has`
        : `the saved snapshot of machine "${type}" runs actor '${missing.src}', which version ${version} no longer provides`,
    );
    this.name = "MachineSnapshotMismatchError";
  }
}
