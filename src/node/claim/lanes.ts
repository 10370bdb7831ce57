/**
 * Where claimed jobs wait on a node: its lanes. A lane is a buffer of claimed jobs with its own limit (the
 * jobs it may run at once), its own room to claim into and its own claimer. Every node has lanes:
 *
 * - **without `queues`**, one catch-all lane for every queue, whose limit is the node's concurrency, whose
 *   prefetch is the node's prefetch, and whose claimer is the node's configured one (classic or claim
 *   cursors);
 * - **with `queues`** (docs/composition.md#queues), one lane per queue with that queue's limit, a share of
 *   the prefetch in proportion to it, and a classic claimer narrowed to the queue. The node's slots are the
 *   sum of the limits, so a lane under its limit always finds a free slot and a full lane never takes
 *   another's.
 *
 * The runtime claims into every lane with room, starts jobs through {@link NodeLanes.next} (round robin
 * over the lanes under their limit that have work) and hands buffered jobs back through
 * {@link NodeLanes.takeAll}: one path whatever the configuration.
 */
import type { ClaimedJob } from "../../store/claim/claim-jobs.js";
import type { Claimer } from "../../store/claim/claimer.js";
import { FairBuffer } from "../../logic/fair-order.js";

/** A claimed job waiting in a lane, with when it was claimed (clock ms) and the lane it counts against. */
export interface Buffered {
  job: ClaimedJob;
  claimedAt: number;
  lane: Lane;
}

/** A lane as the inspector shows it. */
export interface LaneView {
  /** The lane's queue; null for the catch-all lane of a node without `queues`. */
  queue: string | null;
  limit: number;
  running: number;
  buffered: number;
}

/** One lane: a buffer of claimed jobs, the jobs of it running, its limit, its prefetch and its claimer. */
export class Lane {
  /** Jobs claimed for this lane, waiting for a slot. */
  readonly buffer = new FairBuffer<Buffered>((b) => ({
    priority: b.job.priority + b.job.boost,
    key: b.job.concurrencyKey ?? null,
  }));
  /** Jobs of this lane running now (counted by {@link NodeLanes.next}, given back by {@link release}). */
  running = 0;
  /**
   * Rows asked for by this lane's claims in flight: counted against its room until they land, so a claim
   * started ahead never asks for what the one before it may bring (the buffer stays within its prefetch).
   */
  reserved = 0;

  /**
   * @param queue the queue this lane claims from, or null for every queue (the catch-all lane).
   * @param limit how many of its jobs may run at once.
   * @param prefetch how many of its jobs may wait beyond its free slots.
   * @param claimer how it claims.
   */
  constructor(
    readonly queue: string | null,
    readonly limit: number,
    readonly prefetch: number,
    readonly claimer: Claimer,
  ) {}

  /** What the lane can claim now: free slots plus prefetch, minus what it buffers and its claims in flight ask. */
  get room(): number {
    return Math.max(0, this.limit - this.running + this.prefetch - this.buffer.size - this.reserved);
  }

  /** A job of this lane ended (or never started): one more free slot. */
  release(): void {
    if (this.running > 0) this.running--;
  }

  /** Limit, running and buffered jobs, for the inspector. */
  describe(): LaneView {
    return { queue: this.queue, limit: this.limit, running: this.running, buffered: this.buffer.size };
  }
}

/** The lanes of one node. */
export class NodeLanes {
  private turn = 0;

  /** The node's lanes, in configuration order (at least one). */
  constructor(readonly all: readonly Lane[]) {
    if (all.length === 0) throw new Error("pawl: a node needs at least one lane");
  }

  /**
   * The lanes of a node: one per queue of `queues` (each claiming its queue through `queueClaimer`), or
   * without `queues` one catch-all lane with the node's concurrency, prefetch and claimer.
   */
  static build(o: {
    concurrency: number;
    prefetch: number;
    queues: ReadonlyMap<string, number> | null | undefined;
    claimer: () => Claimer;
    queueClaimer: (queue: string) => Claimer;
  }): NodeLanes {
    if (!o.queues || o.queues.size === 0) {
      return new NodeLanes([new Lane(null, o.concurrency, o.prefetch, o.claimer())]);
    }
    const total = [...o.queues.values()].reduce((a, b) => a + b, 0);
    return new NodeLanes(
      [...o.queues].map(
        ([queue, limit]) =>
          new Lane(queue, limit, prefetchShare(o.prefetch, limit, total), o.queueClaimer(queue)),
      ),
    );
  }

  /** Jobs waiting in all lanes. */
  get buffered(): number {
    let n = 0;
    for (const l of this.all) n += l.buffer.size;
    return n;
  }

  /** The sum of the lanes' rooms. */
  room(): number {
    let n = 0;
    for (const l of this.all) n += l.room;
    return n;
  }

  /** The lanes with room to claim into. */
  withRoom(): Lane[] {
    return this.all.filter((l) => l.room > 0);
  }

  /**
   * The next job to start: from the first lane (round robin) that is under its limit and has one
   * buffered. Counts it as running in its lane; `item.lane.release()` gives the slot back.
   */
  next(): Buffered | undefined {
    const lanes = this.all;
    const n = lanes.length;
    for (let k = 0; k < n; k++) {
      const l = lanes[(this.turn + k) % n] as Lane;
      if (l.running >= l.limit) continue;
      const item = l.buffer.shift();
      if (item === undefined) continue;
      l.running++;
      this.turn = (this.turn + k + 1) % n;
      return item;
    }
    return undefined;
  }

  /** Whether a job is buffered (claimed, not started) in any lane. */
  has(jobId: string): boolean {
    return this.all.some((l) => l.buffer.some((item) => item.job.id === jobId));
  }

  /** Adds the id of every buffered job to `into` (the lease audit's view of what this node holds). */
  collectIds(into: Set<string>): void {
    for (const l of this.all) {
      // `some` is the buffer's only walk; a visitor that never matches visits every item.
      l.buffer.some((item) => {
        into.add(item.job.id);
        return false;
      });
    }
  }

  /** Empties every lane's buffer and returns what was in them. */
  takeAll(): Buffered[] {
    return this.all.flatMap((l) => l.buffer.takeAll());
  }

  /** New work was announced (`unkeyed`: none of it carries a concurrency key): every lane's claimer hears of it. */
  onWakeup(unkeyed?: boolean): void {
    for (const l of this.all) l.claimer.onWakeup(unkeyed);
  }

  /** Rows went back to PENDING under their old ids: claimers that look past floors look everywhere next. */
  requestFullPass(): void {
    for (const l of this.all) l.claimer.requestFullPass?.();
  }

  /** Each lane's limit, running and buffered jobs, for the inspector. */
  describe(): LaneView[] {
    return this.all.map((l) => l.describe());
  }
}

/**
 * A lane's share of the node's prefetch: in proportion to its limit, and at least one when the prefetch
 * is positive, so claiming overlaps running in every lane.
 */
export function prefetchShare(prefetch: number, limit: number, totalLimit: number): number {
  return prefetch <= 0 ? 0 : Math.max(1, Math.ceil((prefetch * limit) / Math.max(1, totalLimit)));
}
