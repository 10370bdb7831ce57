/**
 * The parts of the job page that show a durable job's history: its steps as a timeline
 * (`getJob(id).steps`, docs/durable.md) and, for a durable machine (`registerMachine`), its state value,
 * pending timers and event history (`getJob(id).machine`). Step names, event types, results and errors
 * are the user's data, so every value goes through the escaping template; each table is capped, and says
 * how many rows it left out, so a job with thousands of steps still renders a page of bounded size.
 */
import type { Job, JobStep, MachineEventView, MachineTimerView, MachineView } from "../../src/index.js";
import { age, h, jsonBlock, table, when, type Html } from "./html.js";

/** The most steps, timers and events the page lists; the rest are counted. */
export const maxHistoryRows = 100;

/** The steps timeline and the machine section of `job` (empty for a plain job). */
export function jobHistory(job: Job, now: Date): Html {
  const steps = job.steps ?? [];
  return h`${steps.length > 0 ? stepsSection(steps, now) : ""}${job.machine ? machineSection(job.machine, now) : ""}`;
}

/** Rows past the cap: the newest are the interesting ones for steps (oldest first), so keep the tail. */
function capped<T>(rows: readonly T[], keep: "head" | "tail"): { shown: readonly T[]; left: number } {
  if (rows.length <= maxHistoryRows) return { shown: rows, left: 0 };
  const shown = keep === "head" ? rows.slice(0, maxHistoryRows) : rows.slice(-maxHistoryRows);
  return { shown, left: rows.length - maxHistoryRows };
}

const leftOut = (left: number, what: string) =>
  left > 0 ? h`<p class="note" data-left-out="${left}">${left} ${what} not shown.</p>` : "";

function stepsSection(steps: readonly JobStep[], now: Date): Html {
  const { shown, left } = capped(steps, "tail");
  return h`<h2 id="steps">Steps</h2>${leftOut(left, "older steps")}${table(
    ["step", "kind", "status", "attempt", "started", "finished", "took", "result or error"],
    shown.map((s) => [
      h`<span class="step-name">${s.name}</span>`,
      s.kind,
      h`<span class="status step-${s.status}">${s.status}</span>`,
      s.attempt,
      when(s.startedAt, now),
      when(s.finishedAt, now),
      s.finishedAt ? age(s.finishedAt.getTime() - s.startedAt.getTime()) : "",
      stepOutcome(s, now),
    ]),
  )}`;
}

/** What a step produced, or, while it waits, what it waits for and until when. */
function stepOutcome(s: JobStep, now: Date): Html {
  if (s.error !== null) return h`<span class="error-message">${s.error}</span>`;
  if (s.status === "waiting") {
    const children = s.children && s.children.length > 0 ? s.children : null;
    const what =
      s.kind === "sleep"
        ? "the timer"
        : s.kind === "signal"
          ? h`signal <b>${s.name}</b>`
          : children
            ? h`${children.length === 1 ? "child" : "children"} ${children.slice(0, 20).join(", ")}${children.length > 20 ? ` and ${children.length - 20} more` : ""}`
            : s.kind;
    return h`<span class="waits">waits for ${what}${s.wakeAt ? h` until ${when(s.wakeAt, now)}` : ""}</span>`;
  }
  if (s.kind === "spawn" && s.children && s.children.length > 0)
    return h`child ${s.children.join(", ")}${s.resultPreview === null ? "" : h` <code class="preview">${s.resultPreview}</code>`}`;
  return s.resultPreview === null ? h`` : h`<code class="preview">${s.resultPreview}</code>`;
}

function machineSection(m: MachineView, now: Date): Html {
  const timers = capped(m.timers, "head");
  const events = capped(m.events, "head");
  return h`<h2 id="machine">Machine</h2>${table(
    ["field", "value"],
    [
      [
        "state",
        h`<code class="state-value">${m.value === null ? "not started" : JSON.stringify(m.value)}</code>`,
      ],
      ["status", m.status ?? "not started"],
      ["version", m.version ?? ""],
      ["finished", when(m.finishedAt, now)],
    ],
  )}<h3>Context</h3>${jsonBlock(m.context)}<h3>Pending timers</h3>${leftOut(timers.left, "timers")}${table(
    ["event", "due", "at"],
    timers.shown.map((t: MachineTimerView) => [t.eventType, when(t.dueAt, now), t.dueAt.toISOString()]),
    "no pending timer",
  )}<h3>Events (newest first)</h3>${leftOut(events.left, "older events")}${table(
    ["#", "event", "status", "sent", "handled", "state after"],
    events.shown.map((e: MachineEventView) => [
      e.seq,
      h`<span class="event-type">${e.type}</span>`,
      h`<span class="status event-${e.status}">${e.status}</span>`,
      when(e.sentAt, now),
      when(e.handledAt, now),
      e.stateAfter === null || e.stateAfter === undefined
        ? ""
        : h`<code>${JSON.stringify(e.stateAfter)}</code>`,
    ]),
    "no event sent",
  )}`;
}
