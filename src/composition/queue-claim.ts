/**
 * One poll of a node configured with `queues`: one per-queue claim (src/store/queue-claim-sql.ts) for
 * every lane with room, in parallel, each limited to that lane's room. A lane whose claim fails does not
 * cost the others their jobs: what was claimed is kept, the failure is reported, and the poll fails only
 * when every claim failed (so the poller backs off).
 */
import type { ClaimedJob } from "../store/claim-jobs.js";
import { sortClaimOrder } from "../store/claim-jobs.js";
import type { JobStore } from "../store/job-store.js";
import { claimQueueJobs } from "../store/queue-claim-sql.js";

/** What a per-queue poll needs. */
export interface LaneClaimOptions {
  store: JobStore;
  nodeId: string;
  types: readonly string[];
  boostIntervalMs: number;
  withPayload: boolean;
  /** The most one claim statement takes. */
  maxBatch: number;
  /** Reports a lane's failed claim when others succeeded. */
  onError: (queue: string, error: unknown) => void;
}

/** Claims for every lane in `rooms` (queue, room); returns the jobs in claim order and the total limit. */
export async function claimLanes(
  rooms: readonly [string, number][],
  o: LaneClaimOptions,
): Promise<{ jobs: ClaimedJob[]; limit: number }> {
  const claims = rooms.map(([queue, room]) => {
    const limit = Math.min(room, o.maxBatch);
    return {
      queue,
      limit,
      result: claimQueueJobs(o.store.pool, o.store.tables, queue, {
        nodeId: o.nodeId,
        limit,
        types: o.types,
        boostIntervalMs: o.boostIntervalMs,
        withPayload: o.withPayload,
      }),
    };
  });
  const settled = await Promise.allSettled(claims.map((c) => c.result));
  const jobs: ClaimedJob[] = [];
  const failed: [string, unknown][] = [];
  settled.forEach((r, i) => {
    if (r.status === "fulfilled") jobs.push(...r.value);
    else failed.push([(claims[i] as { queue: string }).queue, r.reason]);
  });
  if (failed.length > 0 && failed.length === settled.length) throw (failed[0] as [string, unknown])[1];
  for (const [queue, error] of failed) o.onError(queue, error);
  return { jobs: sortClaimOrder(jobs), limit: claims.reduce((n, c) => n + c.limit, 0) };
}
