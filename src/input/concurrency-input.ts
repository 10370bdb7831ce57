/**
 * The concurrency options of an enqueue (issue 27, docs/fairness.md): `concurrencyKey` groups jobs (a
 * tenant id, say) and `concurrencyLimit` caps how many jobs of the key run at once across every node.
 * The SQL `enqueue()` of migration 0011 applies the same rules with the same messages.
 */
import { ValidationError } from "../core/errors.js";
import { describeValue, storableText } from "../core/input-text.js";

/** The longest concurrency key (UTF-16 code units, as JavaScript counts). */
export const maxConcurrencyKeyLength = 500;
/** The largest concurrency limit. */
export const maxConcurrencyLimit = 100_000;

/** The validated pair; both null for a job without a key. */
export interface ConcurrencyFields {
  concurrencyKey: string | null;
  concurrencyLimit: number | null;
}

/**
 * Validates a limit: an integer from 1 to {@link maxConcurrencyLimit}.
 * @throws ValidationError `INVALID_OPTION`.
 */
export function validateConcurrencyLimit(value: unknown): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1 || value > maxConcurrencyLimit) {
    throw new ValidationError(
      "INVALID_OPTION",
      `invalid concurrencyLimit ${describeValue(value)}: use an integer from 1 to ${maxConcurrencyLimit}`,
    );
  }
  return value;
}

/**
 * Validates the call's key and limit, falling back to the type's default limit when the call gives a
 * key without one. A limit without a key is refused: it would limit nothing.
 *
 * @throws ValidationError `INVALID_OPTION`; nothing has been written.
 */
export function validateConcurrency(
  key: unknown,
  limit: unknown,
  typeDefaultLimit: number | undefined,
): ConcurrencyFields {
  let concurrencyKey: string | null = null;
  if (key !== undefined && key !== null) {
    const text = storableText("concurrencyKey", key);
    if (text.length === 0 || text.length > maxConcurrencyKeyLength) {
      throw new ValidationError(
        "INVALID_OPTION",
        `invalid concurrencyKey ${describeValue(key)}: use a string of 1-${maxConcurrencyKeyLength} characters`,
      );
    }
    concurrencyKey = text;
  }
  const given = limit === undefined || limit === null ? undefined : validateConcurrencyLimit(limit);
  if (given !== undefined && concurrencyKey === null) {
    throw new ValidationError("INVALID_OPTION", "concurrencyLimit needs a concurrencyKey");
  }
  if (concurrencyKey === null) return { concurrencyKey: null, concurrencyLimit: null };
  return { concurrencyKey, concurrencyLimit: given ?? typeDefaultLimit ?? null };
}
