/**
 * The node's fixed pool of slots: which are free, which attempt each one runs, and a way to wait until
 * all are idle (for drain). Free slots are a stack, so a lightly loaded node keeps reusing the same few
 * actors, which keeps them warm.
 */
import type { JobRun } from "../attempt/job-run.js";

/** Slots and their attempts. */
export class SlotPool {
  private readonly freeStack: number[];
  private readonly runs: (JobRun | null)[];
  private idleWaiters: (() => void)[] = [];

  constructor(readonly size: number) {
    this.freeStack = Array.from({ length: size }, (_, i) => size - 1 - i);
    this.runs = new Array<JobRun | null>(size).fill(null);
  }

  /** Free slots. */
  get free(): number {
    return this.freeStack.length;
  }

  /** Busy slots. */
  get busy(): number {
    return this.size - this.freeStack.length;
  }

  /** Takes a free slot (the caller checked `free > 0`). */
  take(): number {
    const slot = this.freeStack.pop();
    if (slot === undefined) throw new Error("pawl: no free slot");
    return slot;
  }

  /** Records the attempt a slot runs. */
  assign(slot: number, run: JobRun): void {
    this.runs[slot] = run;
  }

  /** The attempt a slot runs, if any. */
  runOf(slot: number): JobRun | null {
    return this.runs[slot] ?? null;
  }

  /** Frees a slot. */
  release(slot: number): void {
    if (this.runs[slot] === null) return;
    this.runs[slot] = null;
    this.freeStack.push(slot);
  }

  /** Resolves once no slot is busy. */
  whenIdle(): Promise<void> {
    if (this.busy === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Called when the last busy slot frees. */
  notifyIdle(): void {
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }
}
