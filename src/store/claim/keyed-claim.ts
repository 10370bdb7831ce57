/**
 * The keyed claim (migrations 0011 and 0013, docs/fairness.md): one statement around `pawl_claim_keys`,
 * which claims jobs that carry a concurrency key from a rotating window of keys, in rounds, never past a
 * key's limit. The limit is enforced inside the claim (a key at its limit is skipped, not claimed and
 * handed back) under a per-key advisory lock, and the running count is kept with the rows by triggers;
 * see the migrations' comments.
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
 * The keyed claim statement. Parameters as the classic claim's (limit, node, types, boost ms, now), `$6`
 * the queue or null and `$7` the key the previous keyed claim stopped at, or null. Returns the classic
 * claim's columns and `next_key`.
 */
export function keyedClaimSql(t: Tables, withPayload: boolean): string {
  // The function returns one (NULL, next key) row when it leased nothing, so `next_key` always comes
  // back; it is NULL only when no keyed row is PENDING at all.
  return `
    WITH c AS (
      SELECT * FROM ${t.s}.pawl_claim_keys($1::int, $2::text, $3::text[], $4::bigint, $6::text, $5::timestamptz,
                                           $7::text)
    )
    SELECT j.id, j.type, j.queue, j.priority, j.priority + ${boostSql(claimNowSql, "j")} AS effective,
           j.attempts, j.max_attempts, j.timeout_ms, j.scheduled_time, j.trace_context, j.concurrency_key${withPayload ? ", j.payload" : ""},
           c.claim_next_key AS next_key
    FROM c CROSS JOIN LATERAL (SELECT (c.claimed_job).*) j`;
}

const statement = payloadVariants("keyed_claim_window", (t, withPayload) => keyedClaimSql(t, withPayload));

/** Arguments of {@link claimKeyedJobs}: a claim's, and where the key rotation stands. */
export interface KeyedClaimArgs extends ClaimArgs {
  /** The key the previous keyed claim's window ended at ({@link KeyedClaim.nextKey}); null: the first key. */
  afterKey?: string | null;
}

/** What a keyed claim returns. */
export interface KeyedClaim {
  jobs: ClaimedJob[];
  /** Whether any keyed row is PENDING (claimable or running); while false a node need not send the claim. */
  keyed: boolean;
  /** Where the next keyed claim's window starts (after this key); null when no keyed row is PENDING. */
  nextKey: string | null;
}

/**
 * Claims up to `limit` keyed jobs for `nodeId` from the window of keys after `afterKey`, fair across keys
 * and within every key's limit, returned in claim order. Rows without a key are left to the unkeyed claim
 * statements.
 */
export async function claimKeyedJobs(db: Queryable, t: Tables, args: KeyedClaimArgs): Promise<KeyedClaim> {
  if (args.limit <= 0 || args.types.length === 0) {
    return { jobs: [], keyed: true, nextKey: args.afterKey ?? null };
  }
  const values = [
    args.limit,
    args.nodeId,
    args.types,
    args.boostIntervalMs,
    args.now ?? null,
    args.queue ?? null,
    args.afterKey ?? null,
  ];
  const res = await db.query<ClaimRow & { next_key: string | null }>(
    withClaimRowTypes(statement(t, args.withPayload)(values)),
  );
  const rows = res.rows.filter((r) => r.id !== null);
  const nextKey = res.rows[0]?.next_key ?? null;
  return {
    jobs: sortClaimOrder(rows.map((r) => toClaimedJob(r, args.withPayload))),
    keyed: nextKey !== null,
    nextKey,
  };
}
