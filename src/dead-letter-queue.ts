/**
 * The client's dead letter queue API (`pawl.dlq`): list, retry and purge DEAD jobs, with every filter and
 * id validated before SQL runs. A retry announces the jobs it sent back as an enqueue would (so nodes wake
 * for them), and reports the ones canceled as duplicates of a live job holding their unique key.
 */
import type { ClientHooks } from "./client-hooks.js";
import { validateDeadLetterFilter } from "./filter-input.js";
import type { DeadLetterFilter, RetriedJobs } from "./store/dead-letter.js";
import { validateJobId } from "./store/job-id.js";
import type { Job } from "./store/job-row.js";
import type { JobStore } from "./store/job-store.js";

/** The dead letter queue API. */
export interface DeadLetterQueue {
  /** DEAD jobs, newest first. */
  list(filter?: DeadLetterFilter): Promise<Job[]>;
  /**
   * Sends DEAD jobs back to PENDING with attempts reset; returns those it sent back. A job whose unique key
   * another live job holds is CANCELED instead (the live job wins): those are in the result's
   * non-enumerable `duplicates`, never among the returned jobs, and the others are retried all the same.
   */
  retry(ids: string | readonly string[]): Promise<RetriedJobs>;
  /** Deletes DEAD jobs matching the filter; returns how many. */
  purge(filter?: DeadLetterFilter): Promise<number>;
}

/**
 * The dead letter queue over `store`; `hooks` (a node's) announce retried jobs and report duplicates.
 *
 * @example
 * ```ts
 * const dlq = deadLetterQueue(store, undefined);
 * await dlq.retry(["42"]);
 * ```
 */
export function deadLetterQueue(store: JobStore, hooks: ClientHooks | undefined): DeadLetterQueue {
  return {
    list: async (f) => store.listDead(validateDeadLetterFilter(f)),
    retry: async (ids) => {
      const list = (Array.isArray(ids) ? ids : [ids]).map(validateJobId);
      const jobs = await store.retryDead(list);
      for (const d of jobs.duplicates) {
        hooks?.events.emit("job:duplicate-canceled", { ...d, via: "dlq.retry" });
      }
      await hooks?.afterEnqueue(
        jobs.map((j) => ({ ...j, inserted: true })),
        undefined,
      );
      return jobs;
    },
    purge: async (f) => store.purgeDead(validateDeadLetterFilter(f)),
  };
}
