/**
 * The lease (migration 0008, docs/job-lifecycle.md#the-lease): a claimed job keeps `status = 'PENDING'`
 * in scheduler_job_queue and gets `picked_by` / `picked_at` set; RUNNING is the derived state "PENDING
 * with a lease". The claim then writes only columns that no index covers and no index predicate names
 * (`picked_by`, `picked_at`, `attempts`, `updated_at`), so PostgreSQL can make it a HOT update: the new
 * row version goes on the same page and no index gets a new entry.
 *
 * Every statement that reads or guards on the running state says it through these fragments, so the rule
 * lives in one place: claims take {@link claimableSql} rows, outcome writes guard on {@link heldBySql},
 * readers show {@link statusSql}, and every path that returns a job to PENDING clears the lease
 * ({@link clearLease}).
 */
import type { ColumnValues } from "./finished-sql.js";

const col = (alias: string | undefined, c: string): string => (alias ? `${alias}.${c}` : c);

/** A live row a claim may take: PENDING and not leased. */
export function claimableSql(alias?: string): string {
  return `${col(alias, "status")} = 'PENDING' AND ${col(alias, "picked_by")} IS NULL`;
}

/** A live row that is running (leased): PENDING with `picked_by` set. */
export function leasedSql(alias?: string): string {
  return `${col(alias, "status")} = 'PENDING' AND ${col(alias, "picked_by")} IS NOT NULL`;
}

/** A live row running under the node given by the SQL expression `node` (the outcome writers' guard). */
export function heldBySql(alias: string, node: string): string {
  return `${alias}.status = 'PENDING' AND ${alias}.picked_by = ${node}`;
}

/**
 * Which lease an outcome ends: the attempt number the claim counted and the row's `scheduled_time` (epoch
 * ms, truncated as the claim reads it) at that claim. No claim changes `scheduled_time`, every path that
 * ends a lease and lets the row be claimed again changes one of the two (a retry both, a reschedule, a park
 * or an audit release the time or the count), so an outcome sent again after its first try's reply was lost
 * can never land on a newer lease of the same row, even one this node took.
 */
export interface LeaseToken {
  attempt: number;
  scheduledAtMs: number;
}

/**
 * The outcome writers' second guard: row `alias` is still the lease named by the SQL expressions `attempt`
 * and `scheduledMs` (a {@link LeaseToken}'s fields); a NULL `attempt` names no lease and passes.
 */
export function leaseIsSql(alias: string, attempt: string, scheduledMs: string): string {
  return (
    `(${attempt} IS NULL OR (${alias}.attempts = ${attempt} ` +
    `AND floor(extract(epoch FROM ${alias}.scheduled_time) * 1000)::bigint = ${scheduledMs}))`
  );
}

/**
 * The status as users see it: RUNNING for a leased row, the stored status otherwise. Idempotent (a row of
 * scheduler_job_all already shows RUNNING, and no other stored status is changed), so it is safe over
 * either table or the view.
 */
export function statusSql(alias?: string): string {
  return (
    `CASE WHEN ${col(alias, "status")} = 'PENDING' AND ${col(alias, "picked_by")} IS NOT NULL ` +
    `THEN 'RUNNING' ELSE ${col(alias, "status")} END`
  );
}

/** The claim's SET list for a row of `alias` leased to the node given by the SQL expression `node`. */
export function leaseSetSql(alias: string, node: string): string {
  return `picked_by = ${node}, picked_at = now(), attempts = ${alias}.attempts + 1, updated_at = now()`;
}

/** The SET fragment that ends a lease (a job going back to PENDING, WAITING or PAUSED). */
export const clearLeaseSql = "picked_by = NULL, picked_at = NULL";

/** {@link clearLeaseSql} as column values, for the move and return builders. */
export const clearLease: ColumnValues = { picked_by: "NULL", picked_at: "NULL" };
