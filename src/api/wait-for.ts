/**
 * `pawl.waitFor(id)`: resolve when a job reaches a final status (SUCCEEDED, DEAD, CANCELED), wherever it
 * runs. One {@link WaitRegistry} per client serves every waiter of the instance:
 *
 * - **Reads decide.** A waiter is only ever resolved from a row read from the store (the view of both job
 *   tables), never from a message: a completion notice, forged or not, only makes the registry read.
 * - **Batched.** Every read is one `SELECT ... WHERE id = ANY($1)` for the ids in question (all waited ids
 *   on a poll tick), so a thousand waiters cost one statement per wake-up or tick, not one each.
 * - **Woken by notices.** With a coordinator, the node that ends jobs publishes a `finished` hint with their
 *   ids after its outcome batch lands (src/api/node-hooks.ts); the registry's one listener reads those ids.
 * - **Polling is the fallback.** Without a connected coordinator, reads run on a backoff from 100 ms to
 *   2 s; with one, every 5 s to 30 s as a safety net for lost notices (src/logic/wait-poll.ts).
 *
 * The first read of a new waiter runs at once: an unknown id rejects with JobNotFoundError, a job already
 * final resolves. A row that disappears while waited on (deleted as it succeeded with `keepSucceeded:
 * false`, or purged) rejects with JobNotFoundError too: waitFor needs the row that records the outcome.
 */
import type { Coordinator } from "../../coordinators/spi.js";
import type { Clock, TimerHandle } from "../core/clock.js";
import { JobNotFoundError, PawlError, ValidationError, WaitTimeoutError } from "../core/errors.js";
import { waitPollDelayMs, defaultWaitPollConfig, type WaitPollConfig } from "../logic/wait-poll.js";
import type { Job, JobStatus } from "../store/jobs/job-row.js";

/** Options of `pawl.waitFor`. */
export interface WaitForOptions {
  /** Reject with a {@link WaitTimeoutError} (`WAIT_TIMEOUT`) after this many ms (1 to 2147483647). */
  timeoutMs?: number;
  /** Reject with the signal's reason when it aborts (the job itself is not touched). */
  signal?: AbortSignal;
}

/** The statuses waitFor resolves on. */
export const finalStatuses: ReadonlySet<JobStatus> = new Set(["SUCCEEDED", "DEAD", "CANCELED"]);

/** What a {@link WaitRegistry} needs. */
export interface WaitRegistryDeps {
  /** Reads jobs by id in one statement (ids without a row are absent). */
  read(ids: readonly string[]): Promise<Job[]>;
  /** The clock of the timers (timeouts, polls). */
  clock: Clock;
  /** The coordinator whose `finished` hints wake the registry, or null to poll only. Asked once. */
  coordinator(): Promise<Coordinator | null>;
  /** A failed read or coordinator (the registry polls on regardless). */
  onError(error: unknown): void;
  /** The poll schedule (tests shorten it). */
  poll?: WaitPollConfig;
}

interface Waiter {
  id: string;
  resolve(job: Job): void;
  reject(error: unknown): void;
  /** Whether a read has found the row (a row found once and then gone was deleted, not unknown). */
  seen: boolean;
  lastStatus: string | null;
  cleanup(): void;
}

/** The most ids one read names; more are read in several statements. */
const maxIdsPerRead = 10_000;
const maxTimeoutMs = 2_147_483_647;

/**
 * Checks waitFor's options.
 *
 * @throws ValidationError `UNKNOWN_OPTION` or `INVALID_OPTION`.
 * @example
 * ```ts
 * validateWaitForOptions({ timeoutMs: 5_000 }); // { timeoutMs: 5000 }
 * ```
 */
export function validateWaitForOptions(options: unknown): WaitForOptions {
  if (options === undefined) return {};
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw new ValidationError("INVALID_OPTION", "waitFor options must be an object");
  }
  for (const key of Object.keys(options)) {
    if (key !== "timeoutMs" && key !== "signal")
      throw new ValidationError("UNKNOWN_OPTION", `unknown waitFor option "${key}"`);
  }
  const { timeoutMs, signal } = options as Record<string, unknown>;
  if (
    timeoutMs !== undefined &&
    (typeof timeoutMs !== "number" ||
      !Number.isInteger(timeoutMs) ||
      timeoutMs < 1 ||
      timeoutMs > maxTimeoutMs)
  ) {
    throw new ValidationError("INVALID_OPTION", `timeoutMs must be an integer from 1 to ${maxTimeoutMs}`);
  }
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new ValidationError("INVALID_OPTION", "signal must be an AbortSignal");
  }
  return { timeoutMs: timeoutMs as number | undefined, signal: signal as AbortSignal | undefined };
}

/**
 * Every waiter of one client, one listener and one read loop for all of them (see the module comment).
 *
 * @example
 * ```ts
 * const waits = new WaitRegistry({ read: (ids) => store.getMany(ids), clock: systemClock,
 *   coordinator: async () => null, onError: console.error });
 * const job = await waits.wait("42", { timeoutMs: 10_000 });
 * ```
 */
export class WaitRegistry {
  private readonly deps: WaitRegistryDeps;
  private readonly waiters = new Map<string, Set<Waiter>>();
  /** Ids to read at the next read, or "all" (a poll tick, an id-less notice, a reconnect). */
  private dirty: Set<string> | "all" | null = null;
  private reading = false;
  private pollTimer: TimerHandle | undefined;
  private idleReads = 0;
  /** A waiter arrived since the last read: the poll schedule starts again from its first step. */
  private restartPoll = false;
  private coordinator: Coordinator | null = null;
  private listening: Promise<void> | null = null;
  private readonly offs: (() => void)[] = [];
  private closed = false;

  constructor(deps: WaitRegistryDeps) {
    this.deps = deps;
  }

  /** How many waiters are pending. */
  get size(): number {
    let n = 0;
    for (const set of this.waiters.values()) n += set.size;
    return n;
  }

  /** Waits for job `id` (a validated id) to be final; see the module comment for how it settles. */
  wait(id: string, options: WaitForOptions = {}): Promise<Job> {
    if (this.closed) return Promise.reject(new PawlError("CLOSED", "this pawl instance is closed"));
    const { timeoutMs, signal } = options;
    if (signal?.aborted) return Promise.reject(signal.reason as unknown);
    return new Promise<Job>((resolve, reject) => {
      let timer: TimerHandle | undefined;
      const onAbort = () => settle(() => reject(signal?.reason as unknown));
      const waiter: Waiter = {
        id,
        seen: false,
        lastStatus: null,
        resolve: (job) => settle(() => resolve(job)),
        reject: (error) => settle(() => reject(error)),
        cleanup: () => {
          if (timer !== undefined) this.deps.clock.clearTimeout(timer);
          signal?.removeEventListener("abort", onAbort);
        },
      };
      let settled = false;
      const settle = (fn: () => void) => {
        if (settled) return;
        settled = true;
        waiter.cleanup();
        this.remove(waiter);
        fn();
      };
      if (timeoutMs !== undefined) {
        timer = this.deps.clock.setTimeout(
          () => settle(() => reject(new WaitTimeoutError(id, timeoutMs, waiter.lastStatus))),
          timeoutMs,
        );
      }
      signal?.addEventListener("abort", onAbort, { once: true });
      let set = this.waiters.get(id);
      if (!set) this.waiters.set(id, (set = new Set()));
      set.add(waiter);
      this.listen();
      // A new waiter: read its job now (already final, unknown), and poll from the fast end again.
      this.idleReads = 0;
      this.restartPoll = true;
      this.request([id]);
    });
  }

  /**
   * Jobs ended (a `finished` notice, or this node's own outcomes): read the waited ones among `ids`, or
   * every waited job when `ids` is undefined. Only ever triggers a read.
   */
  hinted(ids?: readonly string[]): void {
    if (this.closed || this.waiters.size === 0) return;
    if (ids === undefined) return this.request("all");
    const wanted = ids.filter((id) => this.waiters.has(id));
    if (wanted.length > 0) this.request(wanted);
  }

  /** Rejects every waiter with `CLOSED` and stops listening. Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.pollTimer !== undefined) this.deps.clock.clearTimeout(this.pollTimer);
    for (const off of this.offs.splice(0)) off();
    for (const set of [...this.waiters.values()])
      for (const w of [...set]) w.reject(new PawlError("CLOSED", "this pawl instance is closed"));
  }

  private remove(waiter: Waiter): void {
    const set = this.waiters.get(waiter.id);
    set?.delete(waiter);
    if (set?.size === 0) this.waiters.delete(waiter.id);
    if (this.waiters.size === 0 && this.pollTimer !== undefined) {
      this.deps.clock.clearTimeout(this.pollTimer);
      this.pollTimer = undefined;
    }
  }

  /** Subscribes to the coordinator once: one listener for every waiter of the instance. */
  private listen(): void {
    this.listening ??= this.deps.coordinator().then(
      (c) => {
        if (!c || this.closed) return;
        this.coordinator = c;
        this.offs.push(
          c.onWakeup((hint) => {
            if (hint.kind === "finished") this.hinted(hint.jobIds);
          }),
          // Notices sent while disconnected are lost: read everything once connected again.
          c.on("connected", () => this.hinted()),
        );
        this.schedulePoll(true);
      },
      (error: unknown) => this.deps.onError(error),
    );
  }

  private request(ids: readonly string[] | "all"): void {
    if (ids === "all" || this.dirty === "all") this.dirty = "all";
    else {
      this.dirty ??= new Set();
      for (const id of ids) this.dirty.add(id);
    }
    if (!this.reading) void this.readLoop();
  }

  /** Reads until nothing is dirty: requests made during a read are merged into the next one. */
  private async readLoop(): Promise<void> {
    this.reading = true;
    try {
      while (this.dirty !== null && !this.closed) {
        const dirty = this.dirty;
        this.dirty = null;
        const ids =
          dirty === "all" ? [...this.waiters.keys()] : [...dirty].filter((id) => this.waiters.has(id));
        let resolved = 0;
        for (let i = 0; i < ids.length; i += maxIdsPerRead) {
          const chunk = ids.slice(i, i + maxIdsPerRead);
          let rows: Job[];
          try {
            rows = await this.deps.read(chunk);
          } catch (error) {
            // The next poll tick reads again; timeouts still apply meanwhile.
            this.deps.onError(error);
            continue;
          }
          resolved += this.apply(chunk, rows);
        }
        if (dirty === "all") this.idleReads = resolved > 0 ? 0 : this.idleReads + 1;
      }
    } finally {
      this.reading = false;
      const restart = this.restartPoll;
      this.restartPoll = false;
      this.schedulePoll(restart);
    }
  }

  /** Settles the waiters of `ids` from the rows read; returns how many were settled. */
  private apply(ids: readonly string[], rows: readonly Job[]): number {
    const byId = new Map(rows.map((r) => [r.id, r]));
    let settled = 0;
    for (const id of ids) {
      const set = this.waiters.get(id);
      if (!set) continue;
      const row = byId.get(id);
      for (const w of [...set]) {
        if (row && finalStatuses.has(row.status)) {
          w.resolve(row);
          settled++;
        } else if (row) {
          w.seen = true;
          w.lastStatus = row.status;
        } else {
          settled++;
          w.reject(
            w.seen
              ? new JobNotFoundError(
                  `${id} (its row is gone: deleted as it succeeded with keepSucceeded: false, or purged; waitFor needs the row that records the outcome)`,
                )
              : new JobNotFoundError(id),
          );
        }
      }
    }
    return settled;
  }

  /** Arms the next poll tick while anyone waits; `restart` replaces a tick armed for a slower schedule. */
  private schedulePoll(restart: boolean): void {
    if (this.closed || this.waiters.size === 0) return;
    if (this.pollTimer !== undefined) {
      if (!restart) return;
      this.deps.clock.clearTimeout(this.pollTimer);
    }
    const connected = this.coordinator?.status().connected ?? false;
    const delay = waitPollDelayMs(this.idleReads, connected, this.deps.poll ?? defaultWaitPollConfig);
    this.pollTimer = this.deps.clock.setTimeout(() => {
      this.pollTimer = undefined;
      this.request("all");
    }, delay);
  }
}
