/**
 * The per-queue claim: the classic claim (src/store/claim-jobs.ts) narrowed to one queue, for nodes
 * configured with `queues` (docs/composition.md#queues). The same recursive skip scan over the priority
 * levels and the same per-level range scans, but on the `(queue, priority DESC, scheduled_time, id) WHERE
 * status = 'PENDING'` index of migration 0004, so a queue's claim never walks another queue's rows: a
 * backlog in one queue costs the others nothing. The age boost, the claim order and the UPDATE to RUNNING
 * are the classic claim's own fragments, so both claims rank and record jobs identically.
 */
import {
  boostSql,
  claimNowSql,
  claimUpdateSql,
  sortClaimOrder,
  toClaimedJob,
  type ClaimArgs,
  type ClaimedJob,
  type ClaimRow,
} from "./claim-jobs.js";
import { payloadVariants, type Queryable, type Tables } from "./sql.js";

/**
 * The per-queue claim statement. Parameters: `$1` limit, `$2` node, `$3` types, `$4` boost ms, `$5` now
 * override, `$6` queue.
 */
export function queueClaimSql(t: Tables, withPayload: boolean): string {
  const now = claimNowSql;
  return `
    WITH RECURSIVE levels(p) AS (
      (SELECT priority FROM ${t.jobs} WHERE status = 'PENDING' AND queue = $6 ORDER BY priority DESC LIMIT 1)
      UNION ALL
      SELECT (SELECT j.priority FROM ${t.jobs} j
              WHERE j.status = 'PENDING' AND j.queue = $6 AND j.priority < levels.p
              ORDER BY j.priority DESC LIMIT 1)
      FROM levels WHERE levels.p IS NOT NULL
    ),
    candidates AS (
      SELECT c.id, c.priority, c.scheduled_time, c.priority + ${boostSql(now, "c")} AS effective
      FROM levels
      CROSS JOIN LATERAL (
        SELECT j.id, j.priority, j.scheduled_time FROM ${t.jobs} j
        WHERE j.status = 'PENDING' AND j.queue = $6 AND j.priority = levels.p
          AND j.scheduled_time <= ${now} AND j.type = ANY($3::text[])
        ORDER BY j.scheduled_time, j.id
        LIMIT $1
        FOR UPDATE SKIP LOCKED
      ) c
      WHERE levels.p IS NOT NULL
    ),
    picked AS (
      SELECT id FROM candidates ORDER BY effective DESC, scheduled_time, id LIMIT $1
    )
    ${claimUpdateSql(t, now, withPayload)}`;
}

const statement = payloadVariants("queue_claim", queueClaimSql);

/** Claims up to `args.limit` due jobs of `queue` for `args.nodeId`, in claim order. */
export async function claimQueueJobs(
  db: Queryable,
  t: Tables,
  queue: string,
  args: ClaimArgs,
): Promise<ClaimedJob[]> {
  if (args.limit <= 0 || args.types.length === 0) return [];
  const stmt = statement(t, args.withPayload);
  const res = await db.query<ClaimRow>(
    stmt([args.limit, args.nodeId, args.types, args.boostIntervalMs, args.now ?? null, queue]),
  );
  return sortClaimOrder(res.rows.map((r) => toClaimedJob(r, args.withPayload)));
}
