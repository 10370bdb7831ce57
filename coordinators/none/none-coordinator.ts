/**
 * The coordinator that sends nothing: no cross-node wakeups at all (`none`, and what `auto` falls back to
 * without pg-listen). Every node finds new work on its next poll,
 * which is correct because the store, not the coordinator, decides who runs what. It never connects, so
 * it reports `connected: false`; the runtime treats that as "poll on your own schedule".
 */
import type { Coordinator, CoordinatorStatus, WakeupHint } from "../spi.js";

/**
 * A coordinator that does nothing.
 *
 * @example
 * ```ts
 * const c = new NoneCoordinator();
 * await c.start();
 * c.notifyNewWork({ priority: 50, source: "a" }); // no-op
 * ```
 */
export class NoneCoordinator implements Coordinator {
  /** Resolves at once: there is nothing to connect to. */
  async start(): Promise<void> {}

  /** Ignores the hint. */
  notifyNewWork(_hint: WakeupHint): void {}

  /** Never calls the listener; returns a no-op unsubscribe. */
  onWakeup(_listener: (hint: WakeupHint) => void): () => void {
    return () => {};
  }

  /** Never emits; returns a no-op unsubscribe. */
  on(_event: string, _listener: (...args: never[]) => void): () => void {
    return () => {};
  }

  /** Always disconnected with zero counters. */
  status(): CoordinatorStatus {
    return {
      transport: "none",
      connected: false,
      published: 0,
      received: 0,
      suppressed: 0,
      malformed: 0,
      reconnects: 0,
      dropped: 0,
    };
  }

  /** Nothing to release. */
  async close(): Promise<void> {}
}
