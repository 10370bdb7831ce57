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
 * Only ids the read finds CANCELED reach `onCanceled`. The one other way to tell an attempt is the local
 * `pawl.cancel()`, which wrote CANCELED itself (NodeRuntime.canceledHere).
 */
import type { Clock } from "../clock.js";
import type { JobStore } from "../store/job-store.js";
import type { JobRun } from "./job-run.js";

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
  /** Tells an attempt (or the buffer) that the store holds its job CANCELED. */
  onCanceled: (jobId: string) => void;
  onError: (error: unknown) => void;
}

/** Runs the check on a timer until stopped, and on demand for hinted jobs. */
export class CancelCheck {
  private timer: unknown = null;
  private stopped = false;
  /** Jobs named by hints, waiting for the next read. */
  private readonly named = new Set<string>();
  /** The read of hinted jobs in flight, if any: hints that arrive meanwhile wait for it, then go together. */
  private reading: Promise<void> | null = null;
  /** Store reads made for hints (tests and the inspector). */
  hintReads = 0;

  constructor(private readonly deps: CancelCheckDeps) {}

  /** Schedules the checks. */
  start(): void {
    if (this.stopped) return;
    this.timer = this.deps.clock.setTimeout(
      () => {
        this.runOnce()
          .catch((error: unknown) => this.deps.onError(error))
          .finally(() => this.start());
      },
      Math.max(100, this.deps.recheckMs),
    );
  }

  /** Stops scheduling checks; hints are ignored from now on. */
  stop(): void {
    this.stopped = true;
    this.named.clear();
    if (this.timer !== null) this.deps.clock.clearTimeout(this.timer);
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
    const { runs, clock, recheckMs, store, onCanceled } = this.deps;
    const now = clock.now();
    const ids = new Set(
      [...runs.values()]
        .filter((r) => this.unresolved(r) && r.startedAt > 0 && now - r.startedAt >= recheckMs)
        .map((r) => r.claimed.id),
    );
    for (const id of named) if (this.watches(id)) ids.add(id);
    if (ids.size === 0) return [];
    const canceled = await store.canceledAmong([...ids]);
    for (const id of canceled) onCanceled(id);
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
