/**
 * drain(): runs what is due, once. Durable handlers run with their steps recorded, park on their waits,
 * and a `now` ahead of the database's time is their clock: sleeps and timeouts due by then end. The due PENDING jobs of the chosen types are claimed through the real
 * store (the runtime's claim statement, in its priority and age order) under a node id of this drain,
 * then each is run by {@link runAttempt} and its outcome written through the store. Everything is claimed
 * before anything runs, so a job that a handler enqueues, or that a failure puts back for a retry, is not
 * run again by the same drain: call drain() again for the next round.
 *
 * Jobs with a concurrency key are claimed by the keyed claim, the one a node uses, which enforces each
 * key's limit: a drain takes at most a key's limit of its jobs (they stay leased to the drain until they
 * run, so they count as running, as on a node), and the key's other jobs wait for the next drain(). The
 * drain runs one job at a time, so it never has more of a key running than it claimed.
 */
import { randomBytes } from "node:crypto";
import { PawlError } from "../core/errors.js";
import type { Pawl } from "../api/pawl.js";
import { sortClaimOrder, type ClaimArgs, type ClaimedJob } from "../store/claim/claim-jobs.js";
import type { JobLifecycleStore } from "../store/job-store.js";
import { registeredTypes } from "./internals.js";
import type { PawlTasks, TaskName, UntypedTasks } from "../input/task-map.js";
import { runAttempt, type TypedAttemptResult } from "./run-attempt.js";

/** Options of {@link drain}. */
export interface DrainOptions<Tasks = PawlTasks> {
  /** Only jobs of these types (each must have a handler on this Pawl). Default: every registered type. */
  types?: readonly TaskName<Tasks>[];
  /**
   * Run what is due at this time: a future time also runs jobs scheduled until then (delayed jobs,
   * retries, snoozes). Default: the database's now().
   */
  now?: Date;
}

/** What {@link drain} did (its attempts typed by the task map of the Pawl it drained). */
export interface DrainResult<Tasks = PawlTasks> {
  /** Attempts that succeeded. */
  succeeded: number;
  /** Attempts that failed: `retried + dead`. */
  failed: number;
  /** Failed attempts with attempts left: the jobs are PENDING again, after their backoff. */
  retried: number;
  /** Jobs that went DEAD (attempts exhausted, non-retryable error, Discard, invalid payload). */
  dead: number;
  /** Attempts that threw a Snooze: the jobs are PENDING again, the attempt not counted. */
  snoozed: number;
  /** Jobs canceled while they ran (their outcome was discarded). */
  canceled: number;
  /** Every attempt, in the order run. */
  jobs: TypedAttemptResult<Tasks>[];
}

const claimBatch = 500;

/**
 * Runs the due jobs of `pawl`'s registered types once, and reports what happened.
 *
 * @throws PawlError `INVALID_STATE` when a type in `types` has no handler on this Pawl.
 *
 * @example
 * ```ts
 * import { drain } from "pawl/testing";
 *
 * await pawl.enqueue("cleanup", {});
 * expect(await drain(pawl)).toMatchObject({ succeeded: 1, failed: 0 });
 *
 * // A retry is due later: run what would be due in an hour.
 * await drain(pawl, { types: ["report.build"], now: new Date(Date.now() + 3_600_000) });
 * ```
 */
export async function drain<Tasks extends object>(
  pawl: Pawl<Tasks>,
  options: DrainOptions<Tasks> = {},
): Promise<DrainResult<Tasks>> {
  const registered = registeredTypes(pawl);
  const types = options.types ? [...options.types] : [...registered.keys()];
  for (const t of types) {
    if (!registered.has(t)) {
      throw new PawlError(
        "INVALID_STATE",
        `drain: no handler is registered for ${JSON.stringify(t)} on this pawl`,
      );
    }
  }
  const result: DrainResult<UntypedTasks> = {
    succeeded: 0,
    failed: 0,
    retried: 0,
    dead: 0,
    snoozed: 0,
    canceled: 0,
    jobs: [],
  };
  // The attempts are the runtime's, untyped; the task map only says what their results are.
  if (types.length === 0) return result as unknown as DrainResult<Tasks>;
  const nodeId = `pawl-testing-drain-${randomBytes(4).toString("hex")}`;
  const now = options.now ?? (await pawl.store.databaseTime());
  // Durable handlers (docs/durable.md): a time ahead makes the sleeps and wait timeouts due by then
  // runnable first, so a test skips a three-day sleep with `now`.
  if (options.now) await pawl.store.durable.wakeDue(options.now);

  const args = {
    nodeId,
    limit: claimBatch,
    types,
    boostIntervalMs: pawl.config.boostIntervalMs,
    withPayload: true,
    now,
  };
  const claimed: ClaimedJob[] = [];
  for (;;) {
    const batch = await pawl.store.claim(args);
    claimed.push(...batch);
    if (batch.length < claimBatch) break;
  }
  claimed.push(...(await claimKeyed(pawl.store, args)));
  // One order for both claims: effective priority, then scheduled time, then id.
  sortClaimOrder(claimed);

  let next = 0;
  try {
    for (; next < claimed.length; next++) {
      const job = claimed[next] as ClaimedJob;
      const attempt = await runAttempt(pawl, job, registered.get(job.type)!, nodeId, options.now);
      result.jobs.push(attempt);
      if (attempt.status === "succeeded") result.succeeded++;
      else if (attempt.status === "retried") result.retried++;
      else if (attempt.status === "dead") result.dead++;
      else if (attempt.status === "snoozed") result.snoozed++;
      else if (attempt.status === "canceled") result.canceled++;
    }
  } finally {
    // A failed write stops the drain: hand back what did not run, attempt not counted.
    const rest = claimed.slice(next + 1).map((j) => ({ id: j.id, delayMs: 0 }));
    if (next < claimed.length && rest.length > 0) await pawl.store.reschedule(nodeId, rest).catch(() => {});
  }
  result.failed = result.retried + result.dead;
  return result as unknown as DrainResult<Tasks>;
}

/** Keyed claims one drain sends at most (a guard: the loop below ends on its own). */
const maxKeyedClaims = 10_000;

/**
 * Claims the due keyed jobs through the store's keyed claim. Each claim reads a window of keys after the
 * key the previous one stopped at, so the loop goes round the keys, and ends when the keyed claim says no
 * keyed row is PENDING, or when it has come round to a window it already saw with nothing claimed since
 * (every key left is at its limit, or has nothing due of these types).
 */
async function claimKeyed(store: JobLifecycleStore, args: ClaimArgs): Promise<ClaimedJob[]> {
  if (!store.claimKeyed) return [];
  const out: ClaimedJob[] = [];
  const emptySince = new Set<string>();
  let afterKey: string | null = null;
  for (let i = 0; i < maxKeyedClaims; i++) {
    const r = await store.claimKeyed({ ...args, afterKey });
    out.push(...r.jobs);
    if (r.nextKey === null) break;
    if (r.jobs.length > 0) emptySince.clear();
    else if (emptySince.has(r.nextKey)) break;
    else emptySince.add(r.nextKey);
    afterKey = r.nextKey;
  }
  return out;
}
