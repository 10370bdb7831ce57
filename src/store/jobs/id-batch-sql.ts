/**
 * Batch writes to live rows by id, each row with values of its own (a completion's result, a retry's
 * delay and error, a progress value): ids and values travel as parallel arrays, sorted by id.
 *
 * The rows are found with `id = ANY(ids)` on the primary key, and each row reads its values from the
 * arrays at its id's position, found by binary search (`width_bucket` over the sorted ids). There is no
 * join, because a join's plan depended on statistics that go stale in a queue. The planner estimated the
 * `picked_by = node` filter from an ANALYZE taken when few rows were leased, estimated one matching row,
 * and chose a nested loop that rescanned the whole unnested batch once per leased row. Measured at half
 * the drain rate under a stream of enqueues, completions of 1,000 jobs took 200-390 ms, and 2.1 s with
 * 20,000 leased rows in psql. The primary-key lookup has no such plan: the same write takes 1.5-1.9 ms
 * whatever the statistics say. The claim's update finds its rows the same way (claim-jobs.ts).
 */
import { compareIdText } from "../../logic/job-ids.js";

/**
 * A batch's array parameters: its ids sorted ascending in numeric order, as {@link valueAtRowSql} needs
 * them, then each of `columns` in the same order. Every writer takes its arrays from here, so none can
 * send ids in an order the lookup cannot read. Ids are compared as PostgreSQL prints a bigint (decimal,
 * no sign, no leading zeros), which every id pawl hands out is.
 *
 * @example
 * ```ts
 * idBatchParams([{ id: "10", r: "b" }, { id: "9", r: "a" }], (i) => i.r); // [["9", "10"], ["a", "b"]]
 * ```
 */
export function idBatchParams<T extends { id: string }>(
  items: readonly T[],
  ...columns: ((item: T) => unknown)[]
): unknown[][] {
  const sorted = [...items].sort((a, b) => compareIdText(a.id, b.id));
  return [sorted.map((i) => i.id), ...columns.map((column) => sorted.map(column))];
}

/** The rows of a batch: `alias.id` is one of the ids in array parameter `ids`. */
export const inIdBatchSql = (alias: string, ids: string): string => `${alias}.id = ANY(${ids})`;

/**
 * The element of array parameter `values` that belongs to row `alias`: the one at the position of its id
 * in `ids`. `ids` must be sorted ascending ({@link idBatchParams}) and hold the row's id, as it does for
 * every row {@link inIdBatchSql} selects; `width_bucket` then returns exactly that position.
 */
export const valueAtRowSql = (alias: string, values: string, ids: string): string =>
  `(${values})[width_bucket(${alias}.id, ${ids})]`;
