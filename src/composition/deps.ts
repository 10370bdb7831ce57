/**
 * What the composition operations need from a pawl instance, and two helpers they share: running a
 * multi-statement operation in one transaction (the caller's, or one of its own), and announcing jobs that
 * just became runnable through the client's `afterEnqueue` hook (local wakeup, and a hint to other nodes
 * when the work is due now), exactly as an enqueue would.
 */
import type { ResolvedConfig } from "../input/config.js";
import type { PawlEventEmitter } from "../core/events.js";
import type { ClientHooks } from "./client-hooks.js";
import type { EnqueuedJob } from "../store/jobs/enqueue-jobs.js";
import type { Job } from "../store/jobs/job-row.js";
import type { JobStore } from "../store/job-store.js";
import type { Queryable } from "../db/sql.js";
import type { PawlTracing } from "../tracing/pawl-tracing.js";

/** The slice of a PawlClient the composition operations use. */
export interface CompositionDeps {
  store: JobStore;
  config: ResolvedConfig;
  hooks: ClientHooks | undefined;
  /** The node's event stream (a started-or-not Pawl); absent on a bare PawlClient. */
  events: PawlEventEmitter | undefined;
  /** Traces the flow's enqueues (src/tracing); null or absent: untraced. */
  tracing?: PawlTracing | null;
}

/**
 * Runs `fn` in a transaction: the caller's when `client` is given (nothing is committed here), else one of
 * the store's own, committed when `fn` resolves and rolled back when it throws.
 */
export function inTransaction<T>(
  store: JobStore,
  client: Queryable | undefined,
  fn: (tx: JobStore) => Promise<T>,
): Promise<T> {
  return (client ? store.withClient(client) : store).transaction(fn);
}

/** The fields of a job that the `afterEnqueue` hook reads, for announcing rows nobody read back. */
export interface AnnouncedWork {
  type: string;
  queue: string;
  priority: number;
  /** When it becomes due (a time in the past or now announces it as due now). */
  scheduledTime: Date;
}

/** A job-shaped record for {@link AnnouncedWork} (the hook only reads status, type, priority and due time). */
function asEnqueued(w: AnnouncedWork, id: string): EnqueuedJob {
  const job: Job = {
    id,
    type: w.type,
    queue: w.queue,
    payload: null,
    priority: w.priority,
    status: "PENDING",
    scheduledTime: w.scheduledTime,
    attempts: 0,
    maxAttempts: 1,
    timeoutMs: null,
    pickedBy: null,
    pickedAt: null,
    uniqueKey: null,
    errors: [],
    lastError: null,
    result: null,
    cancelReason: null,
    createdAt: w.scheduledTime,
    updatedAt: w.scheduledTime,
    finishedAt: null,
  };
  return { ...job, inserted: true };
}

/**
 * Announces runnable work as single immediate enqueues: one call of the hook per distinct job type, each
 * with one job, so every call wakes this node's poller and publishes a hint (targeted at the type) to the
 * other nodes when the work is due. A batch of 100,000 children is one announcement. With `client`, the
 * hint goes out in the caller's transaction when the coordinator supports it (delivered at commit).
 * `released`: the jobs existed before (signal, resume), so this node's claimer looks below its floors; a
 * bare client (no hooks) sends a hint for them from SQL on the postgres wakeup channel.
 */
export async function announce(
  deps: CompositionDeps,
  work: readonly (AnnouncedWork & { id: string })[],
  client: Queryable | undefined,
  released = false,
): Promise<void> {
  if (released && work.length > 0) deps.hooks?.afterRelease?.();
  const hooks = deps.hooks;
  const byType = new Map<string, AnnouncedWork & { id: string }>();
  for (const w of work) {
    const had = byType.get(w.type);
    if (!had || w.priority > had.priority) byType.set(w.type, w);
  }
  if (!hooks) {
    // A bare client publishes nothing, and new rows are found by the nodes' polls; rows released under
    // their old ids would wait for a full pass (up to a minute), so they get a hint from SQL instead.
    if (released) await notifyReleasedFromSql(deps, [...byType.values()], client);
    return;
  }
  // Called as a method: the hooks may be a class instance that needs its `this`.
  for (const w of byType.values()) await hooks.afterEnqueue([asEnqueued(w, w.id)], client, { released });
}

/**
 * The bare client's hint for released rows (src/store/jobs/released-notify-sql.ts). A hint only cuts
 * latency: its failure after the rows committed must not fail the operation, so it is swallowed.
 */
async function notifyReleasedFromSql(
  deps: CompositionDeps,
  work: readonly AnnouncedWork[],
  client: Queryable | undefined,
): Promise<void> {
  if (work.length === 0) return;
  const store = client ? deps.store.withClient(client) : deps.store;
  try {
    await store.durable.notifyReleased(work.map((w) => ({ type: w.type, priority: w.priority })));
  } catch {
    // Nodes find the rows at their next full pass, as before.
  }
}
