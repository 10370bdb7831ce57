/**
 * Times out parked signal waits (docs/composition.md#signals). Every started node runs one: the statement
 * skips rows another node's sweep holds, so no two sweeps do the same row, and a sweep that finds nothing
 * costs one probe of an index that holds only parked rows. Like every background service it is a
 * `runOnce()` that returns what it did, looped by a {@link PeriodicTask}; the wait between passes is the
 * pure `signalSweepDelayMs`: until the earliest deadline of any parked job (each pass reads it), at most
 * `idleIntervalMs`, so an idle node pays two statements per 10 s whether no job is parked or 100,000 sleep
 * for days (durable sleeps park here too, docs/durable.md). A job this node parks with a deadline
 * (`job:waiting`) brings its next pass forward to that deadline; so only a deadline parked by a node that
 * died before any other node's next pass can fire up to `idleIntervalMs` late.
 */
import type { Clock } from "../core/clock.js";
import { toError } from "../core/events.js";
import { PeriodicTask, type BackgroundService } from "../core/periodic.js";
import { signalSweepDelayMs } from "../logic/cluster-logic.js";
import type { WokenJob } from "../store/composition/signal-sql.js";
import type { DuplicateCanceled } from "../store/jobs/return-to-pending.js";
import type { CompositionDeps } from "../composition/deps.js";
import { reportDuplicates, wake } from "../composition/signals.js";

/** What one sweep did. */
export interface SignalSweepResult {
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
  /** The pause after a failed sweep, and the shortest pause while no deadline is near (ms). Default 1000. */
  intervalMs?: number;
  /** Jobs timed out per statement. Default 1000. */
  batch?: number;
  /** The pause while no parked job has a deadline (ms). Default 10000. */
  idleIntervalMs?: number;
}

/**
 * The signal-timeout sweep of one node.
 *
 * @example
 * ```ts
 * const sweeper = new SignalSweeper({ deps, clock: systemClock });
 * sweeper.start(); // first pass at once
 * await sweeper.stop();
 * ```
 */
export class SignalSweeper implements BackgroundService<SignalSweepResult> {
  private readonly batch: number;
  private readonly loop: PeriodicTask<SignalSweepResult>;
  private offWaiting: (() => void) | null = null;

  constructor(private readonly o: SignalSweeperOptions) {
    const intervalMs = o.intervalMs ?? 1000;
    const idleIntervalMs = o.idleIntervalMs ?? 10_000;
    this.batch = o.batch ?? 1000;
    this.loop = new PeriodicTask<SignalSweepResult>({
      clock: o.clock,
      run: () => this.runOnce(),
      nextDelay: (outcome) =>
        signalSweepDelayMs(
          outcome.ok ? outcome.result.nextDeadlineMs : undefined,
          intervalMs,
          idleIntervalMs,
        ),
      onError: (error) => o.deps.events?.emit("error", { where: "signal sweep", error: toError(error) }),
    });
  }

  /** One sweep: time out what is due (in batches) and read the next deadline. */
  async runOnce(): Promise<SignalSweepResult> {
    const { deps } = this.o;
    const timedOut: WokenJob[] = [];
    const duplicates: DuplicateCanceled[] = [];
    for (;;) {
      const done = await deps.store.timeOutWaits(this.batch);
      timedOut.push(...done.woken);
      duplicates.push(...done.duplicates);
      if (done.woken.length + done.duplicates.length < this.batch) break;
    }
    reportDuplicates(deps, duplicates, "signal-timeout");
    for (const j of timedOut) {
      deps.events?.emit("job:signal-timeout", {
        jobId: j.id,
        type: j.type,
        queue: j.queue,
        status: j.status,
      });
    }
    if (timedOut.length > 0) await wake(deps, timedOut);
    return { timedOut, duplicates, nextDeadlineMs: await deps.store.nextWaitDeadlineMs() };
  }

  /** Starts the loop (first sweep at once) and listens for this node's parked jobs. Idempotent. */
  start(): void {
    this.loop.start(0);
    if (this.offWaiting === null && this.o.deps.events) {
      this.offWaiting = this.o.deps.events.on("job:waiting", ({ timeoutMs }) => {
        if (timeoutMs !== null) this.loop.wakeWithin(timeoutMs);
      });
    }
  }

  /** Stops the loop and waits for a sweep in progress. */
  async stop(): Promise<void> {
    this.offWaiting?.();
    this.offWaiting = null;
    await this.loop.stop();
  }
}
