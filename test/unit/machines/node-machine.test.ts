import { createActor, SimulatedClock } from "xstate";
import type { AnyActorRef } from "xstate";
import { describe, expect, it, vi } from "vitest";
import { nodeMachine } from "../../../src/machines/node-machine.js";
import { pollerMachine } from "../../../src/machines/poller-machine.js";
import { defaultBreakerConfig } from "../../../src/logic/breaker.js";
import { defaultPollingConfig } from "../../../src/logic/polling-strategy.js";
import { defaultWatchdogConfig } from "../../../src/logic/watchdog-schedule.js";
import type { PollingConfig } from "../../../src/logic/polling-strategy.js";

// The node actor and its children, on one SimulatedClock. Children are found by system id, as the
// runtime finds them.

const T0 = 5_000_000;

function node(concurrency = 3, polling: PollingConfig = defaultPollingConfig, machine = nodeMachine) {
  const clock = new SimulatedClock();
  clock.set(T0);
  const errors: unknown[] = [];
  const actor = createActor(machine, {
    clock,
    input: {
      nodeId: "node-a",
      concurrency,
      polling,
      watchdog: defaultWatchdogConfig,
      now: () => clock.now(),
    },
  });
  actor.subscribe({ error: (e) => errors.push(e) });
  actor.start();
  const get = (systemId: string): AnyActorRef | undefined => actor.system.get(systemId);
  const snap = (systemId: string) =>
    get(systemId)?.getSnapshot() as { value?: unknown; status: string; context: Record<string, unknown> };
  const addBreaker = (service: string) =>
    actor.send({
      type: "ADD_BREAKER",
      input: { service, config: defaultBreakerConfig, now: () => clock.now() },
    });
  return { clock, actor, errors, get, snap, addBreaker, value: () => actor.getSnapshot().value };
}

describe("node machine", () => {
  it("starts running and spawns strategy, poller, slot-i and watchdog-i with those system ids", () => {
    const n = node(3);
    expect(n.value()).toBe("running");
    expect(Object.keys(n.actor.getSnapshot().children)).toEqual([
      "strategy",
      "poller",
      "slot-0",
      "watchdog-0",
      "slot-1",
      "watchdog-1",
      "slot-2",
      "watchdog-2",
    ]);
    for (const id of ["strategy", "poller", "slot-0", "slot-2", "watchdog-0", "watchdog-2"]) {
      expect(n.get(id), id).toBeDefined();
      expect(n.get(id)).toBe(n.actor.getSnapshot().children[id]);
    }
    expect(n.get("slot-3")).toBeUndefined();
    expect(n.get("watchdog-3")).toBeUndefined();
    expect(n.errors).toEqual([]);
  });

  it("each child starts in its idle state with its slot and config from the node's input", () => {
    const polling = { ...defaultPollingConfig, minDelayMs: 1234 };
    const n = node(2, polling);
    expect(n.snap("poller").value).toBe("idle");
    expect(n.snap("poller").context.delayMs).toBe(1234);
    expect(n.snap("strategy").context).toMatchObject({ mode: "normal", delayMs: 1234, lastWorkAt: T0 });
    expect(n.snap("strategy").context.config).toBe(polling);
    for (const slot of [0, 1]) {
      expect(n.snap(`slot-${slot}`).value).toBe("idle");
      expect(n.snap(`slot-${slot}`).context.slot).toBe(slot);
      expect(n.snap(`watchdog-${slot}`).value).toBe("idle");
      expect(n.snap(`watchdog-${slot}`).context).toMatchObject({ slot, config: defaultWatchdogConfig });
    }
  });

  it("children share the node's clock: a watchdog armed through the system fires on clock.increment", () => {
    const n = node(1);
    n.get("watchdog-0")?.send({ type: "ARM", jobId: "7", startedAt: T0, timeoutMs: 1000 });
    expect(n.snap("watchdog-0").value).toBe("watching");
    n.clock.increment(800);
    expect(n.snap("watchdog-0").context.phase).toBe("soft-warning");
    n.clock.increment(200);
    expect(n.snap("watchdog-0").value).toBe("expired");
  });

  it("children take the implementations supplied with provide({ actors })", () => {
    const claim = vi.fn();
    const machine = nodeMachine.provide({
      actors: { poller: pollerMachine.provide({ actions: { claim } }) },
    });
    const n = node(1, defaultPollingConfig, machine);
    n.get("poller")?.send({ type: "START" });
    expect(claim).toHaveBeenCalledTimes(1);
    n.get("poller")?.send({ type: "CLAIMED", claimed: 0, limit: 1, delayMs: 500, mode: "normal" });
    n.clock.increment(500);
    expect(claim).toHaveBeenCalledTimes(2);
  });

  it("ADD_BREAKER spawns breaker-<service> once; a second ADD_BREAKER for it neither throws nor duplicates", () => {
    const n = node(1);
    expect(n.get("breaker-smtp")).toBeUndefined();
    n.addBreaker("smtp");
    const first = n.get("breaker-smtp");
    expect(first).toBeDefined();
    expect(n.snap("breaker-smtp").value).toBe("CLOSED");
    expect(n.snap("breaker-smtp").context.service).toBe("smtp");
    expect(n.actor.getSnapshot().context.breakers).toEqual(["smtp"]);
    const children = Object.keys(n.actor.getSnapshot().children).length;

    n.addBreaker("smtp");
    expect(n.errors).toEqual([]);
    expect(n.actor.getSnapshot().status).toBe("active");
    expect(n.get("breaker-smtp")).toBe(first);
    expect(n.actor.getSnapshot().context.breakers).toEqual(["smtp"]);
    expect(Object.keys(n.actor.getSnapshot().children)).toHaveLength(children);

    n.addBreaker("s3");
    expect(n.actor.getSnapshot().context.breakers).toEqual(["smtp", "s3"]);
    expect(n.get("breaker-s3")).toBeDefined();
    expect(n.get("breaker-s3")).not.toBe(first);
  });

  it("a spawned breaker keeps its state across a repeated ADD_BREAKER", () => {
    const n = node(1);
    n.addBreaker("smtp");
    const breaker = n.get("breaker-smtp");
    for (let i = 0; i < defaultBreakerConfig.failureThreshold; i++) {
      breaker?.send({ type: "RESULT", ok: false, trial: false });
    }
    expect(n.snap("breaker-smtp").value).toBe("OPEN");
    n.addBreaker("smtp");
    expect(n.snap("breaker-smtp").value).toBe("OPEN");
    n.clock.increment(defaultBreakerConfig.openMs);
    expect(n.snap("breaker-smtp").value).toBe("HALF_OPEN");
  });

  it("DRAIN -> draining -> STOPPED -> stopped (final); children are stopped with it", () => {
    const n = node(2);
    const poller = n.get("poller");
    const slot = n.get("slot-1");
    n.actor.send({ type: "DRAIN" });
    expect(n.value()).toBe("draining");
    expect(n.actor.getSnapshot().status).toBe("active");
    // The node's state is the one record of the drain, and it tells the poller.
    expect(poller?.getSnapshot().value).toBe("draining");
    n.actor.send({ type: "STOPPED" });
    expect(n.value()).toBe("stopped");
    expect(n.actor.getSnapshot().status).toBe("done");
    expect(poller?.getSnapshot().status).toBe("stopped");
    expect(slot?.getSnapshot().status).toBe("stopped");
    expect(n.errors).toEqual([]);
  });

  it("DRAIN reaches a poller that is waiting for its next poll: it claims no more", () => {
    const claim = vi.fn();
    const machine = nodeMachine.provide({
      actors: { poller: pollerMachine.provide({ actions: { claim } }) },
    });
    const n = node(1, defaultPollingConfig, machine);
    n.get("poller")?.send({ type: "START" });
    n.get("poller")?.send({ type: "CLAIMED", claimed: 0, limit: 1, delayMs: 500, mode: "normal" });
    expect(n.snap("poller").value).toBe("waiting");
    n.actor.send({ type: "DRAIN" });
    expect(n.snap("poller").value).toBe("draining");
    n.clock.increment(10_000);
    expect(claim).toHaveBeenCalledTimes(1);
    expect(n.errors).toEqual([]);
  });

  it("STOPPED before DRAIN is ignored", () => {
    const n = node(1);
    n.actor.send({ type: "STOPPED" });
    expect(n.value()).toBe("running");
    expect(n.actor.getSnapshot().status).toBe("active");
  });

  it("breakers can still be added while draining", () => {
    const n = node(1);
    n.actor.send({ type: "DRAIN" });
    n.addBreaker("smtp");
    expect(n.get("breaker-smtp")).toBeDefined();
    expect(n.value()).toBe("draining");
  });
});
