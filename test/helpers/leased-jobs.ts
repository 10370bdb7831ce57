import { expect } from "vitest";
import type { JobStore } from "../../src/store/postgres-job-store.js";
import { newJob } from "./new-job.js";

/**
 * Enqueues `n` jobs of `type` through `store` and claims them all for `nodeId`, as a node's claim leaves
 * them: leased and RUNNING. Returns their ids in claim order.
 */
export async function leasedJobs(
  store: JobStore,
  type: string,
  n: number,
  nodeId: string,
): Promise<string[]> {
  await store.enqueue(Array.from({ length: n }, () => newJob({ type })));
  const claimed = await store.claim({
    nodeId,
    limit: n,
    types: [type],
    boostIntervalMs: 0,
    withPayload: false,
  });
  expect(claimed).toHaveLength(n);
  return claimed.map((c) => c.id);
}
