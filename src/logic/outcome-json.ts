/**
 * How an attempt's outcome becomes the JSON text PostgreSQL stores. Every result and every error record
 * goes through these two functions, and nothing else serialises outcomes, so what can reach an outcome
 * statement is decided here, once:
 *
 * - a **result** is stored as `JSON.stringify` writes it (`toJSON` applied, `undefined` properties
 *   dropped, NaN and ±Infinity as null), or as `null` when that text cannot be stored faithfully:
 *   `JSON.stringify` throws (a cycle, a BigInt, a throwing getter or `toJSON`) or returns nothing
 *   (undefined, a function), a string or key holds a NUL or a lone surrogate, the nesting is deeper
 *   than {@link maxResultDepth}, or the text is longer than {@link maxResultJsonLength}. A bad result
 *   never fails the job that did its work.
 * - an **error record** is always storable: its texts are cut to a bound and their NULs and lone
 *   surrogates replaced with U+FFFD.
 *
 * Pure: no I/O, nothing read from the environment. The batch writer still isolates a statement that
 * PostgreSQL refuses (defence in depth), but a value that passed through here is not expected to be one.
 */
import { jsonbRefusal, sanitizeText } from "../core/json-text.js";

/**
 * Results nested deeper than this many arrays and objects are stored as null. Far beyond real results,
 * and far below what PostgreSQL's recursive JSON parser handles at its default `max_stack_depth`.
 */
export const maxResultDepth = 1000;

/** Results whose JSON text is longer than this (UTF-16 units) are stored as null: jsonb holds < 256 MB. */
export const maxResultJsonLength = 32 * 1024 * 1024;

/** The bounds of an error record's texts, in UTF-16 units. */
export const errorTextLimits = { name: 200, message: 2000, stack: 4000, details: 8000 } as const;

/**
 * The JSON text of a handler's result as it is stored, or `null` (SQL NULL, read back as `null`) when the
 * value has no faithful JSON form that PostgreSQL accepts. Never throws.
 *
 * @example
 * ```ts
 * resultJson({ pages: 2 }); // '{"pages":2}'
 * resultJson("a\u0000b"); // null
 * resultJson(10n); // null
 * ```
 */
export function resultJson(value: unknown): string | null {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch {
    return null; // a cycle, a BigInt, a throwing getter or toJSON, or too deep for the JS stack
  }
  if (text === undefined || text.length > maxResultJsonLength) return null;
  return jsonbRefusal(text, maxResultDepth) === null ? text : null;
}

/** An error as recorded on a job (the store adds the time). */
export interface ErrorInfo {
  /** The attempt that failed. */
  attempt: number;
  /** The error's name (its class), or NonErrorThrown. */
  name: string;
  /** The error's message. */
  message: string;
  /** The stack, when there was one. */
  stack?: string;
  /**
   * What else the thrown value carried (an Error's own fields such as `code` or `cause`, a thrown
   * object's fields), as a plain JSON tree: see `describeThrown` in `logic/thrown-value.ts`.
   */
  details?: Record<string, unknown>;
}

/**
 * The JSON text of an error record: texts cut to {@link errorTextLimits}, NULs and lone surrogates
 * replaced with U+FFFD. `details` is kept when its JSON is storable, as a (cut) string when it is too
 * long, and dropped when it cannot be stored at all. Never throws, and the text is always storable.
 *
 * @example
 * ```ts
 * errorRecordJson({ attempt: 1, name: "Error", message: "x\u0000" }); // '{"attempt":1,"name":"Error","message":"x\uFFFD"}'
 * ```
 */
export function errorRecordJson(e: ErrorInfo): string {
  const text = (v: unknown, max: number) => sanitizeText(typeof v === "string" ? v : "", max);
  const record: Record<string, unknown> = {
    attempt: Number.isSafeInteger(e.attempt) ? e.attempt : 0,
    name: text(e.name, errorTextLimits.name) || "Error",
    message: text(e.message, errorTextLimits.message),
  };
  if (typeof e.stack === "string" && e.stack !== "") record.stack = text(e.stack, errorTextLimits.stack);
  const details = detailsJson(e.details);
  // The record without details is storable by construction (sanitised strings and an integer).
  if (details === null) return JSON.stringify(record);
  if (details.length > errorTextLimits.details) {
    record.details = text(details, errorTextLimits.details);
    return JSON.stringify(record);
  }
  return JSON.stringify(record).slice(0, -1) + `,"details":${details}}`;
}

function detailsJson(details: unknown): string | null {
  if (details === undefined || details === null) return null;
  try {
    const text = JSON.stringify(details);
    return text !== undefined && jsonbRefusal(text, 32) === null ? text : null;
  } catch {
    return null;
  }
}

/** The longest delay an outcome stores (100 years): far beyond any real backoff, far inside timestamptz. */
export const maxOutcomeDelayMs = 100 * 365.25 * 24 * 3_600_000;

/**
 * A delay as the outcome statements store it: whole milliseconds from 0 to {@link maxOutcomeDelayMs}
 * (NaN counts as 0). A retry policy or snooze asking for longer would otherwise overflow the statement.
 *
 * @example
 * ```ts
 * storableDelayMs(1.6); // 2
 * storableDelayMs(1e300); // maxOutcomeDelayMs
 * ```
 */
export function storableDelayMs(ms: number): number {
  return ms > 0 ? Math.min(Math.round(ms), maxOutcomeDelayMs) : 0;
}
