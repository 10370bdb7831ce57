/**
 * The keyed claim (migration 0011, docs/fairness.md): one statement around `pawl_claim_keyed`, which
 * claims jobs that carry a concurrency key, key by key in rounds, never past a key's limit. The limit is
 * enforced inside the claim (a key at its limit is skipped, not claimed and handed back) under a per-key
 * advisory lock, and the running count is kept with the rows by triggers; see the migration's comments.
 */
import {
  boostSql,
  claimNowSql,
  sortClaimOrder,
  toClaimedJob,
  type ClaimArgs,
  type ClaimedJob,
  type ClaimRow,
} from "./claim-jobs.js";
import { withClaimRowTypes } from "./claim-row-types.js";
import { payloadVariants, type Queryable, type Tables } from "../../db/sql.js";

/**
 * The keyed claim statement. Parameters as the classic claim's (limit, node, types, boost ms, now) and
 * `$6` the queue or null. Returns the classic claim's columns.
 */
export function keyedClaimSql(t: Tables, withPayload: boolean): string {
  // One row of nulls when nothing was claimed, so `keyed` (whether any keyed row is live at all, read in
  // the statement's snapshot) always comes back: a node stops sending this statement while it is false.
  return `
    WITH c AS (
      SELECT * FROM ${t.s}.pawl_claim_keyed($1::int, $2::text, $3::text[], $4::bigint, $6::text, $5::timestamptz)
    )
    SELECT j.id, j.type, j.queue, j.priority, j.priority + ${boostSql(claimNowSql, "j")} AS effective,
           j.attempts, j.max_attempts, j.timeout_ms, j.scheduled_time, j.trace_context, j.concurrency_key${withPayload ? ", j.payload" : ""},
           EXISTS (SELECT 1 FROM ${t.jobs} k WHERE k.status = 'PENDING' AND k.concurrency_key IS NOT NULL) AS keyed
    FROM (SELECT 1) one LEFT JOIN c j ON true`;
}

const statement = payloadVariants("keyed_claim", (t, withPayload) => keyedClaimSql(t, withPayload));

/** What a keyed claim returns: the jobs, and whether any keyed row is live (claimable or running). */
export interface KeyedClaim {
  jobs: ClaimedJob[];
  keyed: boolean;
}

/**
 * Claims up to `limit` keyed jobs for `nodeId`, fair across keys and within every key's limit, returned
 * in claim order. Rows without a key are left to the unkeyed claim statements.
 */
export async function claimKeyedJobs(db: Queryable, t: Tables, args: ClaimArgs): Promise<KeyedClaim> {
  if (args.limit <= 0 || args.types.length === 0) return { jobs: [], keyed: true };
  const values = [
    args.limit,
    args.nodeId,
    args.types,
    args.boostIntervalMs,
    args.now ?? null,
    args.queue ?? null,
  ];
  const res = await db.query<ClaimRow & { keyed: boolean }>(
    withClaimRowTypes(statement(t, args.withPayload)(values)),
  );
  const rows = res.rows.filter((r) => r.id !== null);
  return {
    jobs: sortClaimOrder(rows.map((r) => toClaimedJob(r, args.withPayload))),
    keyed: res.rows.some((r) => r.keyed),
  };
}
