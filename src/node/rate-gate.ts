/**
 * The node's side of rate limits: which keys an attempt is admitted under (its type's limit, keyed by
 * the type or by its key function's value, and its queue's), the admission itself (the store's exact
 * sliding log, src/store/cluster/rate-limit-sql.ts), and the node's memory of keys the store refused, so the rest
 * of a closed key's jobs are refused without a round trip until its window opens (the pure decisions of
 * src/logic/rate-limit.ts). A refusal hands the job back to PENDING until its spread slot, without using
 * an attempt; the job task's `finish` writes it, through the same hand-back as a denied permit.
 */
import type { Clock } from "../core/clock.js";
import { toError, type PawlEventEmitter } from "../core/events.js";
import {
  afterStoreRefusal,
  forgettable,
  namedRateKey,
  queueRateKey,
  refuseLocally,
  typeRateKey,
  type ClosedKey,
  type RateKey,
  type RateLimit,
} from "../logic/rate-limit.js";
import type { NodeStore } from "../store/job-store.js";
import type { JobRun } from "./attempt/job-run.js";
import type { JobType } from "./registry.js";

/** What the gate needs from the node. */
export interface RateGateDeps {
  store: Pick<NodeStore, "admitRate">;
  clock: Clock;
  events: PawlEventEmitter;
  /** Per-queue limits (createPawl's `queueRateLimits`). */
  queueLimits: ReadonlyMap<string, RateLimit>;
}

/** Keys remembered before the forgettable ones are swept (forgetting one only costs a round trip). */
const sweepAbove = 1000;
/** Keys remembered at most; past this the memory starts over. */
const rememberAtMost = 10_000;
/** How long a job waits when the admission itself failed (the store was unreachable), at most (ms). */
const failedAdmissionRetryMs = 5000;

/** Admission to the rate limits of one node. */
export class RateGate {
  /** Keys refused, with the limit they were refused under (to tell when one can be forgotten). */
  private readonly closed = new Map<string, ClosedKey & { limit: number; perMs: number }>();

  constructor(private readonly d: RateGateDeps) {}

  /** Whether jobs of `type` in `queue` are rate limited at all (the hot path asks first). */
  limited(type: JobType, queue: string): boolean {
    return type.rateLimit !== undefined || (this.d.queueLimits.size > 0 && this.d.queueLimits.has(queue));
  }

  /**
   * The keys a job is admitted under (empty: none), or the error of a key function that threw or returned
   * something that cannot be a key: that costs this job alone.
   */
  keysOf(type: JobType, queue: string, payload: unknown): RateKey[] | Error {
    const keys: RateKey[] = [];
    const own = type.rateLimit;
    if (own !== undefined) {
      let key = typeRateKey(type.type);
      if (own.key !== undefined) {
        let value: unknown;
        try {
          value = own.key(payload);
        } catch (error) {
          const e = toError(error);
          return new TypeError(`the rateLimit key of ${type.type} threw: ${e.message}`, { cause: e });
        }
        const named = namedRateKey(type.type, value);
        if (named instanceof Error) return named;
        key = named;
      }
      keys.push({ key, limit: own.limit, perMs: own.perMs });
    }
    const q = this.d.queueLimits.get(queue);
    if (q !== undefined) keys.push({ key: queueRateKey(queue), limit: q.limit, perMs: q.perMs });
    return keys;
  }

  /**
   * Admits the attempt under `run.rateKeys`: a key this node knows to be closed refuses at once, else the
   * store decides. `answer` gets whether it may start and, if not, in how many ms it comes back. Never
   * throws; a failed admission refuses (the job comes back later) and is reported as an `error`.
   */
  admit(run: JobRun, answer: (admitted: boolean, retryInMs: number) => void): void {
    const keys = run.rateKeys ?? [];
    const now = this.d.clock.now();
    let retryAt = -1;
    const full: string[] = [];
    for (const k of keys) {
      const r = refuseLocally(this.closed.get(k.key), now, k.limit, k.perMs);
      if (r === null) continue;
      this.closed.set(k.key, { ...r.memory, limit: k.limit, perMs: k.perMs });
      retryAt = Math.max(retryAt, r.retryAt);
      full.push(k.key);
    }
    if (retryAt >= 0) {
      this.refused(run, full, retryAt - now, true);
      queueMicrotask(() => answer(false, retryAt - now));
      return;
    }
    this.d.store.admitRate(keys, run.claimed.id).then(
      (a) => {
        const at = this.d.clock.now();
        if (this.d.events.has("rate-limit:window")) {
          for (const w of a.keys) this.d.events.emit("rate-limit:window", { ...w, type: run.claimed.type });
        }
        if (a.admitted) return answer(true, 0);
        let until = at;
        const closedKeys: string[] = [];
        for (const w of a.keys) {
          if (!w.full) continue;
          const k = keys.find((x) => x.key === w.key);
          if (k === undefined) continue;
          const r = afterStoreRefusal(this.closed.get(k.key), at, w.openInMs, k.limit, k.perMs);
          this.remember(k.key, r.memory, at, k);
          until = Math.max(until, r.retryAt);
          closedKeys.push(k.key);
        }
        this.refused(run, closedKeys, until - at, false);
        answer(false, until - at);
      },
      (error: unknown) => {
        this.d.events.emit("error", { where: "rate limit admission", error: toError(error) });
        const perMs = Math.max(...keys.map((k) => k.perMs));
        answer(false, Math.min(perMs, failedAdmissionRetryMs));
      },
    );
  }

  /** Keys this node remembers as closed, with their openings (the inspector). */
  closedKeys(): { key: string; openAt: number; refused: number }[] {
    return [...this.closed].map(([key, m]) => ({ key, openAt: m.openAt, refused: m.refused }));
  }

  private remember(key: string, m: ClosedKey, now: number, k: RateKey): void {
    if (this.closed.size >= sweepAbove && !this.closed.has(key)) {
      for (const [other, o] of this.closed)
        if (forgettable(o, now, o.limit, o.perMs)) this.closed.delete(other);
      if (this.closed.size >= rememberAtMost) this.closed.clear();
    }
    this.closed.set(key, { ...m, limit: k.limit, perMs: k.perMs });
  }

  private refused(run: JobRun, keys: string[], retryInMs: number, local: boolean): void {
    if (this.d.events.has("job:rate-limited")) {
      this.d.events.emit("job:rate-limited", { job: run.info, keys, retryInMs, local });
    }
  }
}
