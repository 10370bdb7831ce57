/**
 * What the inspection views show of a durable machine (`registerMachine`) without `includePayloads`.
 *
 * pawl's own actors hold pawl's state, with job payloads and results under known keys that the sanitiser
 * redacts (sanitize.ts). A durable machine's actors hold the user's: its context is built from the job's
 * payload under whatever names the machine chose (`context: ({ input }) => ({ token: input.token })`),
 * the events sent to it carry the sender's data, and its invoked actors' outputs are the side effects'
 * results. So for a machine's actors the views keep only the shape (state values, status, event and action
 * types, the diagram) and redact the rest, unless `includePayloads` asks for it, as for job payloads.
 */
import type { InspectionEvent } from "xstate";
import { redacted } from "./sanitize.js";

/** Where an inspection event came from: the node's own actor system, or a durable machine's actor. */
export type InspectionOrigin = "node" | "machine";

/** A snapshot with its context, output and error redacted (what else it holds is kept). */
export function snapshotWithoutUserData(snapshot: unknown): unknown {
  if (typeof snapshot !== "object" || snapshot === null) return snapshot;
  const s = snapshot as { value?: unknown; status?: unknown };
  return { value: s.value, status: s.status, context: redacted };
}

/** An event or action object reduced to its `type`. */
function typeOnly(x: unknown): { type: unknown } {
  return { type: typeof x === "object" && x !== null ? (x as { type?: unknown }).type : undefined };
}

/** The definition a diagram is drawn from, without its initial context (which may hold values). */
export function configWithoutUserData(config: unknown): unknown {
  if (typeof config !== "object" || config === null || !("context" in config)) return config;
  return { ...config, context: redacted };
}

/**
 * A durable machine's inspection event without its user data: events and actions by type only,
 * snapshots by state value and status. Registrations (`@xstate.actor`) are returned as they are: their
 * actor is read later, and the bridge's stand-in redacts what it reads of a machine's actor.
 */
export function withoutUserData(e: InspectionEvent): InspectionEvent {
  switch (e.type) {
    case "@xstate.event":
      return { ...e, event: typeOnly(e.event) as typeof e.event };
    case "@xstate.snapshot":
    case "@xstate.microstep":
      return {
        ...e,
        event: typeOnly(e.event) as typeof e.event,
        snapshot: snapshotWithoutUserData(e.snapshot) as typeof e.snapshot,
      } as InspectionEvent;
    case "@xstate.action":
      return { ...e, action: typeOnly(e.action) as typeof e.action };
    default:
      return e;
  }
}
