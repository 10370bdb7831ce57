/**
 * Priorities: integers from 0 to 100, higher first, with four names for the common levels. The gaps
 * between the names leave room for the age boost (+1 level per boost interval) and for custom levels.
 */
import { describeValue } from "../core/input-text.js";
import { ValidationError } from "../core/errors.js";

/** The named priorities. */
export const priorities = { low: 0, normal: 10, high: 20, critical: 30 } as const;

/** A priority name. */
export type PriorityName = keyof typeof priorities;

/** A priority: a name or an integer from {@link minPriority} to {@link maxPriority}. */
export type Priority = PriorityName | number;

/** The lowest numeric priority. */
export const minPriority = 0;
/** The highest numeric priority. */
export const maxPriority = 100;

/**
 * Resolves a priority to its number.
 *
 * @throws ValidationError `INVALID_PRIORITY` for unknown names, non-integers and values out of range.
 * @example
 * ```ts
 * resolvePriority("high"); // 20
 * ```
 */
export function resolvePriority(value: unknown): number {
  if (typeof value === "string" && Object.hasOwn(priorities, value)) {
    return priorities[value as PriorityName];
  }
  if (typeof value === "number" && Number.isInteger(value) && value >= minPriority && value <= maxPriority) {
    return value;
  }
  throw new ValidationError(
    "INVALID_PRIORITY",
    `invalid priority ${describeValue(value)}: use an integer from ${minPriority} to ${maxPriority} ` +
      `or one of ${Object.keys(priorities).join(", ")}`,
  );
}
