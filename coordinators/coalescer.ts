/**
 * Coalescing of outgoing work hints, so a burst of enqueues becomes a bounded number of messages.
 *
 * A wakeup only says "poll now"; ten thousand of them in a millisecond say nothing more than one. The
 * coalescer therefore throttles per window (default 5 ms) with a leading and a trailing edge:
 *
 * - the first hint after a quiet period is sent at once (no added latency for the common single enqueue);
 * - hints arriving while the window is open are merged into one pending hint, sent when it closes, which
 *   opens the next window. A continuous stream thus sends at most one message per window, and a burst of
 *   any size inside one window sends exactly two.
 *
 * Merging keeps the highest priority (so urgent work is never under-reported) and drops `target` when the
 * merged hints disagree (a hint without target wakes everyone, which is always safe). Cancel hints carry a
 * job id that must not be lost, so they are never given to the coalescer; the base coordinator sends them
 * straight away.
 */
import type { Clock, TimerHandle } from "../src/core/clock.js";
import type { WakeupHint } from "./spi.js";

/** The default coalescing window in milliseconds. */
export const DEFAULT_COALESCE_MS = 5;

/** Options of {@link HintCoalescer}. */
export interface HintCoalescerOptions {
  /** The window length in milliseconds; 0 disables coalescing (every hint is sent at once). */
  windowMs: number;
  /** The clock whose timers close windows (tests pass a ManualClock). */
  clock: Clock;
  /** Sends one (possibly merged) hint; called synchronously from `push` or from a timer. */
  send: (hint: WakeupHint) => void;
}

/**
 * Merges two work hints: the highest priority, the target only when both name the same one, `released`
 * when either is, `unkeyed` only when both are. Pure, so the merge rule is testable on its own.
 */
export function mergeHints(a: WakeupHint, b: WakeupHint): WakeupHint {
  const merged: WakeupHint = { priority: Math.max(a.priority, b.priority), source: a.source };
  if (a.target !== undefined && a.target === b.target) merged.target = a.target;
  // A released job hidden in a merged hint must still trigger the receivers' full pass.
  if (a.released === true || b.released === true) merged.released = true;
  // Unkeyed only when both are: a keyed job hidden in a merged hint must still make the receivers look.
  if (a.unkeyed === true && b.unkeyed === true) merged.unkeyed = true;
  return merged;
}

/**
 * The per-coordinator throttle described above.
 *
 * @example
 * ```ts
 * const c = new HintCoalescer({ windowMs: 5, clock: systemClock, send: (h) => transport.publish(h) });
 * for (let i = 0; i < 10_000; i++) c.push({ priority: i % 100, source: "a" }); // two messages in all
 * ```
 */
export class HintCoalescer {
  private readonly options: HintCoalescerOptions;
  private pending: WakeupHint | undefined;
  private timer: TimerHandle | undefined;
  private closed = false;

  constructor(options: HintCoalescerOptions) {
    this.options = options;
  }

  /**
   * Offers a work hint. Returns true when it was merged into a hint already waiting (it will never be sent
   * on its own; callers count it as suppressed), false when it was sent or became the pending hint.
   */
  push(hint: WakeupHint): boolean {
    if (this.closed) return false;
    if (this.options.windowMs <= 0) {
      this.options.send(hint);
      return false;
    }
    if (this.timer === undefined) {
      this.options.send(hint);
      this.openWindow();
      return false;
    }
    if (this.pending === undefined) {
      this.pending = mergeHints(hint, hint);
      return false;
    }
    this.pending = mergeHints(this.pending, hint);
    return true;
  }

  /**
   * Offers a work hint that the caller will send itself when told to (a notify folded into an insert).
   * Returns true on the leading edge: the caller sends it now and a window opens as though it had been
   * sent here. Returns false when it was merged into the pending hint, which this coalescer sends when its
   * window closes (callers count it as suppressed).
   */
  pushFolded(hint: WakeupHint): boolean {
    if (this.closed) return false;
    if (this.options.windowMs <= 0) return true;
    if (this.timer === undefined) {
      this.openWindow();
      return true;
    }
    this.pending = this.pending === undefined ? mergeHints(hint, hint) : mergeHints(this.pending, hint);
    return false;
  }

  /** Whether a merged hint is waiting for its window to close. */
  get hasPending(): boolean {
    return this.pending !== undefined;
  }

  /** Drops the pending hint and cancels the timer; later pushes are ignored. */
  close(): void {
    this.closed = true;
    this.pending = undefined;
    if (this.timer !== undefined) this.options.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  private openWindow(): void {
    this.timer = this.options.clock.setTimeout(() => this.closeWindow(), this.options.windowMs);
  }

  private closeWindow(): void {
    this.timer = undefined;
    const pending = this.pending;
    if (pending === undefined || this.closed) return;
    this.pending = undefined;
    // Sending opens a new window, so a steady stream is still capped at one message per window.
    this.options.send(pending);
    this.openWindow();
  }
}
