/**
 * One poll: every lane with room claims through its own claimer, in parallel, each limited to its room
 * (and the largest batch). A lane whose claim fails does not cost the others their jobs: what was claimed
 * is kept, the failure is reported, and the poll fails only when every claim failed (so the poller backs
 * off). A node without `queues` has one lane, so this is one claim.
 */
import type { ClaimedJob } from "../store/claim-jobs.js";
import type { Lane } from "./lanes.js";

/** What one lane claimed. */
export interface LaneBatch {
  lane: Lane;
  jobs: ClaimedJob[];
}

/** What a poll needs besides the lanes. */
export interface LaneClaimOptions {
  types: readonly string[];
  /** Priority levels where rows are known to have just come due (for claimers that seek). */
  dueLevels: readonly number[];
  /** The most one claim takes. */
  maxBatch: number;
  /** Reports a lane's failed claim when others succeeded. */
  onError: (lane: Lane, error: unknown) => void;
}

/** Claims for every lane in `lanes`; returns each lane's jobs (in claim order) and the total limit. */
export async function claimLanes(
  lanes: readonly Lane[],
  o: LaneClaimOptions,
): Promise<{ batches: LaneBatch[]; limit: number }> {
  let limit = 0;
  const claims = lanes.map((lane) => {
    const n = Math.min(lane.room, o.maxBatch);
    limit += n;
    return lane.claimer.claim(n, o.types, o.dueLevels);
  });
  const settled = await Promise.allSettled(claims);
  const batches: LaneBatch[] = [];
  const failed: [Lane, unknown][] = [];
  settled.forEach((r, i) => {
    const lane = lanes[i] as Lane;
    if (r.status === "fulfilled") batches.push({ lane, jobs: r.value });
    else failed.push([lane, r.reason]);
  });
  if (failed.length > 0 && failed.length === settled.length) throw (failed[0] as [Lane, unknown])[1];
  for (const [lane, error] of failed) o.onError(lane, error);
  return { batches, limit };
}
