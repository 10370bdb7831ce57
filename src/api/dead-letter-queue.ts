/**
 * The client's dead letter queue API (`pawl.dlq`): list, retry and purge DEAD jobs, with every filter and
 * id validated before SQL runs. A retry announces the jobs it sent back as an enqueue would (so nodes wake
 * for them), and reports the ones canceled as duplicates of a live job holding their unique key.
 */
import type { WriteAction } from "./write-grant.js";
import type { ClientHooks } from "../composition/client-hooks.js";
import { ValidationError } from "../core/errors.js";
import { validateDeadLetterFilter } from "../input/filter-input.js";
import type { DeadLetterFilter, RetriedJobs } from "../store/jobs/dead-letter.js";
import { validateJobId } from "../input/job-id.js";
import type { JobStore } from "../store/job-store.js";
import type { PawlTasks, TaskName, TypedJob } from "../input/task-map.js";

/** Options of `dlq.retry`. */
export interface DeadLetterRetryOptions {
  /**
   * What a durable job (docs/durable.md) keeps of its recorded steps: `keep` (the default) resumes it from
   * its last recorded step (the step that failed runs again; the ones before it do not); `discard` deletes
   * them, in the retry's transaction, so it starts over from its first step (signals it consumed stay
   * consumed; children it spawned stay, and new ones are spawned). A durable machine's job
   * (docs/durable-machines.md) starts afresh too: its saved snapshot, timers and version are reset in the
   * same transaction, so it starts the current definition from its payload; the events it already handled
   * stay in its history, and those still pending are delivered to the fresh machine, in order.
   */
  steps?: "keep" | "discard";
}

/**
 * The dead letter queue API. With a task map (`Tasks`), the jobs listed are typed like getJob's, and a
 * `type` filter narrows them to that type.
 */
export interface DeadLetterQueue<Tasks = PawlTasks> {
  /** DEAD jobs, newest first. */
  list<K extends TaskName<Tasks> = TaskName<Tasks>>(
    filter?: DeadLetterFilter<K>,
  ): Promise<TypedJob<Tasks, K>[]>;
  /**
   * Sends DEAD jobs back to PENDING with attempts reset; returns those it sent back. A job whose unique key
   * another live job holds is CANCELED instead (the live job wins): those are in the result's
   * non-enumerable `duplicates`, never among the returned jobs, and the others are retried all the same.
   */
  retry(ids: string | readonly string[], options?: DeadLetterRetryOptions): Promise<RetriedJobs>;
  /** Deletes DEAD jobs matching the filter; returns how many. */
  purge(filter?: DeadLetterFilter<TaskName<Tasks>>): Promise<number>;
}

/**
 * The dead letter queue over `store`; `hooks` (a node's) announce retried jobs and report duplicates; `write`
 * runs its writes (a client's names the grant a refused role lacks, ./write-grant.ts).
 *
 * @example
 * ```ts
 * const dlq = deadLetterQueue(store, undefined);
 * await dlq.retry(["42"]);
 * ```
 */
export function deadLetterQueue<Tasks = PawlTasks>(
  store: JobStore,
  hooks: ClientHooks | undefined,
  write: WriteAction = (_action, fn) => fn(),
): DeadLetterQueue<Tasks> {
  return {
    // The rows are the store's; the task map only says what their payloads and results are.
    list: async <K extends TaskName<Tasks>>(f?: DeadLetterFilter<K>) =>
      (await store.listDead(validateDeadLetterFilter(f))) as TypedJob<Tasks, K>[],
    retry: async (ids, options) => {
      const list = (Array.isArray(ids) ? ids : [ids]).map(validateJobId);
      const steps = options?.steps ?? "keep";
      if (steps !== "keep" && steps !== "discard") {
        throw new ValidationError(
          "INVALID_OPTION",
          `invalid steps ${JSON.stringify(steps)}: use "keep" or "discard"`,
        );
      }
      const jobs = await write("retrying dead jobs", () =>
        steps === "keep"
          ? store.retryDead(list)
          : store.transaction(async (tx) => {
              // The DEAD rows first (a retry of one of them committing meanwhile is waited for, then
              // left alone), then the machine rows before the job rows move back: the lock order of
              // machine-sql.ts.
              const dead = await tx.durable.lockDead(list);
              await tx.durable.restartMachines(dead);
              await tx.durable.discardSteps(dead);
              return tx.retryDead(list);
            }),
      );
      for (const d of jobs.duplicates) {
        hooks?.events.emit("job:duplicate-canceled", { ...d, via: "dlq.retry" });
      }
      await hooks?.afterEnqueue(
        jobs.map((j) => ({ ...j, inserted: true })),
        undefined,
      );
      return jobs;
    },
    purge: async (f) => {
      const filter = validateDeadLetterFilter(f);
      return write("purging dead jobs", () => store.purgeDead(filter));
    },
  };
}
