/**
 * The durable machine part of `pawl job <id>` (docs/durable-machines.md#inspection): its state, version,
 * sanitized context, pending timers and latest events, one line each.
 */
import type { MachineView } from "../core/machine-view.js";

const state = (value: unknown) => (typeof value === "string" ? value : JSON.stringify(value));

/** The lines that describe a machine, after the job's own. */
export function machineDetail(m: MachineView, now: Date = new Date()): string[] {
  const lines = [
    `machine: ${state(m.value)} (${m.status ?? "not started"}, version ${m.version ?? "-"})`,
    `  context: ${JSON.stringify(m.context)}`,
  ];
  if (m.finishedAt) lines.push(`  finished: ${m.finishedAt.toISOString()}`);
  lines.push(`  timers (${m.timers.length}):`);
  for (const t of m.timers) {
    const inMs = t.dueAt.getTime() - now.getTime();
    lines.push(
      `    ${t.dueAt.toISOString()} (${inMs >= 0 ? `in ${inMs} ms` : `${-inMs} ms ago`})  ${t.eventType}`,
    );
  }
  lines.push(`  events (${m.events.length}, newest first):`);
  for (const e of m.events) {
    const handled = e.handledAt
      ? ` -> ${e.status} ${e.handledAt.toISOString()}, then ${state(e.stateAfter)}`
      : " pending";
    lines.push(`    #${e.seq} ${e.type} sent ${e.sentAt.toISOString()}${handled}`);
  }
  return lines;
}
