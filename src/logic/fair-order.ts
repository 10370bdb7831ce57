/**
 * A node lane's buffer of claimed jobs (docs/fairness.md): the highest effective priority (priority plus
 * the age boost the claim computed) first; within one priority, round robin across concurrency keys (jobs
 * without a key count as one key); within one key, first in first out.
 *
 * Why not a plain FIFO: a node buffers up to its prefetch beyond its free slots, so with a FIFO a job that
 * a later claim found (a new key's, or a critical one) would still start behind every job claimed before
 * it, however fair or prioritised the claim was. With one priority and no keys it is a FIFO.
 */
import { Fifo } from "./fifo.js";

/** How the buffer ranks an item. */
export interface FairRank {
  /** Effective priority: higher leaves first. */
  priority: number;
  /** Concurrency key, or null. */
  key: string | null;
}

interface Level<T> {
  priority: number;
  /** Keys with waiting items, in rotation order. */
  ring: (string | null)[];
  queues: Map<string | null, Fifo<T>>;
  next: number;
}

/** The buffer; see the module comment. */
export class FairBuffer<T> {
  /** Levels in descending priority. */
  private levels: Level<T>[] = [];
  private count = 0;

  constructor(private readonly rank: (item: T) => FairRank) {}

  /** Items waiting. */
  get size(): number {
    return this.count;
  }

  /** Adds an item behind the items of its priority and key. */
  push(item: T): void {
    const { priority, key } = this.rank(item);
    let i = this.levels.findIndex((l) => l.priority <= priority);
    if (i === -1) i = this.levels.length;
    let level = this.levels[i];
    if (!level || level.priority !== priority) {
      level = { priority, ring: [], queues: new Map(), next: 0 };
      this.levels.splice(i, 0, level);
    }
    let q = level.queues.get(key);
    if (!q) {
      q = new Fifo<T>();
      level.queues.set(key, q);
      level.ring.push(key);
    }
    q.push(item);
    this.count++;
  }

  /** Takes the next item: highest priority, the next key in turn, its oldest item. */
  shift(): T | undefined {
    const level = this.levels[0];
    if (!level) return undefined;
    const at = level.next % level.ring.length;
    const key = level.ring[at] as string | null;
    const q = level.queues.get(key) as Fifo<T>;
    const item = q.shift();
    this.count--;
    if (q.size === 0) {
      level.queues.delete(key);
      level.ring.splice(at, 1);
      level.next = at;
      if (level.ring.length === 0) this.levels.shift();
    } else {
      level.next = at + 1;
    }
    return item;
  }

  /** Whether any waiting item matches. */
  some(match: (item: T) => boolean): boolean {
    return this.levels.some((l) => [...l.queues.values()].some((q) => q.some(match)));
  }

  /** Empties the buffer and returns what was in it, in the order {@link shift} would have given. */
  takeAll(): T[] {
    const out: T[] = [];
    for (let item = this.shift(); item !== undefined; item = this.shift()) out.push(item);
    return out;
  }
}
