/**
 * The split between the two claim paths (migration 0011, docs/fairness.md): rows without a concurrency
 * key are claimed by the classic and cursor statements as before; rows with one only by the keyed claim
 * (./keyed-claim.ts), which enforces the key's limit and rotates across keys.
 */

/**
 * The condition every unkeyed claim statement adds: the row has no concurrency key. A heap filter on the
 * claim index's rows: free while no keyed rows exist, and a keyed backlog costs these scans only the rows
 * they step over (the keyed rows of the levels they read).
 */
export function unkeyedSql(alias: string): string {
  return `${alias}.concurrency_key IS NULL`;
}
