/**
 * An outcome sink that writes each outcome at once, one statement per outcome, and lets the
 * caller await the writes and see their errors. The runtime batches outcomes and retries failed writes
 * forever (a node must not drop work); a test helper must instead finish before it returns and fail
 * loudly, so inline() and drain() hand this writer to the runtime's own finishAttempt().
 */
import type { OutcomeSink } from "../store/outcomes/outcome-sink.js";
import type { JobStore } from "../store/job-store.js";
import type { Completion, Death, Reschedule, Retry } from "../store/outcomes/finish-jobs.js";

type Done = (accepted: boolean) => void;

/** Writes outcomes immediately through the store; {@link settled} awaits them. */
export class DirectWriter implements OutcomeSink {
  private writes: Promise<void>[] = [];

  constructor(
    private readonly jobs: JobStore,
    private readonly node: string,
  ) {}

  complete(item: Completion, done: Done): void {
    this.track(this.jobs.complete(this.node, [item]), item.id, done);
  }

  retry(item: Retry, done: Done): void {
    this.track(this.jobs.retry(this.node, [item]), item.id, done);
  }

  kill(item: Death, done: Done): void {
    this.track(this.jobs.kill(this.node, [item]), item.id, done);
  }

  reschedule(item: Reschedule, done: Done): void {
    this.track(this.jobs.reschedule(this.node, [item]), item.id, done);
  }

  /** Resolves once every write so far has landed; rejects with the first failed write. */
  async settled(): Promise<void> {
    const writes = this.writes;
    this.writes = [];
    await Promise.all(writes);
  }

  private track(write: Promise<Set<string>>, id: string, done: Done): void {
    this.writes.push(write.then((ids) => done(ids.has(id))));
  }
}
