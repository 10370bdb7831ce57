/**
 * Process-wide named buses for the in-memory coordinator. The registry hangs off `globalThis` under a
 * registered symbol so that even two copies of this module (a bundled and an unbundled pawl, say) share
 * it: "process-wide" must really mean the process. Buses are removed when their last member leaves.
 */

/** A participant on a bus: the in-memory coordinator. */
export interface BusMember {
  /** Called (asynchronously) with every message published on the bus, including the member's own. */
  deliver(raw: unknown): void;
}

/** One named bus: a set of members and a fan-out publish. */
export class InMemoryBus {
  private readonly members = new Set<BusMember>();

  /** Adds a member. */
  join(member: BusMember): void {
    this.members.add(member);
  }

  /** Removes a member; returns whether the bus is now empty. */
  leave(member: BusMember): boolean {
    this.members.delete(member);
    return this.members.size === 0;
  }

  /**
   * Delivers `raw` to every member in a later microtask, never in the publisher's stack: like a network,
   * a publish returns before anyone hears it, which flushes out code that assumes synchronous delivery.
   */
  publish(raw: unknown): void {
    for (const member of this.members) queueMicrotask(() => member.deliver(raw));
  }
}

const registryKey = Symbol.for("pawl.coordinators.in-memory.buses");

function registry(): Map<string, InMemoryBus> {
  const holder = globalThis as { [registryKey]?: Map<string, InMemoryBus> };
  holder[registryKey] ??= new Map();
  return holder[registryKey];
}

/** Returns the bus with this name, creating it on first use. */
export function joinBus(name: string, member: BusMember): InMemoryBus {
  const buses = registry();
  let bus = buses.get(name);
  if (bus === undefined) {
    bus = new InMemoryBus();
    buses.set(name, bus);
  }
  bus.join(member);
  return bus;
}

/** Removes a member from a bus, dropping the bus when it empties. */
export function leaveBus(name: string, member: BusMember): void {
  const bus = registry().get(name);
  if (bus?.leave(member)) registry().delete(name);
}

/**
 * Puts an arbitrary message on a bus, bypassing the hint codec: how tests play a foreign or corrupt
 * publisher. A bus without members drops it.
 *
 * @example
 * ```ts
 * publishRawInMemory("test-bus", "not a hint");
 * ```
 */
export function publishRawInMemory(busName: string, raw: unknown): void {
  registry().get(busName)?.publish(raw);
}
