/**
 * The pure decisions of durable handlers (docs/durable.md): what a call does given what is recorded for
 * its name (replay, run, resume a wait), when a sleep is due, whether a wait is over or timed out, whether
 * awaited children are done, and whether a step's result can be recorded (JSON that round-trips, within
 * the size limit). Time is always an argument: the database's `now`, read with the steps.
 */

/** The kinds of durable call, as recorded. */
export type DurableKind = "step" | "sleep" | "signal" | "spawn" | "wait";

/** What the decisions read of a recorded step. */
export interface RecordedStep {
  kind: DurableKind;
  status: "waiting" | "succeeded" | "failed";
  wakeAt: Date | null;
}

/**
 * What a durable call does:
 * - `replay`: the step is recorded: return its record, run nothing;
 * - `run`: nothing recorded yet, or the last run of a step failed: run it;
 * - `resume`: a wait is under way (its waiting row exists): check whether it is over;
 * - `mismatch`: the name was recorded by another kind of call (the code changed under a parked job).
 */
export type ReplayDecision = "replay" | "run" | "resume" | "mismatch";

/**
 * Decides a durable call from the step recorded under its name (undefined: none).
 *
 * @example
 * ```ts
 * replayDecision(undefined, "step"); // "run"
 * replayDecision({ kind: "step", status: "succeeded", wakeAt: null }, "step"); // "replay"
 * replayDecision({ kind: "sleep", status: "waiting", wakeAt }, "sleep"); // "resume"
 * ```
 */
export function replayDecision(recorded: RecordedStep | undefined, kind: DurableKind): ReplayDecision {
  if (recorded === undefined) return "run";
  if (recorded.kind !== kind) return "mismatch";
  if (recorded.status === "succeeded") return "replay";
  if (recorded.status === "waiting") return "resume";
  return "run";
}

/** The longest sleep or wait timeout (ms): what a timestamptz interval and a JS Date both hold well. */
export const maxDurableWaitMs = 100 * 365 * 86_400_000;

/** A sleep's target: a fixed time, or a delay from the database's now. */
export type SleepTarget = { at: Date; afterMs: null } | { at: null; afterMs: number };

/**
 * Validates `ctx.sleep`'s argument: a number of ms (>= 0) or a valid Date. Returns null for a bad one
 * (the caller throws its typed error).
 *
 * @example
 * ```ts
 * sleepTarget(1500); // { at: null, afterMs: 1500 }
 * sleepTarget(new Date("2030-01-01")); // { at: Date, afterMs: null }
 * sleepTarget(-1); // null
 * ```
 */
export function sleepTarget(msOrDate: unknown): SleepTarget | null {
  if (msOrDate instanceof Date) {
    return Number.isFinite(msOrDate.getTime()) ? { at: new Date(msOrDate.getTime()), afterMs: null } : null;
  }
  if (typeof msOrDate !== "number" || !Number.isFinite(msOrDate) || msOrDate < 0) return null;
  if (msOrDate > maxDurableWaitMs) return null;
  return { at: null, afterMs: Math.round(msOrDate) };
}

/** Validates a wait's `timeoutMs` (absent: no timeout). Returns undefined for a bad one. */
export function waitTimeoutMs(timeoutMs: unknown): number | null | undefined {
  if (timeoutMs === undefined) return null;
  if (typeof timeoutMs !== "number" || !Number.isFinite(timeoutMs) || timeoutMs < 1) return undefined;
  if (timeoutMs > maxDurableWaitMs) return undefined;
  return Math.round(timeoutMs);
}

/**
 * Whether a wait's own end (a sleep's due time, a wait's timeout) has come at `now`. A wait with no end
 * (`wakeAt` null) never has.
 *
 * @example
 * ```ts
 * waitEnded(new Date(1000), new Date(1000)); // true: due at exactly now
 * waitEnded(null, new Date()); // false
 * ```
 */
export function waitEnded(wakeAt: Date | null, now: Date): boolean {
  return wakeAt !== null && wakeAt.getTime() <= now.getTime();
}

/** The statuses in which a job is final. */
const finalStatuses: ReadonlySet<string> = new Set(["SUCCEEDED", "DEAD", "CANCELED"]);

/** What the decisions read of an awaited child. */
export interface ChildStatus {
  id: string;
  status: string;
}

/**
 * Where a children wait stands: `done` when every awaited child is final (with the ones that did not
 * succeed, in the order awaited), else `pending` with the ids still live. A child with no row at all (its
 * history pruned) counts as `missing`: the wait is over, and the caller reports it.
 *
 * @example
 * ```ts
 * childrenProgress(["1", "2"], [{ id: "1", status: "SUCCEEDED" }, { id: "2", status: "RUNNING" }]);
 * // { state: "pending", pending: ["2"] }
 * ```
 */
export function childrenProgress(
  awaited: readonly string[],
  states: readonly ChildStatus[],
): { state: "pending"; pending: string[] } | { state: "done"; failed: string[]; missing: string[] } {
  const byId = new Map(states.map((s) => [s.id, s.status]));
  const pending: string[] = [];
  const failed: string[] = [];
  const missing: string[] = [];
  for (const id of awaited) {
    const status = byId.get(id);
    if (status === undefined) missing.push(id);
    else if (!finalStatuses.has(status)) pending.push(id);
    else if (status !== "SUCCEEDED") failed.push(id);
  }
  return pending.length > 0 ? { state: "pending", pending } : { state: "done", failed, missing };
}

/**
 * The earliest of a wait's end times (null: none ends on its own): what the parked row's deadline is.
 *
 * @example
 * ```ts
 * parkDeadline([null, new Date(5), new Date(3)]); // Date(3)
 * ```
 */
export function parkDeadline(ends: readonly (Date | null)[]): Date | null {
  let min: Date | null = null;
  for (const e of ends) if (e !== null && (min === null || e.getTime() < min.getTime())) min = e;
  return min;
}

/** Why a value cannot be recorded as a step result, or null when it can. */
export function jsonProblem(value: unknown, path = "result", seen: Set<object> = new Set()): string | null {
  if (value === null) return null;
  switch (typeof value) {
    case "string":
    case "boolean":
      return null;
    case "number":
      return Number.isFinite(value) ? null : `${path} is ${String(value)}, which JSON stores as null`;
    case "undefined":
      return `${path} is undefined, which JSON drops or stores as null`;
    case "bigint":
      return `${path} is a BigInt, which JSON cannot store`;
    case "function":
    case "symbol":
      return `${path} is a ${typeof value}, which JSON cannot store`;
  }
  const obj = value as object;
  if (seen.has(obj)) return `${path} is a circular reference`;
  if (Array.isArray(obj)) {
    seen.add(obj);
    for (let i = 0; i < obj.length; i++) {
      const p = jsonProblem(obj[i], `${path}[${i}]`, seen);
      if (p) return p;
    }
    seen.delete(obj);
    return null;
  }
  const proto = Object.getPrototypeOf(obj) as unknown;
  if (proto !== Object.prototype && proto !== null) {
    const name = (obj.constructor as { name?: string } | undefined)?.name ?? "an object with a prototype";
    return `${path} is a ${name}, which JSON does not give back as it was (return plain data)`;
  }
  seen.add(obj);
  for (const [k, v] of Object.entries(obj)) {
    if (v === undefined) continue; // an absent key reads back as undefined too
    const p = jsonProblem(v, `${path}.${k}`, seen);
    if (p) return p;
  }
  seen.delete(obj);
  return null;
}

/** The default size limit of one step's recorded result, in bytes of JSON. */
export const defaultMaxStepResultBytes = 1_048_576;

/**
 * A step result as the JSON text to record: `{"value": ...}`, or `{}` for undefined (a step that returns
 * nothing), so `null` and `undefined` come back as they went. A problem instead when the value does not
 * round-trip through JSON or its text is over `maxBytes`.
 *
 * @example
 * ```ts
 * stepResultJson({ id: 1 }, 100); // { json: '{"value":{"id":1}}' }
 * stepResultJson(new Date(), 100); // { problem: "result is a Date, ...", code: "STEP_RESULT_INVALID" }
 * ```
 */
export function stepResultJson(
  value: unknown,
  maxBytes: number,
): { json: string } | { problem: string; code: "STEP_RESULT_INVALID" | "STEP_RESULT_TOO_LARGE" } {
  if (value === undefined) return { json: "{}" };
  const problem = jsonProblem(value);
  if (problem) return { problem, code: "STEP_RESULT_INVALID" };
  const json = JSON.stringify({ value });
  const bytes = Buffer.byteLength(json, "utf8");
  if (bytes > maxBytes) {
    return {
      problem: `result is ${bytes} bytes of JSON, over the limit of ${maxBytes}`,
      code: "STEP_RESULT_TOO_LARGE",
    };
  }
  return { json };
}

/** The value a recorded step result stands for (see {@link stepResultJson}). */
export function stepResultValue(recorded: unknown): unknown {
  if (recorded !== null && typeof recorded === "object" && "value" in recorded) {
    return (recorded as { value: unknown }).value;
  }
  return undefined;
}
