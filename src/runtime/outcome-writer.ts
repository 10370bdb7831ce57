/**
 * Writes attempt outcomes in batches. Outcomes queue up for `flushMs` (or until a batch is large) and
 * go to the store as one statement per kind; each outcome's callback learns whether its row was still
 * held by this node. A failed write (database restart) is retried with backoff and nothing is dropped:
 * until it lands the rows stay RUNNING under this node, which is what orphan recovery expects anyway.
 */
import type { Clock, TimerHandle } from "../clock.js";
import type { Logger } from "../logger.js";
import type { JobStore } from "../store/job-store.js";
import type { Completion, Death, Reschedule, Retry } from "../store/finish-jobs.js";
import { backoffDelayMs } from "../logic/backoff.js";

type Done = (accepted: boolean) => void;
interface Queues {
  complete: { item: Completion; done: Done }[];
  retry: { item: Retry; done: Done }[];
  kill: { item: Death; done: Done }[];
  reschedule: { item: Reschedule; done: Done }[];
}
const empty = (): Queues => ({ complete: [], retry: [], kill: [], reschedule: [] });

/** Where attempt outcomes go; each `done` learns whether the row was still held by the node. */
export interface OutcomeSink {
  complete(item: Completion, done: (accepted: boolean) => void): void;
  retry(item: Retry, done: (accepted: boolean) => void): void;
  kill(item: Death, done: (accepted: boolean) => void): void;
  reschedule(item: Reschedule, done: (accepted: boolean) => void): void;
}

/** Batches outcome writes for one node. */
export class OutcomeWriter implements OutcomeSink {
  private queues: Queues = empty();
  private size = 0;
  private timer: TimerHandle | null = null;
  private flushing: Promise<void> | null = null;
  private failures = 0;
  private readonly idle: (() => void)[] = [];

  constructor(
    private readonly store: JobStore,
    private readonly nodeId: string,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly flushMs: number,
    private readonly onError: (error: unknown) => void,
    private readonly maxBatch = 1000,
  ) {}

  /** Outcomes waiting to be written. */
  get pending(): number {
    return this.size;
  }

  complete(item: Completion, done: Done): void {
    this.queues.complete.push({ item, done });
    this.added();
  }

  retry(item: Retry, done: Done): void {
    this.queues.retry.push({ item, done });
    this.added();
  }

  kill(item: Death, done: Done): void {
    this.queues.kill.push({ item, done });
    this.added();
  }

  reschedule(item: Reschedule, done: Done): void {
    this.queues.reschedule.push({ item, done });
    this.added();
  }

  /** Resolves once everything queued so far has been written. */
  async drain(): Promise<void> {
    if (this.size === 0 && !this.flushing) return;
    await new Promise<void>((resolve) => {
      this.idle.push(resolve);
      this.schedule(0);
    });
  }

  private added(): void {
    this.size++;
    this.schedule(this.size >= this.maxBatch ? 0 : this.flushMs);
  }

  private schedule(ms: number): void {
    if (this.flushing) return; // the running flush picks up what was added meanwhile
    if (this.timer !== null) {
      if (ms > 0) return;
      this.clock.clearTimeout(this.timer);
    }
    this.timer = this.clock.setTimeout(() => {
      this.timer = null;
      this.flushing = this.flush().finally(() => {
        this.flushing = null;
        if (this.size > 0) this.schedule(this.failures > 0 ? this.retryDelay() : 0);
        else for (const resolve of this.idle.splice(0)) resolve();
      });
    }, ms);
  }

  private retryDelay(): number {
    return backoffDelayMs(this.failures, { baseMs: 100, factor: 2, maxMs: 5000, jitter: 0 });
  }

  private async flush(): Promise<void> {
    const q = this.queues;
    this.queues = empty();
    this.size = 0;
    // Each kind lands or fails on its own: re-running a kind that already landed would find its rows
    // no longer RUNNING and report them lost.
    const results = await Promise.allSettled([
      this.store.complete(
        this.nodeId,
        q.complete.map((e) => e.item),
      ),
      this.store.retry(
        this.nodeId,
        q.retry.map((e) => e.item),
      ),
      this.store.kill(
        this.nodeId,
        q.kill.map((e) => e.item),
      ),
      this.store.reschedule(
        this.nodeId,
        q.reschedule.map((e) => e.item),
      ),
    ]);
    const kinds = ["complete", "retry", "kill", "reschedule"] as const;
    let failed: unknown = null;
    kinds.forEach((kind, i) => {
      const r = results[i] as PromiseSettledResult<Set<string>>;
      const entries = q[kind] as { item: { id: string }; done: Done }[];
      if (r.status === "fulfilled") {
        for (const e of entries) e.done(r.value.has(e.item.id));
      } else {
        failed = r.reason;
        (this.queues[kind] as typeof entries).unshift(...entries);
        this.size += entries.length;
      }
    });
    if (failed === null) {
      this.failures = 0;
      return;
    }
    this.failures++;
    if (this.failures === 1)
      this.logger.warn("writing job outcomes failed; retrying", { error: String(failed) });
    this.onError(failed);
  }
}
