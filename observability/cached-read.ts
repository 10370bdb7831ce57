/**
 * Reads that a scrape may trigger but must never be slowed or failed by: the queue depth (a bounded
 * count of jobs by status and type) and the cluster view (node rows and leases). Each is cached for
 * `ttlMs`, so however often Prometheus scrapes, the database sees at most one read per window. One read
 * runs at a time; a scrape waits for it at most `timeoutMs` and otherwise reports the last value, as it
 * does when the read fails. Failures and slow reads are reported through `onError`, once per read.
 */

/** Options of {@link CachedRead}. */
export interface CachedReadOptions {
  /** How long a value is reused (ms). 0 reads on every scrape (still one read at a time). */
  ttlMs: number;
  /** How long a caller waits for a read in flight before it gets the last value (ms). */
  timeoutMs: number;
  /** Called when a read fails, or outlasts `timeoutMs` (once per read). */
  onError: (reason: "failed" | "timeout", error: unknown) => void;
  /** The time source (ms). Default Date.now. */
  now?: () => number;
}

/** The last successful read. */
export interface CachedValue<T> {
  value: T;
  /** When it was read (ms since the epoch), or 0 before the first success. */
  at: number;
}

interface Read {
  done: Promise<void>;
  lateReported: boolean;
}

/**
 * A single-flight, time-bounded cache of one asynchronous read.
 *
 * @example
 * ```ts
 * const depth = new CachedRead(() => store.counts(200), [], { ttlMs: 5000, timeoutMs: 2000, onError });
 * const { value, at } = await depth.get(); // never rejects
 * ```
 */
export class CachedRead<T> {
  private last: CachedValue<T>;
  private attemptedAt = Number.NEGATIVE_INFINITY;
  private inFlight: Read | null = null;
  private readonly now: () => number;

  constructor(
    private readonly read: () => Promise<T>,
    initial: T,
    private readonly options: CachedReadOptions,
  ) {
    this.last = { value: initial, at: 0 };
    this.now = options.now ?? Date.now;
  }

  /** The value, read again first when older than the TTL (waiting at most `timeoutMs`). Never rejects. */
  async get(): Promise<CachedValue<T>> {
    if (this.inFlight === null && this.now() - this.attemptedAt >= this.options.ttlMs) this.start();
    const pending = this.inFlight;
    if (pending !== null) await this.bounded(pending);
    return this.last;
  }

  private start(): void {
    this.attemptedAt = this.now();
    const read: Read = { done: Promise.resolve(), lateReported: false };
    read.done = this.run().finally(() => {
      if (this.inFlight === read) this.inFlight = null;
    });
    this.inFlight = read;
  }

  private async run(): Promise<void> {
    try {
      const value = await this.read();
      this.last = { value, at: this.now() };
    } catch (error) {
      this.options.onError("failed", error);
    }
  }

  private async bounded(read: Read): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(true), this.options.timeoutMs);
      timer.unref?.();
    });
    const late = await Promise.race([read.done.then(() => false), timedOut]);
    clearTimeout(timer);
    if (late && !read.lateReported) {
      // Reported once per read, however many scrapes (or metrics of one scrape) waited for it.
      read.lateReported = true;
      this.options.onError("timeout", new Error(`read took over ${this.options.timeoutMs} ms`));
    }
  }
}
