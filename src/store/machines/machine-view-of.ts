/**
 * Builds the inspection view of a machine ({@link MachineView}) from its rows: the persisted snapshot's
 * value and status, its context through the sanitized view, its timers with their due times.
 */
import type { MachineView } from "../../core/machine-view.js";
import { sanitizedContext } from "../../logic/context-view.js";
import type { MachineEventRecord, MachineRow } from "./machine-sql.js";

/** The view of a machine row and its latest events. */
export function machineViewOf(row: MachineRow, events: readonly MachineEventRecord[]): MachineView {
  const snapshot = (row.snapshot ?? null) as { value?: unknown; context?: unknown; status?: string } | null;
  const timers = Array.isArray(row.timers)
    ? (row.timers as { id?: unknown; event?: { type?: unknown }; dueAt?: unknown }[])
    : [];
  return {
    value: snapshot?.value ?? null,
    context: snapshot ? sanitizedContext(snapshot.context) : null,
    status: snapshot?.status ?? null,
    version: row.version,
    timers: timers
      .filter((t) => typeof t.id === "string" && typeof t.dueAt === "number")
      .map((t) => ({
        id: String(t.id),
        eventType: String(t.event?.type ?? t.id),
        dueAt: new Date(Number(t.dueAt)),
      }))
      .sort((a, b) => a.dueAt.getTime() - b.dueAt.getTime()),
    events: events.map((e) => ({ ...e })),
    finishedAt: row.finishedAt,
  };
}
