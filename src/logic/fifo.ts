/**
 * A first-in first-out queue over an array with a moving head: `shift` is O(1) (no copy, unlike
 * `Array.prototype.shift`), and the array is compacted once the consumed prefix is most of it. The node's
 * buffer of claimed jobs and each queue lane's buffer are one of these.
 */
export class Fifo<T> {
  private items: (T | undefined)[] = [];
  private head = 0;

  /** Items waiting. */
  get size(): number {
    return this.items.length - this.head;
  }

  /** Adds an item at the back. */
  push(item: T): void {
    this.items.push(item);
  }

  /** Takes the item at the front, or undefined when empty. */
  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const item = this.items[this.head];
    this.items[this.head++] = undefined; // let the item be collected
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }

  /** Whether any waiting item matches. */
  some(match: (item: T) => boolean): boolean {
    for (let i = this.head; i < this.items.length; i++) if (match(this.items[i] as T)) return true;
    return false;
  }

  /** Empties the queue and returns what was in it, front first. */
  takeAll(): T[] {
    const out = this.items.slice(this.head) as T[];
    this.items = [];
    this.head = 0;
    return out;
  }
}
