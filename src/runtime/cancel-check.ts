/**
 * The periodic check for cancellations of long-running attempts. A cancel made on another node reaches
 * the running attempt through the coordinator's cancel hint when there is one; this check is how it gets
 * there without one (and the safety net when a hint is lost): every `recheckMs`, the store is asked which
 * attempts that have run at least that long were canceled.
 */
import type { Clock } from "../clock.js";
import type { JobStore } from "../store/job-store.js";
import type { JobRun } from "./job-run.js";

/** What the check needs from the runtime. */
export interface CancelCheckDeps {
  /** The attempts in flight. */
  runs: ReadonlyMap<string, JobRun>;
  store: JobStore;
  clock: Clock;
  /** How long an attempt runs before it is checked, and how often the check runs (at least 100 ms). */
  recheckMs: number;
  /** Tells an attempt its job was canceled. */
  onCanceled: (jobId: string) => void;
  onError: (error: unknown) => void;
}

/** Runs the check on a timer until stopped. */
export class CancelCheck {
  private timer: unknown = null;
  private stopped = false;

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

  /** Stops scheduling checks. */
  stop(): void {
    this.stopped = true;
    if (this.timer !== null) this.deps.clock.clearTimeout(this.timer);
  }

  /** One pass: returns the ids found canceled (each already told through `onCanceled`). */
  async runOnce(): Promise<string[]> {
    const { runs, clock, recheckMs, store, onCanceled } = this.deps;
    const now = clock.now();
    const ids = [...runs.values()]
      .filter((r) => !r.settled && !r.cancelRequested && r.startedAt > 0 && now - r.startedAt >= recheckMs)
      .map((r) => r.claimed.id);
    if (ids.length === 0) return [];
    const canceled = await store.canceledAmong(ids);
    for (const id of canceled) onCanceled(id);
    return [...canceled];
  }
}
