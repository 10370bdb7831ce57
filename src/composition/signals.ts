/**
 * Signals, the store side: delivering one (`pawl.signal`), timing waits out (the {@link SignalSweeper}),
 * and parking an attempt whose handler called `ctx.waitForSignal()` (the `park` of the job context's
 * services). The handler side is in ./job-composition.ts.
 *
 * A parked job is WAITING with `signal_state = 'waiting'`: no node holds it, no slot, no connection, and
 * its attempt was given back. A signal or the timeout makes it runnable (PENDING) with the outcome stored
 * on the row, so whichever node claims it next hands it to the handler through its context.
 */
import type { Clock } from "../clock.js";
import { toError, type PawlEventEmitter, type PawlEvents } from "../events.js";
import { JobNotFoundError } from "../errors.js";
import { serializePayload } from "../payload.js";
import { validateJobId } from "../store/job-id.js";
import type { NodeStore } from "../store/job-store.js";
import type { Park, WokenJob } from "../store/signal-sql.js";
import type { JobCompositionRow } from "../store/flow-sql.js";
import type { DuplicateCanceled } from "../store/return-to-pending.js";
import type { OutcomeSink } from "../store/outcome-sink.js";
import { announce, type CompositionDeps } from "./deps.js";
import { JobNotWaitingError } from "./errors.js";

/** What {@link signalJob} did. */
export interface SignalResult {
  jobId: string;
  /**
   * PENDING: it will run next; PAUSED: a queue or type pause holds it (it runs once resumed); CANCELED:
   * another live job holds its unique key, so it was canceled instead of woken (see `liveJobId`).
   */
  status: "PENDING" | "PAUSED" | "CANCELED";
  /** Set when `status` is CANCELED: the live job that holds the unique key. */
  liveJobId?: string;
}

async function wake(deps: CompositionDeps, jobs: readonly WokenJob[]): Promise<void> {
  const now = new Date();
  await announce(
    deps,
    jobs.filter((j) => j.status === "PENDING").map((j) => ({ ...j, scheduledTime: now })),
    undefined,
    true,
  );
}

function reportDuplicates(
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
export async function signalJob(deps: CompositionDeps, id: string, payload: unknown): Promise<SignalResult> {
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

/** What one sweep did. */
export interface SweepResult {
  /** Jobs whose wait timed out (made runnable with no payload). */
  timedOut: WokenJob[];
  /** Jobs whose wait timed out but were CANCELED instead: another live job holds their unique key. */
  duplicates: DuplicateCanceled[];
  /** Milliseconds until the next known deadline, or null when no parked job has one. */
  nextDeadlineMs: number | null;
}

/** Options of {@link SignalSweeper}. */
export interface SignalSweeperOptions {
  deps: CompositionDeps;
  clock: Clock;
  /** The longest pause between sweeps (ms): a wait parked by another node is seen within it. Default 1000. */
  intervalMs?: number;
  /** Jobs timed out per statement. Default 1000. */
  batch?: number;
}

/**
 * Times out parked jobs whose deadline passed. Every started node runs one: the statement skips rows
 * another node's sweep holds, so they never do the same row twice, and a sweep that finds nothing costs
 * one probe of an index that holds only parked rows. It sleeps until the next known deadline, at most
 * `intervalMs`, so a timeout fires within about `intervalMs` of its deadline at worst.
 */
export class SignalSweeper {
  private timer: unknown = null;
  private stopped = true;
  private running: Promise<unknown> | null = null;
  private readonly intervalMs: number;
  private readonly batch: number;

  constructor(private readonly o: SignalSweeperOptions) {
    this.intervalMs = o.intervalMs ?? 1000;
    this.batch = o.batch ?? 1000;
  }

  /** One sweep: time out what is due (in batches) and read the next deadline. */
  async runOnce(): Promise<SweepResult> {
    const { store } = this.o.deps;
    const timedOut: WokenJob[] = [];
    const duplicates: DuplicateCanceled[] = [];
    for (;;) {
      const done = await store.timeOutWaits(this.batch);
      timedOut.push(...done.woken);
      duplicates.push(...done.duplicates);
      if (done.woken.length + done.duplicates.length < this.batch) break;
    }
    reportDuplicates(this.o.deps, duplicates, "signal-timeout");
    for (const j of timedOut) {
      this.o.deps.events?.emit("job:signal-timeout", {
        jobId: j.id,
        type: j.type,
        queue: j.queue,
        status: j.status,
      });
    }
    if (timedOut.length > 0) await wake(this.o.deps, timedOut);
    return { timedOut, duplicates, nextDeadlineMs: await store.nextWaitDeadlineMs() };
  }

  /** Starts the loop (first sweep at once). */
  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule(0);
  }

  /** Stops the loop and waits for a sweep in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) this.o.clock.clearTimeout(this.timer);
    this.timer = null;
    await this.running?.catch(() => {});
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = this.o.clock.setTimeout(() => {
      this.timer = null;
      const run = this.runOnce();
      this.running = run;
      run.then(
        (r) => {
          const next =
            r.nextDeadlineMs === null ? this.intervalMs : Math.max(10, Math.ceil(r.nextDeadlineMs));
          this.schedule(Math.min(this.intervalMs, next));
        },
        (error: unknown) => {
          this.o.deps.events?.emit("error", { where: "signal sweep", error: toError(error) });
          this.schedule(this.intervalMs);
        },
      );
    }, ms);
  }
}

/**
 * What a job's context uses to reach the store: its composition row (signal and flow), and the park write
 * for an attempt that ended with `waitForSignal()`. Supplied by the node runtime; absent elsewhere.
 */
export interface JobContextServices {
  /** Reads the job's signal state and flow view. */
  read(jobId: string): Promise<JobCompositionRow | null>;
  /** Parks the attempt (WAITING); `done` learns whether the row was still held by this node. */
  park(item: Park, done: (accepted: boolean) => void): void;
  /** Stores a validated progress value (throttled by the node's writer) and emits `job:progress`. */
  progress?(event: PawlEvents["job:progress"], progressJson: string): void;
}

/**
 * The node's {@link JobContextServices}. A park that cannot be written (the database is down) falls back
 * to handing the job back through the outcome writer, which retries until it lands: the job runs again and
 * its handler parks it again, so it is neither lost nor held forever.
 */
export function contextServices(
  store: NodeStore,
  nodeId: string,
  writer: OutcomeSink,
  events: PawlEventEmitter,
): JobContextServices {
  return {
    read: (jobId) => store.readComposition(jobId),
    park: (item, done) => {
      store.park(nodeId, [item]).then(
        (ids) => done(ids.has(item.id)),
        (error: unknown) => {
          events.emit("error", { where: "park for signal", error: toError(error) });
          writer.reschedule({ id: item.id, delayMs: 1000 }, () => {});
        },
      );
    },
    progress: (event, progressJson) => {
      writer.progress?.({ id: event.jobId, progressJson });
      events.emit("job:progress", event);
    },
  };
}
