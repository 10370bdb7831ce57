/**
 * The in-memory twin of the network coordinators: nodes in one process that join the same named bus
 * wake each other. It follows the same contract (asynchronous delivery, self-suppression, coalescing,
 * outages that drop messages and end with a `connected` event), so runtime tests can exercise multi-node
 * behaviour without a server, and {@link InMemoryCoordinator.setConnected} simulates an outage on demand.
 */
import { BaseCoordinator } from "../base-coordinator.js";
import type { CoordinatorOptions } from "../coordinator-options.js";
import { joinBus, leaveBus, type BusMember, type InMemoryBus } from "./in-memory-bus.js";
import { validateInMemoryConfig, type InMemoryCoordinatorConfig } from "./in-memory-config.js";

/**
 * A coordinator on a process-wide in-memory bus.
 *
 * @example
 * ```ts
 * const a = new InMemoryCoordinator({ transport: "in-memory", bus: "t1" }, { nodeId: "a" });
 * const b = new InMemoryCoordinator({ transport: "in-memory", bus: "t1" }, { nodeId: "b" });
 * b.onWakeup((hint) => console.log(hint.source)); // "a"
 * await Promise.all([a.start(), b.start()]);
 * a.notifyNewWork({ priority: 50, source: "a" });
 * ```
 */
export class InMemoryCoordinator extends BaseCoordinator {
  private readonly config: InMemoryCoordinatorConfig;
  private bus: InMemoryBus | undefined;
  /** The simulated link; messages neither leave nor arrive while it is down. */
  private linkUp = true;
  private readonly member: BusMember = {
    deliver: (raw) => {
      if (this.linkUp) this.receive(raw);
    },
  };

  constructor(config: InMemoryCoordinatorConfig, options: CoordinatorOptions) {
    super("in-memory", options);
    this.config = validateInMemoryConfig(config);
  }

  /** The name of the bus this coordinator joined. */
  get busName(): string {
    return this.config.bus;
  }

  /**
   * Simulates losing (`false`) or regaining (`true`) the link, for fault tests: while down, hints are
   * dropped both ways and the usual `disconnected` / `connected` events fire.
   */
  setConnected(up: boolean): void {
    this.linkUp = up;
    if (this.bus === undefined || this.closed) return;
    if (up) this.markConnected();
    else this.markDisconnected(new Error("simulated outage"));
  }

  protected async open(): Promise<void> {
    if (this.closed) return;
    this.bus = joinBus(this.config.bus, this.member);
    if (this.linkUp) this.markConnected();
    else this.markDisconnected(new Error("simulated outage"));
  }

  protected send(payload: string): boolean {
    if (!this.linkUp || this.bus === undefined) return false;
    this.bus.publish(payload);
    return true;
  }

  protected async shutdown(): Promise<void> {
    if (this.bus !== undefined) leaveBus(this.config.bus, this.member);
    this.bus = undefined;
  }
}
