/**
 * How a cancel made elsewhere reaches an attempt on this node: by reading the store, never by believing a
 * message. A cancel is a store change (the row is CANCELED); a coordinator's cancel hint is only a reason
 * to look, and anyone who can write to the channel can forge one. So both ways in end in the same read:
 *
 * - **the periodic check**: every `recheckMs`, the store is asked which attempts that have run at least
 *   that long were canceled. Without a coordinator this is how the cancel gets there (and it is the safety
 *   net when a hint is lost);
 * - **a hint** ({@link CancelCheck.hinted}): the named job, if this node holds it (running or buffered), is
 *   read at once. Hints that arrive while a read is in flight are batched into the next read.
 *
 * The periodic check runs on a {@link PeriodicTask} loop (the one loop of every background service), so {@link CancelCheck.stop}
 * waits for a read in flight (periodic or hinted) and a stopped node has no statement left running.
 *
 * Only ids the read finds CANCELED reach `onCanceled`. The one other way to tell an attempt is the local
 * `pawl.cancel()`, which wrote CANCELED itself (NodeRuntime.canceledHere).
 */
import type { Clock } from "../core/clock.js";
import { PeriodicTask, type BackgroundService } from "../core/periodic.js";
import type { JobStore } from "../store/job-store.js";
import type { JobRun } from "./attempt/job-run.js";

/** What the check needs from the runtime. */
export interface CancelCheckDeps {
  /** The attempts in flight. */
  runs: ReadonlyMap<string, JobRun>;
  /** Whether a job waits in this node's local buffer (claimed, not started). */
  buffered: (jobId: string) => boolean;
  store: Pick<JobStore, "canceledAmong">;
  clock: Clock;
  /** How long an attempt runs before it is checked, and how often the check runs (at least 100 ms). */
  recheckMs: number;
  /** Tells a running attempt's job task (`CANCEL`); its `cancelRequested` is already set. */
  tellSlot: (slot: number) => void;
  onError: (error: unknown) => void;
}

/** Runs the check periodically until stopped, and on demand for hinted jobs. */
export class CancelCheck implements BackgroundService<string[]> {
  private readonly loop: PeriodicTask<string[]>;
  private stopped = false;
  /** Jobs named by hints, waiting for the next read. */
  private readonly named = new Set<string>();
  /** The read of hinted jobs in flight, if any: hints that arrive meanwhile wait for it, then go together. */
  private reading: Promise<void> | null = null;
  /**
   * Buffered jobs the store holds CANCELED (seen by a store read or written by this node's own cancel):
   * their slot reads the store again before running them, and that read decides.
   */
  private readonly marked = new Set<string>();
  /** Store reads made for hints (tests and the inspector). */
  hintReads = 0;

  constructor(private readonly deps: CancelCheckDeps) {
    const everyMs = Math.max(100, deps.recheckMs);
    this.loop = new PeriodicTask({
      clock: deps.clock,
      run: () => this.runOnce(),
      nextDelay: () => everyMs,
      onError: deps.onError,
    });
  }

  /** Schedules the checks (the first after one interval). */
  start(): void {
    if (this.stopped) return;
    this.loop.start(Math.max(100, this.deps.recheckMs));
  }

  /** Stops the checks and ignores hints from now on; resolves once no read is in flight. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.named.clear();
    await Promise.all([this.loop.stop(), this.reading]);
  }

  /**
   * The store holds this job CANCELED: tell its attempt, or mark it while it waits in a lane (its slot
   * reads the store again before running it). Reached only from a store read or this node's own cancel
   * write (NodeRuntime.canceledHere).
   */
  tell(jobId: string): void {
    const run = this.deps.runs.get(jobId);
    if (run) {
      run.cancelRequested = true;
      this.deps.tellSlot(run.slot);
      return;
    }
    if (this.deps.buffered(jobId)) this.marked.add(jobId);
  }

  /** Whether a job about to start was marked canceled while buffered (and forgets the mark). */
  takeMark(jobId: string): boolean {
    return this.marked.delete(jobId);
  }

  /**
   * A coordinator said this job was canceled: read its row (batched with other hinted jobs) and tell the
   * attempt only if the row is CANCELED. A job this node neither runs nor buffers costs nothing.
   */
  hinted(jobId: string): void {
    if (this.stopped || !this.watches(jobId)) return;
    this.named.add(jobId);
    this.reading ??= this.readNamed();
  }

  /**
   * One pass: the attempts that have run at least `recheckMs`, plus `named` jobs this node still holds, are
   * looked up in one read; returns the ids found canceled (each already told through `onCanceled`).
   */
  async runOnce(named: Iterable<string> = []): Promise<string[]> {
    const { runs, clock, recheckMs, store } = this.deps;
    const now = clock.now();
    const ids = new Set(
      [...runs.values()]
        .filter((r) => this.unresolved(r) && r.startedAt > 0 && now - r.startedAt >= recheckMs)
        .map((r) => r.claimed.id),
    );
    for (const id of named) if (this.watches(id)) ids.add(id);
    if (ids.size === 0) return [];
    const canceled = await store.canceledAmong([...ids]);
    for (const id of canceled) this.tell(id);
    return [...canceled];
  }

  /** Reads the hinted jobs until none is left waiting; one read at a time. */
  private async readNamed(): Promise<void> {
    try {
      while (this.named.size > 0 && !this.stopped) {
        // Let the hints of the same tick join this read.
        await Promise.resolve();
        const ids = [...this.named];
        this.named.clear();
        this.hintReads++;
        await this.runOnce(ids).catch((error: unknown) => this.deps.onError(error));
      }
    } finally {
      this.reading = null;
    }
  }

  /** Whether a cancel of this job could still matter here: held by this node, not told yet. */
  private watches(jobId: string): boolean {
    const run = this.deps.runs.get(jobId);
    return run ? this.unresolved(run) : this.deps.buffered(jobId);
  }

  private unresolved(run: JobRun): boolean {
    return !run.settled && !run.cancelRequested;
  }
}
