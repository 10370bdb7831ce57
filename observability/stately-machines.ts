/**
 * The durable machines (`registerMachine`) in the Stately bridge.
 *
 * - A running machine is an actor of its own, outside the node's actor system: its inspection events reach
 *   the bridge through the node's inspection feed (the runtime's `machines`), and the ones already running
 *   when the bridge connects are announced with the node's actors ({@link liveMachineAnnouncements}).
 * - A parked machine is no actor at all, only rows in PostgreSQL. {@link parkedMachineEvents} stands an
 *   actor in for each one read from the store: named as the live one (`machine-<job id>`), drawn from the
 *   definition this node registered for its type and version, with its saved state value and context. The
 *   bridge sanitizes it like any other actor's snapshot before `@statelyai/inspect` sees it.
 */
import type { AnyActorRef, InspectionEvent } from "xstate";
import { machineActorId } from "../src/node/machines/machine-inspection.js";
import type { MachineSummary } from "../src/store/operator/machine-list-sql.js";
import type { InspectableRuntime } from "./actor-view.js";

/** The event a parked machine's snapshot is shown with (it was not caused by an event: it was read). */
export const parkedEventType = "pawl.parked";

/** The registrations of the machines running on the node now, each its own root. */
export function liveMachineAnnouncements(runtime: InspectableRuntime): InspectionEvent[] {
  return (runtime.machines?.live() ?? []).map((ref) => ({
    type: "@xstate.actor",
    actorRef: ref as AnyActorRef,
    rootId: ref.sessionId,
  }));
}

/**
 * The registration and the snapshot of a parked machine's stand-in. Its session id is the job's, so a
 * refresh updates the same actor in the inspector instead of adding one.
 */
export function parkedMachineEvents(
  machine: MachineSummary,
  runtime: InspectableRuntime | null,
): InspectionEvent[] {
  const config = runtime?.machines?.configOf(machine.type, machine.version);
  const snapshot = { value: machine.value, status: "active", context: machine.context };
  // What the bridge's stand-in reads of an actor: id, session id, the definition, the snapshot.
  const ref = {
    id: machineActorId(machine.jobId),
    sessionId: `parked:${machine.jobId}`,
    logic: typeof config === "object" && config !== null ? { config } : {},
    getSnapshot: () => snapshot,
    send: () => {},
  };
  const actorRef = ref as unknown as AnyActorRef;
  return [
    { type: "@xstate.actor", actorRef, rootId: ref.sessionId },
    {
      type: "@xstate.snapshot",
      actorRef,
      rootId: ref.sessionId,
      event: { type: parkedEventType },
      snapshot: snapshot as never,
    },
  ];
}
