/**
 * Signals, the store side: delivering one (`pawl.signal`), what a timed-out wait shares with a signal
 * (waking the nodes, reporting duplicates; the sweep itself is src/cluster/signal-sweeper.ts), and parking an attempt whose handler called `ctx.waitForSignal()` (the `park` of the job context's
 * services). The handler side is in ./job-composition.ts.
 *
 * A parked job is WAITING with `signal_state = 'waiting'`: no node holds it, no slot, no connection, and
 * its attempt was given back. A signal or the timeout makes it runnable (PENDING) with the outcome stored
 * on the row, so whichever node claims it next hands it to the handler through its context.
 */
import { toError, type PawlEventEmitter, type PawlEvents } from "../core/events.js";
import { JobNotFoundError, ValidationError } from "../core/errors.js";
import { serializePayload } from "../input/payload.js";
import { validateJobId } from "../input/job-id.js";
import type { NodeStore } from "../store/job-store.js";
import type { Park, WokenJob } from "../store/composition/signal-sql.js";
import type { JobCompositionRow } from "../store/composition/flow-sql.js";
import type { DuplicateCanceled } from "../store/jobs/return-to-pending.js";
import type { OutcomeSink } from "../store/outcomes/outcome-sink.js";
import { announce, type CompositionDeps } from "./deps.js";
import { JobNotWaitingError } from "./errors.js";
import type { DurableServices, ParkedWork } from "./durable/durable-services.js";
import type { DurablePark } from "../store/durable/durable-store.js";
import type { LeaseToken } from "../store/jobs/lease-sql.js";

/** What {@link signalJob} did. */
export interface SignalResult {
  jobId: string;
  /**
   * PENDING: it will run next; PAUSED: a queue or type pause holds it (it runs once resumed); CANCELED:
   * another live job holds its unique key, so it was canceled instead of woken (see `liveJobId`); STORED
   * (a named signal only): kept for the job, which takes it when it reaches its wait of that name.
   */
  status: "PENDING" | "PAUSED" | "CANCELED" | "STORED";
  /** Set when `status` is CANCELED: the live job that holds the unique key. */
  liveJobId?: string;
}

/** @internal Wakes the nodes for jobs made runnable (a signal, a timed-out wait). */
export async function wake(deps: CompositionDeps, jobs: readonly WokenJob[]): Promise<void> {
  const now = new Date();
  await announce(
    deps,
    jobs.filter((j) => j.status === "PENDING").map((j) => ({ ...j, scheduledTime: now })),
    undefined,
    true,
  );
}

/** @internal Reports jobs canceled instead of woken because another live job holds their unique key. */
export function reportDuplicates(
  deps: CompositionDeps,
  duplicates: readonly DuplicateCanceled[],
  via: "signal" | "signal-timeout",
): void {
  for (const d of duplicates) deps.events?.emit("job:duplicate-canceled", { ...d, via });
}

/**
 * Delivers `payload` to a job parked by `ctx.waitForSignal()`: it becomes PENDING, due now, and its next
 * run (on any node) receives the payload. The local poller is woken and a hint goes to the other nodes.
 * When another live job took the job's unique key while it was parked, the live job wins: the parked job is
 * CANCELED instead (status `CANCELED`, with `liveJobId`) and the signal is dropped.
 *
 * @throws JobNotFoundError when no job has this id; JobNotWaitingError (code `NOT_WAITING`) when the
 *   job is not parked for a signal (finished, not at its wait yet, or waiting for its flow).
 */
export async function signalJob(
  deps: CompositionDeps,
  id: string,
  payload: unknown,
  options?: SignalOptions,
): Promise<SignalResult> {
  if (options !== undefined && (typeof options !== "object" || options === null)) {
    throw new ValidationError("INVALID_OPTION", "signal options must be an object");
  }
  if (options?.name !== undefined) return signalNamed(deps, id, payload, options.name);
  const jobId = validateJobId(id);
  const json = serializePayload(payload === undefined ? null : payload, deps.config.maxPayloadBytes);
  const result = await deps.store.deliverSignal(jobId, json);
  if ("refused" in result) {
    if (result.refused === null) throw new JobNotFoundError(jobId);
    throw new JobNotWaitingError(jobId, result.refused);
  }
  if ("duplicate" in result) {
    reportDuplicates(deps, [result.duplicate], "signal");
    return { jobId, status: "CANCELED", liveJobId: result.duplicate.liveJobId };
  }
  const { woken } = result;
  deps.events?.emit("job:signaled", { jobId, type: woken.type, queue: woken.queue, status: woken.status });
  await wake(deps, [woken]);
  return { jobId, status: woken.status };
}

/** Options of `pawl.signal()`. */
export interface SignalOptions {
  /**
   * The name of a durable wait (`ctx.waitForSignal(name)`, docs/durable.md). A named signal is kept for a
   * live job whether or not it waits yet, and taken by its wait of that name (the oldest first).
   */
  name?: string;
}

/**
 * Stores a named signal and wakes the job if it is parked on a wait of that name (docs/durable.md). Never
 * refused for being early: only a finished job (or no job) refuses it, and then nothing is stored.
 */
async function signalNamed(
  deps: CompositionDeps,
  id: string,
  payload: unknown,
  name: unknown,
): Promise<SignalResult> {
  const jobId = validateJobId(id);
  if (typeof name !== "string" || name.length === 0 || name.length > 200) {
    throw new ValidationError(
      "INVALID_OPTION",
      `invalid signal name ${JSON.stringify(name)}: use a string of 1 to 200 characters`,
    );
  }
  const json = serializePayload(payload === undefined ? null : payload, deps.config.maxPayloadBytes);
  const result = await deps.store.transaction((tx) => tx.durable.sendNamedSignal(jobId, name, json));
  if ("refused" in result) {
    if (result.refused === null) throw new JobNotFoundError(jobId);
    throw new JobNotWaitingError(jobId, result.refused);
  }
  const woken = result.stored.woken;
  if (!woken || (woken.status !== "PENDING" && woken.status !== "PAUSED")) return { jobId, status: "STORED" };
  const status = woken.status;
  deps.events?.emit("job:signaled", { jobId, type: woken.type, queue: woken.queue, status });
  await wake(deps, [{ ...woken, status }]);
  return { jobId, status };
}

/**
 * What a job's context uses to reach the store: its composition row (signal and flow), and the park write
 * for an attempt that ended with `waitForSignal()`. Supplied by the node runtime; absent elsewhere.
 */
export interface JobContextServices {
  /** Reads the job's signal state and flow view (absent: none, as under pawl/testing). */
  read?(jobId: string): Promise<JobCompositionRow | null>;
  /** Parks the attempt (WAITING); `done` learns whether the row was still held by this node. */
  park?(item: Park, done: (accepted: boolean) => void): void;
  /** Stores a validated progress value (throttled by the node's writer) and emits `job:progress`. */
  progress?(event: PawlEvents["job:progress"], progressJson: string): void;
  /** The durable handlers' store and spawn (docs/durable.md); absent where nothing can record steps. */
  durable?: DurableServices;
  /**
   * Parks the attempt on a durable wait; `done` learns whether the row was still held by this node. `lease`
   * guards the hand-back when the park fails (see {@link Park}'s `lease`).
   */
  parkDurable?(
    park: DurablePark,
    job: ParkedWork,
    done: (accepted: boolean) => void,
    lease?: LeaseToken,
  ): void;
}

/**
 * The node's {@link JobContextServices}; `parking` holds the ids of parks being written. A park that cannot be written (the database is down) falls back
 * to handing the job back through the outcome writer, which retries until it lands: the job runs again and
 * its handler parks it again, so it is neither lost nor held forever.
 */
export function contextServices(
  store: NodeStore,
  nodeId: string,
  writer: OutcomeSink,
  events: PawlEventEmitter,
  parking?: Set<string>,
  durable?: DurableServices,
): JobContextServices {
  return {
    ...(durable
      ? {
          durable,
          parkDurable: (
            park: DurablePark,
            job: ParkedWork,
            done: (accepted: boolean) => void,
            lease?: LeaseToken,
          ) => {
            // Until the park lands the row is still leased to this node: the lease audit must see it as held.
            parking?.add(park.id);
            durable.park(nodeId, park, job).then(
              (accepted) => {
                parking?.delete(park.id);
                done(accepted);
              },
              (error: unknown) => {
                parking?.delete(park.id);
                // As for a signal park: handed back under the attempt's lease (so a park whose reply was lost
                // after it committed is not undone), it runs again and parks again (its steps are kept).
                events.emit("error", { where: "park for a durable wait", error: toError(error) });
                writer.reschedule({ id: park.id, delayMs: 1000, ...(lease ? { lease } : {}) }, () => {});
                // If the park did commit, the hand-back is refused, and only the park's re-check can wake a
                // wait that ended meanwhile: it runs again until it answers.
                durable.recheckLater(park.id, job);
              },
            );
          },
        }
      : {}),
    read: (jobId) => store.readComposition(jobId),
    park: (item, done) => {
      // Until the park lands the row is still leased to this node: the lease audit must see it as held.
      parking?.add(item.id);
      store.park(nodeId, [item]).then(
        (ids) => {
          parking?.delete(item.id);
          done(ids.has(item.id));
        },
        (error: unknown) => {
          parking?.delete(item.id);
          events.emit("error", { where: "park for signal", error: toError(error) });
          writer.reschedule(
            { id: item.id, delayMs: 1000, ...(item.lease ? { lease: item.lease } : {}) },
            () => {},
          );
        },
      );
    },
    progress: (event, progressJson) => {
      writer.progress?.({ id: event.jobId, progressJson });
      events.emit("job:progress", event);
    },
  };
}
