/**
 * What `ctx.progress(value)` accepts: a percentage (a finite number from 0 to 100) or a small JSON
 * document (`{ done: 40, total: 200 }`, `"uploading"`), held to the payload's JSON rules and to
 * {@link maxProgressBytes}. Progress is written often and read by dashboards, so it stays small.
 */
import { ValidationError } from "../core/errors.js";
import { checkPayload } from "./payload.js";

/** The largest progress value, in bytes of JSON. */
export const maxProgressBytes = 4096;

/**
 * Validates a progress value and returns its JSON text.
 *
 * @throws ValidationError `INVALID_PROGRESS`: a number outside 0-100 or not finite, `undefined`, a value
 *   that is not JSON (the path to the bad value is named), or more than {@link maxProgressBytes} of JSON.
 * @example
 * ```ts
 * progressJson(42); // "42"
 * progressJson({ done: 4, total: 10 }); // '{"done":4,"total":10}'
 * progressJson(101); // throws INVALID_PROGRESS
 * ```
 */
export function progressJson(value: unknown): string {
  if (typeof value === "number") {
    if (!Number.isFinite(value) || value < 0 || value > 100) {
      throw new ValidationError(
        "INVALID_PROGRESS",
        `progress ${String(value)} is not a percentage: a number must be from 0 to 100 (pass an object for counts)`,
      );
    }
    return JSON.stringify(value);
  }
  if (value === undefined) {
    throw new ValidationError("INVALID_PROGRESS", "progress is undefined: pass a number 0-100 or JSON");
  }
  try {
    checkPayload(value);
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    throw new ValidationError("INVALID_PROGRESS", error.message.replace(/^payload/, "progress"));
  }
  const text = JSON.stringify(value);
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes > maxProgressBytes) {
    throw new ValidationError(
      "INVALID_PROGRESS",
      `progress is ${bytes} bytes of JSON, over the limit of ${maxProgressBytes}`,
    );
  }
  return text;
}
