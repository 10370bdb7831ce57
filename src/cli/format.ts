/**
 * Output for people and for machines. Tables are plain aligned text (no colours, so they survive pipes
 * and logs); `--json` prints the same data as JSON with dates in ISO 8601, one document per command.
 */
import { machineDetail } from "./machine-format.js";
import type { Job } from "../store/jobs/job-row.js";
import type { JobStep } from "../core/job.js";

/** Pretty JSON, two-space indented (Dates become ISO strings). */
export function json(value: unknown): string {
  return JSON.stringify(value, null, 2);
}

/** One line of text for a table cell: control characters flattened, long text cut with an ellipsis. */
export function cell(value: unknown, max = 60): string {
  let s: string;
  if (value === null || value === undefined) s = "-";
  else if (value instanceof Date) s = iso(value);
  else if (typeof value === "string") s = value;
  else s = JSON.stringify(value) ?? String(value);
  // eslint-disable-next-line no-control-regex
  s = s.replace(/[\u0000-\u001f\u007f]+/g, " ");
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

/** A time as ISO 8601 in UTC, without milliseconds (tables only; JSON keeps them). */
export function iso(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** Aligns rows under headers, two spaces between columns, the last column unpadded. */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  return [line(headers), ...rows.map(line)].join("\n");
}

/** The jobs table of `pawl jobs`. */
export function jobsTable(jobs: readonly Job[]): string {
  return table(
    ["ID", "TYPE", "QUEUE", "STATUS", "PRIORITY", "ATTEMPTS", "SCHEDULED", "LAST ERROR"],
    jobs.map((j) => [
      j.id,
      cell(j.type, 40),
      cell(j.queue, 20),
      j.status,
      String(j.priority),
      `${j.attempts}/${j.maxAttempts}`,
      iso(j.scheduledTime),
      cell(j.lastError, 50),
    ]),
  );
}

/** The table of `pawl dlq list`: when each job died and why. */
export function deadTable(jobs: readonly Job[]): string {
  return table(
    ["ID", "TYPE", "QUEUE", "ATTEMPTS", "DIED", "LAST ERROR"],
    jobs.map((j) => [
      j.id,
      cell(j.type, 40),
      cell(j.queue, 20),
      `${j.attempts}/${j.maxAttempts}`,
      j.finishedAt ? iso(j.finishedAt) : "-",
      cell(j.lastError, 60),
    ]),
  );
}

/** Every field of one job, one per line, then its payload, result and errors. */
export function jobDetail(job: Job): string {
  const fields: [string, unknown][] = [
    ["id", job.id],
    ["type", job.type],
    ["queue", job.queue],
    ["status", job.status],
    ["priority", job.priority],
    ["attempts", `${job.attempts}/${job.maxAttempts}`],
    ["scheduled", job.scheduledTime],
    ["timeout", job.timeoutMs === null ? null : `${job.timeoutMs} ms`],
    ["unique key", job.uniqueKey],
    ["picked by", job.pickedBy],
    ["picked at", job.pickedAt],
    ["created", job.createdAt],
    ["updated", job.updatedAt],
    ["finished", job.finishedAt],
    ["cancel reason", job.cancelReason],
  ];
  const width = Math.max(...fields.map(([k]) => k.length));
  const lines = fields.map(([k, v]) => `${`${k}:`.padEnd(width + 2)}${cell(v, 200)}`);
  lines.push("payload:", indent(json(job.payload)));
  // The handler's latest ctx.progress(value), kept after the job ends (migration 0006).
  if (job.progress !== null && job.progress !== undefined)
    lines.push(
      typeof job.progress === "number" ? `progress: ${job.progress}%` : "progress:",
      ...(typeof job.progress === "number" ? [] : [indent(json(job.progress))]),
    );
  if (job.result !== null && job.result !== undefined) lines.push("result:", indent(json(job.result)));
  if (job.errors.length > 0) {
    lines.push(`errors (${job.errors.length}, oldest first):`);
    for (const e of job.errors) lines.push(`  #${e.attempt} ${e.at} ${e.name}: ${cell(e.message, 200)}`);
  }
  if (job.steps && job.steps.length > 0) lines.push(...stepLines(job.steps));
  if (job.machine) lines.push(...machineDetail(job.machine));
  return lines.join("\n");
}

/** A durable job's steps (docs/durable.md), one line each, oldest first. */
function stepLines(steps: readonly JobStep[]): string[] {
  const name = Math.max(...steps.map((s) => s.name.length));
  const out = [`steps (${steps.length}):`];
  for (const s of steps) {
    const took =
      s.finishedAt === null ? "" : ` ${Math.max(0, s.finishedAt.getTime() - s.startedAt.getTime())} ms`;
    const what =
      s.status === "waiting"
        ? `waiting${s.wakeAt ? ` until ${s.wakeAt.toISOString()}` : ""}${s.children ? ` for ${s.children.join(", ")}` : ""}`
        : s.status === "failed"
          ? `failed: ${cell(s.error ?? "", 120)}`
          : `-> ${cell(s.resultPreview ?? "", 120)}`;
    out.push(
      `  ${s.name.padEnd(name)}  ${s.kind.padEnd(6)} #${s.attempt} ${s.startedAt.toISOString()}${took}  ${what}`,
    );
  }
  return out;
}

function indent(text: string): string {
  return text
    .split("\n")
    .map((l) => `  ${l}`)
    .join("\n");
}

/** "1 job", "2 jobs". */
export function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}
