/**
 * The behaviour every transport shares, written once so the contract suite tests one implementation of it:
 * listener bookkeeping, counters, self-suppression, coalescing, the once-per-outage disconnect report, and
 * idempotent start/close. A transport subclass only moves bytes: it implements {@link BaseCoordinator.open},
 * {@link BaseCoordinator.send} and {@link BaseCoordinator.shutdown}, hands every raw message it receives to
 * {@link BaseCoordinator.receive}, and reports its link with `markConnected` / `markDisconnected`.
 *
 * The rules it enforces are the SPI's promises to the runtime: publishing never throws and never waits
 * (a wakeup is an optimisation, and the enqueue that caused it has already committed), nothing is queued
 * while disconnected (the node re-polls on reconnect instead), and one outage produces one warning.
 */
import type { Logger } from "../src/core/logger.js";
import { HintCoalescer } from "./coalescer.js";
import {
  resolveCoordinatorOptions,
  type CoordinatorOptions,
  type ResolvedCoordinatorOptions,
} from "./coordinator-options.js";
import { decodeHint, encodeHint } from "./hint-codec.js";
import type { Coordinator, CoordinatorEvents, CoordinatorStatus, WakeupHint } from "./spi.js";

type Listeners = { [E in keyof CoordinatorEvents]: Set<CoordinatorEvents[E]> };

/**
 * An abstract coordinator; see the module comment for what a subclass provides.
 *
 * @example
 * ```ts
 * class LoopbackCoordinator extends BaseCoordinator {
 *   constructor(options: CoordinatorOptions) { super("loopback", options); }
 *   protected async open() { this.markConnected(); }
 *   protected send(payload: string) { queueMicrotask(() => this.receive(payload)); return true; }
 *   protected async shutdown() {}
 * }
 * ```
 */
export abstract class BaseCoordinator implements Coordinator {
  /** The resolved shared options (node id, logger, clock, timing). */
  protected readonly options: ResolvedCoordinatorOptions;
  /** The logger, bound to this transport and node. */
  protected readonly log: Logger;
  private readonly transport: string;
  private readonly coalescer: HintCoalescer;
  private readonly wakeupListeners = new Set<(hint: WakeupHint) => void>();
  private readonly listeners: Listeners = {
    connected: new Set(),
    disconnected: new Set(),
    malformed: new Set(),
  };
  private readonly counters = {
    published: 0,
    received: 0,
    suppressed: 0,
    malformed: 0,
    reconnects: 0,
    dropped: 0,
  };
  private connectedNow = false;
  /** True between the first report of an outage and the next connection: keeps the report to one. */
  private outageReported = false;
  private everConnected = false;
  private startPromise: Promise<void> | undefined;
  private closePromise: Promise<void> | undefined;

  protected constructor(transport: string, options: CoordinatorOptions) {
    this.transport = transport;
    this.options = resolveCoordinatorOptions(options);
    this.log = this.options.logger.child({ coordinator: transport, nodeId: this.options.nodeId });
    this.coalescer = new HintCoalescer({
      windowMs: this.options.coalesceMs,
      clock: this.options.clock,
      send: (hint) => this.publishNow(hint),
    });
  }

  /**
   * Connects. Resolves when connected, or when the first attempt failed or `startTimeoutMs` passed, with
   * reconnection left running in the background. Never rejects; calling it again returns the same promise.
   */
  start(): Promise<void> {
    this.startPromise ??= this.closed ? Promise.resolve() : this.openWithDeadline();
    return this.startPromise;
  }

  /** Publishes a hint (see {@link Coordinator.notifyNewWork}). Never throws, never blocks. */
  notifyNewWork(hint: WakeupHint): void {
    try {
      if (this.closed) return;
      if (!this.connectedNow) {
        this.counters.dropped++;
        return;
      }
      // Cancel and finished hints carry job ids that merging would lose; their publishers batch them.
      if (hint.kind === "cancel" || hint.kind === "finished") this.publishNow(hint);
      else if (this.coalescer.push(hint)) this.counters.suppressed++;
    } catch (error) {
      this.log.debug("coordinator: dropping a hint that failed to publish", { error: String(error) });
      this.counters.dropped++;
    }
  }

  /** Subscribes to hints from other nodes; returns the unsubscribe function. */
  onWakeup(listener: (hint: WakeupHint) => void): () => void {
    this.wakeupListeners.add(listener);
    return () => this.wakeupListeners.delete(listener);
  }

  /** Subscribes to a lifecycle event; returns the unsubscribe function. */
  on<E extends keyof CoordinatorEvents>(event: E, listener: CoordinatorEvents[E]): () => void {
    const set = this.listeners[event] as Set<CoordinatorEvents[E]>;
    set.add(listener);
    return () => set.delete(listener);
  }

  /** Counters and connection state. */
  status(): CoordinatorStatus {
    return { transport: this.transport, connected: this.connectedNow, ...this.counters };
  }

  /** Disconnects and releases sockets and timers. Idempotent: later calls return the first call's promise. */
  close(): Promise<void> {
    this.closePromise ??= (async () => {
      this.coalescer.close();
      this.connectedNow = false;
      this.wakeupListeners.clear();
      for (const set of Object.values(this.listeners)) set.clear();
      try {
        await this.shutdown();
      } catch (error) {
        this.log.debug("coordinator: error while closing", { error: String(error) });
      }
    })();
    return this.closePromise;
  }

  /** Whether {@link BaseCoordinator.close} has been called. Transports check it in their callbacks. */
  protected get closed(): boolean {
    return this.closePromise !== undefined;
  }

  /** Whether the transport is connected now. */
  protected get isConnected(): boolean {
    return this.connectedNow;
  }

  /** Counts a hint published outside {@link BaseCoordinator.send} (the postgres transactional path). */
  protected countPublished(): void {
    this.counters.published++;
  }

  /**
   * Coalescing for a hint the caller publishes itself (folded into its insert): true when it is the
   * leading edge and should go out now, false when it was merged into the pending hint (counted as
   * suppressed; the coalescer publishes it at the window's end).
   */
  protected coalesceFolded(hint: WakeupHint): boolean {
    if (this.closed) return false;
    if (this.coalescer.pushFolded(hint)) {
      this.counters.published++;
      return true;
    }
    this.counters.suppressed++;
    return false;
  }

  /** Opens the transport; see {@link BaseCoordinator.start} for when it must resolve. May reject. */
  protected abstract open(): Promise<void>;

  /**
   * Sends an encoded hint. Must not block; returns false when the transport dropped it (backpressure,
   * a connection caught mid-failure), which is counted. May throw; the base class counts that as dropped.
   */
  protected abstract send(payload: string, hint: WakeupHint): boolean;

  /** Releases everything the transport holds. Called once, by {@link BaseCoordinator.close}. */
  protected abstract shutdown(): Promise<void>;

  /** Hands a raw message from the channel to the listeners: decodes, counts, suppresses own hints. */
  protected receive(raw: unknown): void {
    if (this.closed) return;
    const hint = decodeHint(raw);
    if (hint === null) {
      this.counters.malformed++;
      this.log.debug("coordinator: ignored a message that is not a pawl hint");
      this.emit("malformed", raw);
      return;
    }
    if (hint.source === this.options.nodeId) {
      this.counters.suppressed++;
      return;
    }
    this.counters.received++;
    for (const listener of [...this.wakeupListeners]) {
      try {
        listener(hint);
      } catch (error) {
        this.log.error("coordinator: a wakeup listener threw", { error: String(error) });
      }
    }
  }

  /** Reports a (re)connection: emits `connected` so the node polls once to catch up. Idempotent. */
  protected markConnected(): void {
    if (this.closed || this.connectedNow) return;
    this.connectedNow = true;
    if (this.outageReported) {
      this.outageReported = false;
      if (this.everConnected) this.counters.reconnects++;
      this.log.info(
        this.everConnected ? "coordinator: connected again after an outage" : "coordinator: connected",
      );
    }
    this.everConnected = true;
    this.emit("connected");
  }

  /**
   * Reports a lost (or never made) connection: warns (unless `warn` is false, when the transport has
   * said why itself) and emits `disconnected` once per outage.
   */
  protected markDisconnected(error: unknown, warn = true): void {
    if (this.closed) return;
    this.connectedNow = false;
    if (this.outageReported) return;
    this.outageReported = true;
    if (warn)
      this.log.warn("coordinator: disconnected; wakeups are off until it reconnects, polling continues", {
        error: error instanceof Error ? error.message : String(error),
      });
    this.emit("disconnected", error);
  }

  /**
   * Runs `open()` but gives up waiting after `startTimeoutMs`, so a black-holed server cannot hold up the
   * node's startup. Real time on purpose: this bounds network I/O, which a test's manual clock does not
   * drive. The open keeps going in the background and reports through markConnected/markDisconnected.
   */
  private async openWithDeadline(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const opened = this.open().then(
      () => true,
      (error: unknown) => {
        this.markDisconnected(error);
        return true;
      },
    );
    const deadline = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), this.options.startTimeoutMs);
      timer.unref();
    });
    const finished = await Promise.race([opened, deadline]);
    clearTimeout(timer);
    if (!this.connectedNow && !this.outageReported) {
      this.markDisconnected(
        new Error(
          finished
            ? "the first connection attempt failed; still trying"
            : `not connected within ${this.options.startTimeoutMs} ms; still trying`,
        ),
      );
    }
  }

  private publishNow(hint: WakeupHint): void {
    if (!this.connectedNow || this.closed) {
      this.counters.dropped++;
      return;
    }
    const payload = encodeHint(hint);
    if (payload === null) {
      this.log.debug("coordinator: dropping a hint that cannot be encoded", { priority: hint.priority });
      this.counters.dropped++;
      return;
    }
    let sent = false;
    try {
      sent = this.send(payload, hint);
    } catch (error) {
      this.log.debug("coordinator: send failed", { error: String(error) });
    }
    if (sent) this.counters.published++;
    else this.counters.dropped++;
  }

  private emit<E extends keyof CoordinatorEvents>(event: E, ...args: Parameters<CoordinatorEvents[E]>): void {
    for (const listener of [...this.listeners[event]]) {
      try {
        (listener as (...a: Parameters<CoordinatorEvents[E]>) => void)(...args);
      } catch (error) {
        this.log.error(`coordinator: a ${event} listener threw`, { error: String(error) });
      }
    }
  }
}
