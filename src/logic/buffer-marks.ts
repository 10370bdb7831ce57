/**
 * When a node's buffer of claimed jobs counts as low. Two marks, both from the prefetch:
 *
 * - **low water** (`max(1, floor(prefetch / 2))`): a waiting poller hears `SLOT_FREED` once the buffer is
 *   at or below it, and polls if the last claim came back full. Half the prefetch leaves the other half to
 *   run while that claim is out.
 * - **claim ahead** (`floor(lowWater / 2)`): while a claim is out, a buffer at or below this mark starts a
 *   second one (docs/machines/poller.md), since at this rate the buffer runs dry before the first lands.
 *   Half of the low water again, so the second claim still finds about that much room left after what the
 *   first reserved, rather than a handful of rows.
 */

/** A node's two buffer marks (jobs). */
export interface BufferMarks {
  /** A waiting poller is told when the buffer is at or below this. */
  lowWater: number;
  /** A polling poller starts a second claim when the buffer is at or below this. */
  claimAhead: number;
}

/** The buffer marks of a node (or lane set) with `prefetch`. */
export function bufferMarks(prefetch: number): BufferMarks {
  const lowWater = Math.max(1, Math.floor(Math.max(0, prefetch) / 2));
  return { lowWater, claimAhead: Math.floor(lowWater / 2) };
}
