/**
 * One poll: every lane with room claims through its own claimer, in parallel, each limited to its room
 * (and the largest batch). A lane whose claim fails does not cost the others their jobs: what was claimed
 * is kept, the failure is reported, and the poll fails only when every claim failed (so the poller backs
 * off). A node without `queues` has one lane, so this is one claim.
 *
 * A poll reserves what it asks for in each lane ({@link reserveLanes}) until its rows land, so a second
 * poll started ahead (two may be in flight) claims only what is left of each lane's room.
 */
import type { ClaimedJob } from "../../store/claim/claim-jobs.js";
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
  /** Reports a lane's failed claim when others succeeded. */
  onError: (lane: Lane, error: unknown) => void;
  /** Jobs a lane's claimer handed over before its claim finished (Claimer.claim's `early`). */
  early?: (lane: Lane, jobs: readonly ClaimedJob[]) => void;
}

/** What one poll asks of each lane, counted in the lanes' `reserved` until {@link LaneReservation.release}. */
export interface LaneReservation {
  lanes: readonly Lane[];
  /** Rows asked of each lane (same order as `lanes`). */
  sizes: readonly number[];
  /** Their sum: the poll's limit. */
  limit: number;
  /** Gives the rows back to the lanes' room; call once, in the same step that buffers what landed. */
  release(): void;
}

/** Reserves `min(room, maxBatch)` rows in each lane for one poll. */
export function reserveLanes(lanes: readonly Lane[], maxBatch: number): LaneReservation {
  const sizes = lanes.map((lane) => Math.min(lane.room, maxBatch));
  let limit = 0;
  sizes.forEach((n, i) => {
    (lanes[i] as Lane).reserved += n;
    limit += n;
  });
  let released = false;
  return {
    lanes,
    sizes,
    limit,
    release: () => {
      if (released) return;
      released = true;
      sizes.forEach((n, i) => void ((lanes[i] as Lane).reserved -= n));
    },
  };
}

/** Claims what `r` reserved in each lane; returns each lane's jobs (in claim order) and the total limit. */
export async function claimLanes(
  r: LaneReservation,
  o: LaneClaimOptions,
): Promise<{ batches: LaneBatch[]; limit: number }> {
  const { lanes, limit } = r;
  const early = o.early;
  const claims = lanes.map((lane, i) =>
    lane.claimer.claim(
      r.sizes[i] as number,
      o.types,
      o.dueLevels,
      early === undefined ? undefined : (jobs) => early(lane, jobs),
    ),
  );
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
