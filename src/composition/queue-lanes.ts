/**
 * Per-queue slot accounting for a node configured with `queues` (docs/composition.md#queues). Each queue
 * is a lane with its own limit, its own count of running jobs and its own buffer of claimed jobs; the
 * node's slots are the sum of the limits, so a lane under its limit always finds a free slot and a full
 * lane never takes another's. The runtime claims per lane (up to the lane's room) and starts jobs through
 * {@link QueueLanes.next}, which round-robins over the lanes that are under their limit and have work.
 *
 * Without `queues` none of this exists: the runtime keeps its single buffer and one claim for all.
 */

import { Fifo } from "../runtime/fifo.js";

/** A claimed job waiting in a lane (the runtime's buffer entry). */
export interface LaneItem {
  job: { id: string; queue: string };
}

interface Lane<T extends LaneItem> {
  name: string;
  limit: number;
  prefetch: number;
  busy: number;
  buffer: Fifo<T>;
}

/** A lane as the inspector shows it. */
export interface LaneView {
  queue: string;
  limit: number;
  running: number;
  buffered: number;
}

/** The lanes of one node. */
export class QueueLanes<T extends LaneItem> {
  private readonly lanes: Lane<T>[];
  private readonly byName = new Map<string, Lane<T>>();
  private turn = 0;

  /**
   * @param limits each queue's limit.
   * @param prefetch the node's prefetch, shared out in proportion to the limits (at least one per lane
   *   when prefetch is positive), so claiming overlaps running in every lane.
   */
  constructor(limits: ReadonlyMap<string, number>, prefetch: number) {
    const total = [...limits.values()].reduce((a, b) => a + b, 0);
    this.lanes = [...limits].map(([name, limit]) => ({
      name,
      limit,
      prefetch: prefetch <= 0 ? 0 : Math.max(1, Math.ceil((prefetch * limit) / Math.max(1, total))),
      busy: 0,
      buffer: new Fifo<T>(),
    }));
    for (const l of this.lanes) this.byName.set(l.name, l);
  }

  /** The queue names, in configuration order. */
  get queues(): string[] {
    return this.lanes.map((l) => l.name);
  }

  /** Jobs waiting in all lanes' buffers. */
  get buffered(): number {
    let n = 0;
    for (const l of this.lanes) n += l.buffer.size;
    return n;
  }

  /** Jobs running in `queue`. */
  running(queue: string): number {
    return this.byName.get(queue)?.busy ?? 0;
  }

  private roomOf(l: Lane<T>): number {
    return Math.max(0, l.limit - l.busy + l.prefetch - l.buffer.size);
  }

  /** What each lane can claim now (free slots plus prefetch, minus what it buffers); lanes with none left out. */
  rooms(): [queue: string, room: number][] {
    const out: [string, number][] = [];
    for (const l of this.lanes) {
      const r = this.roomOf(l);
      if (r > 0) out.push([l.name, r]);
    }
    return out;
  }

  /** The sum of the lanes' rooms. */
  room(): number {
    let n = 0;
    for (const l of this.lanes) n += this.roomOf(l);
    return n;
  }

  /** Buffers a claimed job in its queue's lane. Returns false for a queue this node has no lane for. */
  push(item: T): boolean {
    const l = this.byName.get(item.job.queue);
    if (!l) return false;
    l.buffer.push(item);
    return true;
  }

  /**
   * The next job to start: from the first lane (round robin) that is under its limit and has one
   * buffered. Counts it as running in its lane; {@link release} gives the slot back.
   */
  next(): T | undefined {
    const n = this.lanes.length;
    for (let k = 0; k < n; k++) {
      const l = this.lanes[(this.turn + k) % n] as Lane<T>;
      if (l.busy >= l.limit) continue;
      const item = l.buffer.shift();
      if (item === undefined) continue;
      l.busy++;
      this.turn = (this.turn + k + 1) % n;
      return item;
    }
    return undefined;
  }

  /** A job of `queue` ended (or never started): its lane has one more free slot. */
  release(queue: string): void {
    const l = this.byName.get(queue);
    if (l && l.busy > 0) l.busy--;
  }

  /** Whether a job is buffered (claimed, not started) in any lane. */
  has(jobId: string): boolean {
    return this.lanes.some((l) => l.buffer.some((item) => item.job.id === jobId));
  }

  /** Empties every lane's buffer (shutdown) and returns what was in them. */
  takeAll(): T[] {
    return this.lanes.flatMap((l) => l.buffer.takeAll());
  }

  /** Each lane's limit, running and buffered jobs, for the inspector. */
  describe(): LaneView[] {
    return this.lanes.map((l) => ({
      queue: l.name,
      limit: l.limit,
      running: l.busy,
      buffered: l.buffer.size,
    }));
  }
}
