/**
 * Where a durable machine stands between its inputs, decided from its snapshot alone: whether it has work
 * (an invoked actor still running), only waits (it may park: no slot, no connection, no node), or ended.
 * xstate's `snapshot.status` says whether the machine ended; its children's statuses say whether anything
 * still runs. The shapes here are the plain fields read from an xstate snapshot, so this stays pure.
 */

/** The fields of a machine snapshot the phase reads. */
export interface PhaseSnapshot {
  status: "active" | "done" | "error" | "stopped";
  /** The invoked or spawned actors, by id, with their own status. */
  children: Record<string, { status: string } | undefined>;
}

/**
 * - `final`: the machine reached a top-level final state (its job SUCCEEDED with the output).
 * - `error`: an error nothing in the machine handled (its job's retry policy applies).
 * - `busy`: an invoked actor still runs; the machine stays on its node until it settles.
 * - `idle`: it waits only for events or timers: it may park.
 * - `stopped`: stopped from outside (a shutdown): neither parked nor finished.
 */
export type MachinePhase = "final" | "error" | "busy" | "idle" | "stopped";

/**
 * The phase of a machine snapshot.
 *
 * @example
 * ```ts
 * machinePhase({ status: "active", children: { charge: { status: "active" } } }); // "busy"
 * machinePhase({ status: "active", children: {} }); // "idle"
 * ```
 */
export function machinePhase(snapshot: PhaseSnapshot): MachinePhase {
  if (snapshot.status === "done") return "final";
  if (snapshot.status === "error") return "error";
  if (snapshot.status === "stopped") return "stopped";
  for (const child of Object.values(snapshot.children)) {
    if (child?.status === "active") return "busy";
  }
  return "idle";
}
