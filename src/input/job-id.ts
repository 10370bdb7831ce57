/** Job ids are positive bigints; this checks one before it reaches SQL, so a typo is a clear error. */
import { describeValue } from "../core/input-text.js";
import { ValidationError } from "../core/errors.js";

/** Validates a job id (a positive integer, as a string or number) and returns it as a string. */
export function validateJobId(id: unknown): string {
  const s = typeof id === "number" && Number.isSafeInteger(id) ? String(id) : id;
  if (typeof s !== "string" || !/^[1-9]\d{0,18}$/.test(s) || BigInt(s) > 9223372036854775807n) {
    throw new ValidationError(
      "INVALID_OPTION",
      `invalid job id ${describeValue(id)}: use a positive integer`,
    );
  }
  return s;
}
