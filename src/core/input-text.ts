/**
 * Text PostgreSQL can store. A `text` column refuses U+0000 (22021), and `jsonb` refuses the `\u0000`
 * escape (22P05) and an unpaired surrogate (22P02) that JSON.stringify writes for a lone UTF-16 half.
 * JavaScript strings allow all three, so every string that comes from a caller is checked here before
 * any SQL runs: one rule for every door (payload strings and keys, job types, queues, unique keys, cancel
 * reasons, flow and step names), and a clear {@link ValidationError} instead of a database error.
 */
import { ValidationError, type PawlErrorCode } from "./errors.js";

// NUL, a high surrogate not followed by a low one, or a low surrogate not preceded by a high one.
// (Without the `u` flag a regular expression sees UTF-16 code units, which is what we need here.)
// eslint-disable-next-line no-control-regex -- finding NUL is the point
const unstorable = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Why PostgreSQL could not store `text`, or null when it can: names the first bad code unit and its
 * index, e.g. `U+0000 (NUL) at index 3`.
 *
 * @example
 * ```ts
 * textProblem("ok"); // null
 * textProblem("a\u0000b"); // "it contains U+0000 (NUL) at index 1, which PostgreSQL cannot store"
 * ```
 */
export function textProblem(text: string): string | null {
  const found = unstorable.exec(text);
  if (!found) return null;
  const unit = found[0].charCodeAt(0);
  const hex = unit.toString(16).toUpperCase().padStart(4, "0");
  const what = unit === 0 ? "NUL" : unit < 0xdc00 ? "a lone high surrogate" : "a lone low surrogate";
  return `it contains U+${hex} (${what}) at index ${found.index}, which PostgreSQL cannot store`;
}

/**
 * Checks that `value` is a string PostgreSQL can store and returns it.
 *
 * @param what names the input in the message, e.g. `uniqueKey` or `cancel reason`.
 * @throws ValidationError with `code` (default `INVALID_OPTION`) when it is not a string or holds NUL or a
 *   lone surrogate.
 */
export function storableText(what: string, value: unknown, code: PawlErrorCode = "INVALID_OPTION"): string {
  if (typeof value !== "string") {
    throw new ValidationError(code, `invalid ${what} ${describeValue(value)}: use a string`);
  }
  const problem = textProblem(value);
  if (problem !== null)
    throw new ValidationError(code, `invalid ${what} ${JSON.stringify(value)}: ${problem}`);
  return value;
}

/**
 * A caller's value for an error message: its JSON when it has one (NUL and lone surrogates come out
 * escaped), else a short description. Never throws, unlike JSON.stringify on a BigInt or a cycle.
 */
export function describeValue(value: unknown): string {
  if (typeof value === "bigint") return `${value}n`;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}
