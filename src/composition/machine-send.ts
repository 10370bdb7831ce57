/**
 * `pawl.send(jobId, event)`: delivers an event to a durable machine, from any process (docs/durable-machines.md).
 *
 * The event is checked, then stored in one transaction that locks the machine's row, numbers the event
 * (numbers follow commit order: the lock serializes the sends of one machine) and wakes the job when it is
 * parked. Acknowledged means committed: the event is then delivered exactly once, in number order, by
 * whichever node runs the machine next. A machine that is running elsewhere finds it in its inbox before it
 * parks; a parked one is woken (PENDING, claimed by any node). The machine decides, when it gets the
 * event, whether its state accepts it; one it does not accept is recorded as ignored, never an error here.
 */
import { JobNotFoundError, ValidationError } from "../core/errors.js";
import { serializePayload } from "../input/payload.js";
import { validateJobId } from "../input/job-id.js";
import type { MachineStore } from "../store/machines/machine-store.js";
import type { CompositionDeps } from "./deps.js";
import { MachineFinishedError, NotAMachineError } from "./machine-errors.js";
import { reportDuplicates, wake } from "./signals.js";

/** What {@link sendToMachine} did. */
export interface SendResult {
  jobId: string;
  /** The event's number for this machine: the order its send committed in, from 1. */
  seq: number;
}

/** Checks an event's shape. @throws ValidationError `INVALID_PAYLOAD`. */
export function validateMachineEvent(event: unknown): { type: string } {
  const type = (event as { type?: unknown } | null)?.type;
  if (typeof event !== "object" || event === null || Array.isArray(event) || typeof type !== "string") {
    throw new ValidationError("INVALID_PAYLOAD", "a machine event is an object with a string `type`");
  }
  if (type.length === 0 || type.length > 200) {
    throw new ValidationError("INVALID_PAYLOAD", "a machine event's `type` must be 1 to 200 characters");
  }
  // xstate's own events (delays, invoke results) come from the machine and its runner, never from outside.
  if (type.startsWith("xstate.")) {
    throw new ValidationError("INVALID_PAYLOAD", `event type "${type}" is reserved for xstate`);
  }
  return event as { type: string };
}

/**
 * Stores an event for a machine and wakes it when parked.
 *
 * @throws ValidationError for a bad id or event (nothing stored); JobNotFoundError for an unknown job;
 *   NotAMachineError for a job that is no durable machine; MachineFinishedError when the machine has ended,
 *   or when this send's wake canceled it because another live job holds its unique key (`liveJobId`).
 */
export async function sendToMachine(
  deps: CompositionDeps,
  machines: MachineStore,
  id: string,
  event: unknown,
): Promise<SendResult> {
  const jobId = validateJobId(id);
  const json = serializePayload(validateMachineEvent(event), deps.config.maxPayloadBytes);
  const { seq, woken } = await machines.transaction(async (tx) => {
    const stored = await tx.storeEvent(jobId, json);
    // Thrown inside: the transaction rolls back, so a refused send leaves nothing behind.
    if ("refused" in stored) {
      if (stored.refused === "not-found") throw new JobNotFoundError(jobId);
      if (stored.refused === "not-a-machine") throw new NotAMachineError(jobId, stored.type);
      throw new MachineFinishedError(jobId, stored.status);
    }
    return { seq: stored.seq, woken: await tx.wake(jobId) };
  });
  if ("woken" in woken) await wake(deps, [woken.woken]);
  else if ("duplicate" in woken) {
    // The wake canceled the machine (another live job took its unique key while it was parked): the event
    // is stored but will never be consumed, so the send must not report it as accepted.
    reportDuplicates(deps, [woken.duplicate], "signal");
    throw new MachineFinishedError(jobId, "CANCELED", woken.duplicate.liveJobId);
  }
  return { jobId, seq };
}
