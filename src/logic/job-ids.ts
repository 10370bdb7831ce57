/**
 * Ordering job ids. Ids are bigint in the database and decimal text in JavaScript (as pg returns bigint
 * columns): no sign and no leading zeros, since one sequence hands them out from 1. Two such texts order
 * as their numbers do when the shorter is taken as the smaller and texts of equal length compare character
 * by character, so no BigInt is made. That matters where a sort compares thousands of pairs per batch: a
 * claim's rows, which share a scheduled time when they were inserted together, and an enqueue's.
 */

/**
 * Compares two job ids given as decimal text.
 *
 * @returns A negative number when `a` is the smaller, positive when `b` is, 0 when equal.
 *
 * @example
 * ```ts
 * ["10", "9", "100"].sort(compareIdText); // ["9", "10", "100"]
 * ```
 */
export function compareIdText(a: string, b: string): number {
  return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
}
