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
  /**
   * Keys with waiting items, the key whose turn is next at the front. A served key that still has items
   * goes to the back, and so does a key that starts waiting (new, or back after it emptied): round robin,
   * where no key can take a second turn while another key that was waiting has not had one.
   */
  turns: Fifo<string | null>;
  queues: Map<string | null, Fifo<T>>;
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
      level = { priority, turns: new Fifo(), queues: new Map() };
      this.levels.splice(i, 0, level);
    }
    let q = level.queues.get(key);
    if (!q) {
      q = new Fifo<T>();
      level.queues.set(key, q);
      level.turns.push(key);
    }
    q.push(item);
    this.count++;
  }

  /** Takes the next item: highest priority, the next key in turn, its oldest item. */
  shift(): T | undefined {
    const level = this.levels[0];
    if (!level) return undefined;
    const key = level.turns.shift() as string | null;
    const q = level.queues.get(key) as Fifo<T>;
    const item = q.shift();
    this.count--;
    if (q.size > 0) level.turns.push(key);
    else {
      level.queues.delete(key);
      if (level.turns.size === 0) this.levels.shift();
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
