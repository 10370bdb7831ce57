/**
 * Writes attempt outcomes in batches. Outcomes queue up for `flushMs` (or until a batch is large) and
 * go to the store as one statement per kind; each outcome's callback learns whether its row was still
 * held by this node.
 *
 * A failed write is handled by why it failed (`logic/write-failure.ts`):
 * - **transient** (database restart, dropped connection): retried with backoff and nothing is dropped;
 *   until it lands the rows stay RUNNING under this node, which is what orphan recovery expects anyway.
 * - **data** (PostgreSQL refused a value the statement carries): sending it again would fail again and
 *   hold up every later outcome, so the batch is bisected until the refused outcome is alone; the others
 *   land as usual. The refused one is written once more in a fallback form that carries no value of the
 *   handler's (result null, a fixed error record, a clamped delay) and reported as an `error`. Values go
 *   through `logic/outcome-json.ts` first, so this is defence in depth: it should not happen.
 *
 * **A lost reply** (the connection broke after the statement was sent: a reset, a pooler restart, a
 * failover) is the transient case whose first try may have committed. Sending it again is safe because
 * every outcome names the lease it ends (`store/jobs/lease-sql.ts`, `LeaseToken`): the second statement
 * finds the row no longer under that lease and changes nothing, even when this node has claimed the row
 * again meanwhile. An outcome that the resend finds already gone is reported as landed (its first try is
 * the only write that can have ended that lease while this node held it; a cancel racing the lost reply
 * is the exception, and its row is CANCELED either way).
 *
 * Progress (`ctx.progress`) goes through here too, so it can never land after its job's outcome: each
 * job's values are throttled (`logic/progress-throttle.ts`, only the newest is kept), a waiting value is
 * released when the job's outcome is queued, and a flush writes its progress batch (one statement) before
 * the outcomes. A failed progress write holds the flush back like a failed outcome: the outcome's move
 * carries the progress column into the finished table, so it must not overtake it.
 */
import type { Clock, TimerHandle } from "../core/clock.js";
import type { Logger } from "../core/logger.js";
import type { NodeStore } from "../store/job-store.js";
import type { Completion, Death, Reschedule, Retry } from "../store/outcomes/finish-jobs.js";
import type { OutcomeSink } from "../store/outcomes/outcome-sink.js";
import { backoffDelayMs } from "../logic/backoff.js";
import { storableDelayMs, type ErrorInfo } from "../logic/outcome-json.js";
import { writeFailure } from "../logic/write-failure.js";
import { connectionFailureKind } from "../db/connection-failure.js";
import { progressWriteDelay } from "../logic/progress-throttle.js";
import type { ProgressWrite } from "../store/outcomes/progress-sql.js";

type Done = (accepted: boolean) => void;
interface Items {
  complete: Completion;
  retry: Retry;
  kill: Death;
  reschedule: Reschedule;
}
type Kind = keyof Items;
/** A queued outcome; `fallback` marks one already rewritten after the store refused it. */
interface Entry<K extends Kind = Kind> {
  item: Items[K];
  done: Done;
  fallback?: boolean;
  /** A write of it failed after the statement may have reached the database (see the module comment). */
  maybeLanded?: boolean;
}
type Queues = { [K in Kind]: Entry<K>[] };
const kinds = ["complete", "retry", "kill", "reschedule"] as const;
const empty = (): Queues => ({ complete: [], retry: [], kill: [], reschedule: [] });

/** What is left of a kind's write: the entries to send again later, and the transient error, if any. */
interface Written {
  again: Entry[];
  error: unknown;
}
const landed: Written = { again: [], error: null };

/** An error record that cannot be refused: no text of the handler's. */
const fallbackError = (e: ErrorInfo): ErrorInfo => ({
  attempt: e.attempt,
  name: "Error",
  message: "the failure's error record could not be stored",
});

/** The outcome without any value the store could refuse. */
function fallbackOf(kind: Kind, item: Items[Kind]): Items[Kind] {
  switch (kind) {
    case "complete":
      return { id: item.id, resultJson: null };
    case "retry": {
      const r = item as Retry;
      return { id: r.id, delayMs: storableDelayMs(r.delayMs), error: fallbackError(r.error) };
    }
    case "kill":
      return { id: item.id, error: fallbackError((item as Death).error) };
    case "reschedule":
      return { id: item.id, delayMs: storableDelayMs((item as Reschedule).delayMs) };
  }
}

/** Beyond this many jobs with a remembered last write, the memory is dropped (parked jobs never end here). */
const maxProgressMemory = 10_000;

/** Batches outcome writes for one node. */
export class OutcomeWriter implements OutcomeSink {
  private queues: Queues = empty();
  private size = 0;
  /** Outcomes in the flush being written. */
  private inFlight = 0;
  /** The flush being written, while one is. */
  private writing: Queues | null = null;
  private flushed: (() => void) | null = null;
  private timer: TimerHandle | null = null;
  private flushing: Promise<void> | null = null;
  private failures = 0;
  private readonly idle: (() => void)[] = [];
  /** Progress values to write in the next flush, by job id (the newest only). */
  private progressReady = new Map<string, ProgressWrite>();
  /** Progress values held back by the throttle, by job id, with the timer that releases them. */
  private readonly progressHeld = new Map<string, { item: ProgressWrite; timer: TimerHandle }>();
  /** When each running job's progress was last released for writing (the throttle's memory). */
  private readonly progressAt = new Map<string, number>();

  constructor(
    private readonly store: NodeStore,
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

  /**
   * Outcomes not written yet: waiting, and in the flush being written. Each is a job this node still
   * holds a lease on although its handler has ended; the runtime stops claiming while there are many
   * (see `NodeRuntime.room`).
   */
  get backlog(): number {
    return this.size + this.inFlight;
  }

  /**
   * Adds to `into` the id of every job whose outcome is queued or being written: this node still holds its
   * lease (the lease audit must not release it, src/cluster/lease-audit.ts).
   */
  collectHeld(into: Set<string>): void {
    for (const queues of this.writing ? [this.queues, this.writing] : [this.queues]) {
      for (const kind of kinds) for (const e of queues[kind] as Entry[]) into.add(e.item.id);
    }
  }

  /** Calls `fn` after every flush (the runtime resumes claiming once the backlog is down). */
  whenFlushed(fn: () => void): void {
    this.flushed = fn;
  }

  /**
   * A running job's newest progress: written at once, or after the rest of the job's throttle interval
   * (replaced by any newer value meanwhile), and always before the job's outcome.
   */
  progress(item: ProgressWrite): void {
    const held = this.progressHeld.get(item.id);
    if (held) {
      held.item = item;
      return;
    }
    const now = this.clock.now();
    const delay = progressWriteDelay({ lastWriteAtMs: this.progressAt.get(item.id) ?? null, now });
    if (delay === 0) {
      this.readyProgress(item, now);
      return;
    }
    const timer = this.clock.setTimeout(() => {
      const h = this.progressHeld.get(item.id);
      if (!h) return;
      this.progressHeld.delete(item.id);
      this.readyProgress(h.item, this.clock.now());
    }, delay);
    this.progressHeld.set(item.id, { item, timer });
  }

  private readyProgress(item: ProgressWrite, now: number): void {
    if (this.progressAt.size >= maxProgressMemory) this.progressAt.clear();
    this.progressAt.set(item.id, now);
    this.progressReady.set(item.id, item);
    this.schedule(this.flushMs);
  }

  /** The job's outcome is queued: its held progress goes into the same flush, ahead of it. */
  private ending(id: string): void {
    this.progressAt.delete(id);
    const held = this.progressHeld.get(id);
    if (!held) return;
    this.clock.clearTimeout(held.timer);
    this.progressHeld.delete(id);
    this.progressReady.set(id, held.item);
  }

  complete(item: Completion, done: Done): void {
    this.ending(item.id);
    this.queues.complete.push({ item, done });
    this.added();
  }

  retry(item: Retry, done: Done): void {
    this.ending(item.id);
    this.queues.retry.push({ item, done });
    this.added();
  }

  kill(item: Death, done: Done): void {
    this.ending(item.id);
    this.queues.kill.push({ item, done });
    this.added();
  }

  reschedule(item: Reschedule, done: Done): void {
    this.ending(item.id);
    this.queues.reschedule.push({ item, done });
    this.added();
  }

  /** Resolves once everything queued so far has been written. */
  async drain(): Promise<void> {
    if (this.size === 0 && this.progressReady.size === 0 && !this.flushing) return;
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
        this.inFlight = 0;
        this.flushed?.();
        if (this.size > 0 || this.progressReady.size > 0)
          this.schedule(this.failures > 0 ? this.retryDelay() : 0);
        else for (const resolve of this.idle.splice(0)) resolve();
      });
    }, ms);
  }

  private retryDelay(): number {
    return backoffDelayMs(this.failures, { baseMs: 100, factor: 2, maxMs: 5000, jitter: 0 });
  }

  /**
   * Takes at most `maxBatch` outcomes of each kind off the queues, oldest first. One statement stays
   * bounded however far the writes fell behind: a flush of everything queued once carried 100,000 ids.
   */
  private take(): Queues {
    const q = empty();
    for (const kind of kinds) {
      const taken = (this.queues[kind] as Entry[]).splice(0, this.maxBatch);
      (q[kind] as Entry[]).push(...taken);
      this.size -= taken.length;
      this.inFlight += taken.length;
    }
    return q;
  }

  private async flush(): Promise<void> {
    const q = this.take();
    this.writing = q;
    try {
      await this.flushTaken(q);
    } finally {
      this.writing = null;
    }
  }

  private async flushTaken(q: Queues): Promise<void> {
    const progressError = await this.writeProgress();
    if (progressError !== null) {
      // Outcomes wait for the progress ahead of them (see the module comment), so they go back too.
      for (const kind of kinds) this.requeue(kind, q[kind] as Entry[]);
      this.failed(progressError);
      return;
    }
    // Each kind lands or fails on its own: re-running a kind that already landed would find its rows
    // no longer RUNNING and report them lost.
    const results = await Promise.all(kinds.map((kind) => this.write(kind, q[kind] as Entry[])));
    let failed: unknown = null;
    kinds.forEach((kind, i) => {
      const { again, error } = results[i]!;
      if (again.length === 0) return;
      failed = error;
      // Sent, and then the connection broke: the statement may have committed (see the module comment).
      if (connectionFailureKind(error) !== "connect") for (const e of again) e.maybeLanded = true;
      this.requeue(kind, again);
    });
    if (failed === null) {
      this.failures = 0;
      return;
    }
    this.failed(failed);
  }

  /**
   * Puts taken entries back at the front of their queue, for the next flush. They leave the flush's count
   * as they join the queue's, so `backlog` (read by `onError` callbacks too) counts each once.
   */
  private requeue(kind: Kind, entries: Entry[]): void {
    (this.queues[kind] as Entry[]).unshift(...entries);
    this.size += entries.length;
    this.inFlight -= entries.length;
  }

  private failed(error: unknown): void {
    this.failures++;
    if (this.failures === 1)
      this.logger.warn("writing job outcomes failed; retrying", { error: String(error) });
    this.onError(error);
  }

  /**
   * Writes the progress batch; returns the transient error that should hold the flush back, or null. A
   * value the store refuses (it cannot happen after `progressJson`'s checks) is dropped and reported: no
   * outcome depends on it.
   */
  private async writeProgress(): Promise<unknown> {
    if (this.progressReady.size === 0 || !this.store.writeProgress) {
      this.progressReady.clear();
      return null;
    }
    const batch = this.progressReady;
    this.progressReady = new Map();
    try {
      await this.store.writeProgress(this.nodeId, [...batch.values()]);
      return null;
    } catch (error) {
      if (writeFailure(error) !== "transient") {
        this.onError(new Error(`the store refused a progress batch (${String(error)}); dropped`));
        return null;
      }
      // A newer value that arrived meanwhile wins over the one that failed.
      for (const [id, item] of batch) if (!this.progressReady.has(id)) this.progressReady.set(id, item);
      return error;
    }
  }

  /** Writes one kind's entries; a data error bisects the batch down to the refused outcome. */
  private async write(kind: Kind, entries: Entry[]): Promise<Written> {
    if (entries.length === 0) return landed;
    let held: Set<string>;
    try {
      held = await this.statement(
        kind,
        entries.map((e) => e.item),
      );
    } catch (error) {
      if (writeFailure(error) === "transient") return { again: entries, error };
      if (entries.length > 1) {
        const half = entries.length >>> 1;
        const first = await this.write(kind, entries.slice(0, half));
        const second = await this.write(kind, entries.slice(half));
        return { again: [...first.again, ...second.again], error: second.error ?? first.error };
      }
      return this.refused(kind, entries[0]!, error);
    }
    for (const e of entries) {
      try {
        e.done(held.has(e.item.id) || e.maybeLanded === true);
      } catch (error) {
        this.onError(error); // a callback's failure is not the write's: the outcome has landed
      }
    }
    return landed;
  }

  /** One outcome the store refused: written again without the handler's values, and reported. */
  private refused(kind: Kind, entry: Entry, error: unknown): Promise<Written> | Written {
    const id = entry.item.id;
    const why = error instanceof Error ? error.message : String(error);
    if (entry.fallback) {
      // Cannot happen with the fixed fallback values; if it does, the row is left RUNNING for orphan
      // recovery rather than blocking every later outcome of this node.
      this.onError(
        new Error(`job ${id}: the store refused its ${kind} outcome even without values (${why})`),
      );
      return landed;
    }
    this.logger.warn("the store refused a job's outcome; writing it without the handler's values", {
      jobId: id,
      kind,
      error: why,
    });
    this.onError(new Error(`job ${id}: the store refused its ${kind} outcome (${why}); stored without it`));
    return this.write(kind, [{ item: fallbackOf(kind, entry.item), done: entry.done, fallback: true }]);
  }

  private async statement(kind: Kind, items: Items[Kind][]): Promise<Set<string>> {
    switch (kind) {
      case "complete":
        return this.store.complete(this.nodeId, items as Completion[]);
      case "retry":
        return this.store.retry(this.nodeId, items as Retry[]);
      case "kill":
        return this.store.kill(this.nodeId, items as Death[]);
      case "reschedule":
        return this.store.reschedule(this.nodeId, items as Reschedule[]);
    }
  }
}
