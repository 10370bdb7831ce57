import { createActor, SimulatedClock } from "xstate";
import { describe, expect, it, vi } from "vitest";
import { pollerMachine } from "../../../src/machines/poller-machine.js";

// The poller with `claim` and `dispatch` as spies and `hasRoom` / `bufferLow` read from variables the test
// flips (the buffer is not low unless a test says so, so only the claim-ahead tests start a second claim).
// Delays run on xstate's SimulatedClock.

function poller(delayMs = 2000) {
  const clock = new SimulatedClock();
  let room = true;
  let low = false;
  const log: string[] = [];
  const claim = vi.fn(() => void log.push("claim"));
  const dispatch = vi.fn(() => void log.push("dispatch"));
  const machine = pollerMachine.provide({
    actions: { claim, dispatch },
    guards: { hasRoom: () => room, bufferLow: () => low },
  });
  const actor = createActor(machine, { clock, input: { delayMs } }).start();
  return {
    clock,
    actor,
    claim,
    dispatch,
    log,
    setRoom: (r: boolean) => void (room = r),
    setLow: (l: boolean) => void (low = l),
    value: () => actor.getSnapshot().value,
    ctx: () => actor.getSnapshot().context,
    /** Reports a claim result, as the runtime's afterClaim does. */
    claimed: (claimed: number, limit: number, delay = 2000, mode = "normal") =>
      actor.send({ type: "CLAIMED", claimed, limit, delayMs: delay, mode }),
    fail: () => actor.send({ type: "CLAIM_FAILED", error: new Error("connection refused") }),
  };
}

describe("poller: the poll cycle", () => {
  it("starts idle and claims nothing until START", () => {
    const p = poller();
    p.clock.increment(60_000);
    expect(p.value()).toBe("idle");
    expect(p.claim).not.toHaveBeenCalled();
    expect(p.ctx()).toMatchObject({ delayMs: 2000, mode: "normal", polls: 0, wakePending: false });
  });

  it("START -> polling (claim) -> CLAIMED -> dispatching (dispatch) -> waiting", () => {
    const p = poller();
    p.actor.send({ type: "START" });
    expect(p.value()).toBe("polling");
    expect(p.claim).toHaveBeenCalledTimes(1);
    expect(p.ctx().polls).toBe(1);
    p.claimed(3, 10, 1500, "burst");
    expect(p.value()).toBe("waiting");
    expect(p.log).toEqual(["claim", "dispatch"]);
    expect(p.ctx()).toMatchObject({
      lastClaimed: 3,
      lastLimit: 10,
      lastFull: false,
      delayMs: 1500,
      mode: "burst",
      consecutiveErrors: 0,
    });
  });

  it("polls again exactly after the delay the strategy reported", () => {
    const p = poller(2000);
    p.actor.send({ type: "START" });
    p.claimed(0, 10, 700);
    p.clock.increment(699);
    expect(p.value()).toBe("waiting");
    expect(p.claim).toHaveBeenCalledTimes(1);
    p.clock.increment(1);
    expect(p.value()).toBe("polling");
    expect(p.claim).toHaveBeenCalledTimes(2);
    expect(p.ctx().polls).toBe(2);
  });

  it("no room when the delay ends: keeps waiting (re-armed) and claims only once there is room", () => {
    const p = poller();
    p.actor.send({ type: "START" });
    p.claimed(10, 10, 1000);
    p.setRoom(false);
    p.clock.increment(1000);
    expect(p.value()).toBe("waiting");
    p.clock.increment(1000);
    expect(p.claim).toHaveBeenCalledTimes(1);
    p.setRoom(true);
    p.clock.increment(999);
    expect(p.claim).toHaveBeenCalledTimes(1);
    p.clock.increment(1);
    expect(p.value()).toBe("polling");
    expect(p.claim).toHaveBeenCalledTimes(2);
  });

  it("a claim that is still in flight is never doubled by the clock", () => {
    const p = poller(500);
    p.actor.send({ type: "START" });
    p.clock.increment(60_000);
    expect(p.value()).toBe("polling");
    expect(p.claim).toHaveBeenCalledTimes(1);
  });
});

describe("poller: wakeups", () => {
  it("WAKE in waiting polls at once, without waiting for the delay", () => {
    const p = poller();
    p.actor.send({ type: "START" });
    p.claimed(0, 10, 30_000);
    p.actor.send({ type: "WAKE" });
    expect(p.value()).toBe("polling");
    expect(p.claim).toHaveBeenCalledTimes(2);
    expect(p.clock.now()).toBe(0);
  });

  it("WAKE in waiting without room is kept; SLOT_FREED with room then polls", () => {
    const p = poller();
    p.actor.send({ type: "START" });
    p.claimed(2, 10, 30_000); // not full: SLOT_FREED alone would not poll
    p.setRoom(false);
    p.actor.send({ type: "WAKE" });
    expect(p.value()).toBe("waiting");
    expect(p.ctx().wakePending).toBe(true);
    p.setRoom(true);
    p.actor.send({ type: "SLOT_FREED" });
    expect(p.value()).toBe("polling");
    expect(p.claim).toHaveBeenCalledTimes(2);
    expect(p.ctx().wakePending).toBe(false);
  });

  it("WAKE while polling sets wakePending and polls again right after CLAIMED", () => {
    const p = poller();
    p.actor.send({ type: "START" });
    p.actor.send({ type: "WAKE" });
    expect(p.value()).toBe("polling");
    expect(p.ctx().wakePending).toBe(true);
    expect(p.claim).toHaveBeenCalledTimes(1);
    p.claimed(1, 10, 30_000);
    expect(p.value()).toBe("polling");
    expect(p.log).toEqual(["claim", "dispatch", "claim"]);
    expect(p.ctx()).toMatchObject({ wakePending: false, polls: 2 });
  });

  it("WAKE while polling without room at dispatch: waits, keeping the wake for the next SLOT_FREED", () => {
    const p = poller();
    p.actor.send({ type: "START" });
    p.actor.send({ type: "WAKE" });
    p.setRoom(false);
    p.claimed(1, 10, 30_000);
    expect(p.value()).toBe("waiting");
    expect(p.ctx().wakePending).toBe(true);
    p.setRoom(true);
    p.actor.send({ type: "SLOT_FREED" });
    expect(p.claim).toHaveBeenCalledTimes(2);
  });

  it.each([
    { claimed: 10, limit: 10, room: true, polls: true },
    { claimed: 12, limit: 10, room: true, polls: true },
    { claimed: 9, limit: 10, room: true, polls: false },
    { claimed: 0, limit: 0, room: true, polls: false },
    { claimed: 10, limit: 10, room: false, polls: false },
  ])("SLOT_FREED after claiming $claimed/$limit, room $room: polls = $polls", (c) => {
    const p = poller();
    p.actor.send({ type: "START" });
    p.claimed(c.claimed, c.limit, 30_000);
    expect(p.ctx().lastFull).toBe(c.claimed >= c.limit && c.limit > 0);
    p.setRoom(c.room);
    p.actor.send({ type: "SLOT_FREED" });
    expect(p.value()).toBe(c.polls ? "polling" : "waiting");
    expect(p.claim).toHaveBeenCalledTimes(c.polls ? 2 : 1);
  });
});

describe("poller: errors, drain and stop", () => {
  it("CLAIM_FAILED backs off exponentially from 500 ms, capped at 5 s; no claim before the delay", () => {
    const p = poller();
    p.actor.send({ type: "START" });
    const seen: number[] = [];
    for (let i = 1; i <= 8; i++) {
      p.fail();
      expect(p.value()).toBe("waiting");
      expect(p.ctx().consecutiveErrors).toBe(i);
      const delay = p.ctx().delayMs;
      seen.push(delay);
      p.clock.increment(delay - 1);
      expect(p.claim).toHaveBeenCalledTimes(i);
      p.clock.increment(1);
      expect(p.claim).toHaveBeenCalledTimes(i + 1);
    }
    expect(seen).toEqual([500, 1000, 2000, 4000, 5000, 5000, 5000, 5000]);
  });

  it("a successful claim resets the error count; the next failure starts at 500 ms again", () => {
    const p = poller();
    p.actor.send({ type: "START" });
    p.fail();
    p.clock.increment(500);
    p.fail();
    expect(p.ctx()).toMatchObject({ consecutiveErrors: 2, delayMs: 1000 });
    p.clock.increment(1000);
    p.claimed(1, 10, 2000);
    expect(p.ctx()).toMatchObject({ consecutiveErrors: 0, delayMs: 2000 });
    p.clock.increment(2000);
    p.fail();
    expect(p.ctx()).toMatchObject({ consecutiveErrors: 1, delayMs: 500 });
  });

  it("a failed claim forgets the last full batch: SLOT_FREED does not poll", () => {
    const p = poller();
    p.actor.send({ type: "START" });
    p.claimed(10, 10, 2000);
    p.clock.increment(2000);
    p.fail();
    expect(p.ctx().lastFull).toBe(false);
    p.actor.send({ type: "SLOT_FREED" });
    expect(p.value()).toBe("waiting");
    expect(p.claim).toHaveBeenCalledTimes(2);
  });

  it("DRAIN -> draining: no more claims, whatever the clock, wakeups or freed slots", () => {
    const p = poller(500);
    p.actor.send({ type: "START" });
    p.claimed(10, 10, 500);
    p.actor.send({ type: "DRAIN" });
    expect(p.value()).toBe("draining");
    p.clock.increment(10 * 60_000);
    p.actor.send({ type: "WAKE" });
    p.actor.send({ type: "SLOT_FREED" });
    expect(p.value()).toBe("draining");
    expect(p.claim).toHaveBeenCalledTimes(1);
    p.actor.send({ type: "STOP" });
    expect(p.value()).toBe("stopped");
    expect(p.actor.getSnapshot().status).toBe("done");
  });

  it("DRAIN while a claim is in flight: its CLAIMED is ignored (no dispatch)", () => {
    const p = poller();
    p.actor.send({ type: "START" });
    p.actor.send({ type: "DRAIN" });
    p.claimed(5, 10, 500);
    expect(p.value()).toBe("draining");
    expect(p.dispatch).not.toHaveBeenCalled();
  });

  it.each([
    { from: "idle", setup: () => {} },
    { from: "polling", setup: (p: ReturnType<typeof poller>) => p.actor.send({ type: "START" }) },
    {
      from: "waiting",
      setup: (p: ReturnType<typeof poller>) => {
        p.actor.send({ type: "START" });
        p.claimed(0, 10);
      },
    },
  ])("STOP from $from -> stopped (final)", ({ from, setup }) => {
    const p = poller();
    setup(p);
    expect(p.value()).toBe(from);
    p.actor.send({ type: "STOP" });
    expect(p.value()).toBe("stopped");
    expect(p.actor.getSnapshot().status).toBe("done");
  });

  it("DRAIN from idle goes to draining without claiming", () => {
    const p = poller();
    p.actor.send({ type: "DRAIN" });
    p.actor.send({ type: "START" });
    expect(p.value()).toBe("draining");
    expect(p.claim).not.toHaveBeenCalled();
  });
});

describe("poller: known due times", () => {
  it("CLAIMED with a due time sooner than the strategy's delay polls at the due time", () => {
    const p = poller();
    p.actor.send({ type: "START" });
    p.actor.send({
      type: "CLAIMED",
      claimed: 0,
      limit: 10,
      delayMs: 2000,
      mode: "normal",
      at: 0,
      dueAt: 700,
    });
    expect(p.ctx()).toMatchObject({ delayMs: 700, baseDelayMs: 2000, dueAt: 700, waitFrom: 0 });
    p.clock.increment(699);
    expect(p.claim).toHaveBeenCalledTimes(1);
    p.clock.increment(1);
    expect(p.claim).toHaveBeenCalledTimes(2);
  });

  it("a DUE during the wait re-arms it when it ends sooner, and is ignored when it ends later", () => {
    const p = poller();
    p.actor.send({ type: "START" });
    p.actor.send({
      type: "CLAIMED",
      claimed: 0,
      limit: 10,
      delayMs: 2000,
      mode: "normal",
      at: 0,
      dueAt: null,
    });
    p.clock.increment(500);
    p.actor.send({ type: "DUE", dueAt: 2600, at: 500 }); // after the wait's end at 2000
    expect(p.ctx()).toMatchObject({ delayMs: 2000, waitFrom: 0 });
    p.actor.send({ type: "DUE", dueAt: 1200, at: 500 });
    expect(p.ctx()).toMatchObject({ delayMs: 700, dueAt: 1200, waitFrom: 500 });
    p.clock.increment(699);
    expect(p.claim).toHaveBeenCalledTimes(1);
    p.clock.increment(1);
    expect(p.claim).toHaveBeenCalledTimes(2);
  });

  it("a passed due time without room waits the strategy's delay instead of spinning", () => {
    const p = poller();
    p.actor.send({ type: "START" });
    p.setRoom(false);
    p.actor.send({
      type: "CLAIMED",
      claimed: 0,
      limit: 0,
      delayMs: 2000,
      mode: "normal",
      at: 100,
      dueAt: 50,
    });
    expect(p.ctx().delayMs).toBe(0);
    p.clock.increment(0);
    expect(p.value()).toBe("waiting");
    expect(p.ctx()).toMatchObject({ delayMs: 2000, dueAt: null });
    p.setRoom(true);
    p.clock.increment(1999);
    expect(p.claim).toHaveBeenCalledTimes(1);
    p.clock.increment(1);
    expect(p.claim).toHaveBeenCalledTimes(2);
  });

  it("a due time never shortens the error backoff", () => {
    const p = poller();
    p.actor.send({ type: "START" });
    p.actor.send({ type: "CLAIM_FAILED", error: new Error("down"), at: 0 });
    expect(p.ctx()).toMatchObject({ delayMs: 500, dueAt: null, waitFrom: 0 });
  });
});

describe("poller: claim ahead (two claims in flight at most)", () => {
  /** A poller whose first claim came back full and whose second is in flight. */
  function withClaimOut() {
    const p = poller();
    p.actor.send({ type: "START" });
    p.claimed(10, 10, 30_000); // full: a backlog is likely
    p.actor.send({ type: "SLOT_FREED" }); // waiting -> polling
    expect(p.value()).toBe("polling");
    expect(p.ctx().inFlight).toBe(1);
    return p;
  }

  it("a low buffer while a claim is out starts a second claim, and never a third", () => {
    const p = withClaimOut();
    p.actor.send({ type: "SLOT_FREED" });
    expect(p.claim).toHaveBeenCalledTimes(2); // not low yet
    p.setLow(true);
    p.actor.send({ type: "SLOT_FREED" });
    expect(p.value()).toBe("polling");
    expect(p.claim).toHaveBeenCalledTimes(3);
    expect(p.ctx()).toMatchObject({ inFlight: 2, polls: 3 });
    p.actor.send({ type: "SLOT_FREED" });
    expect(p.claim).toHaveBeenCalledTimes(3);
    expect(p.ctx().inFlight).toBe(2);
  });

  it.each([
    { room: false, full: true, starts: false },
    { room: true, full: false, starts: false },
    { room: true, full: true, starts: true },
  ])("claims ahead only with room left and a full last claim: room $room, full $full", (c) => {
    const p = poller();
    p.actor.send({ type: "START" });
    p.claimed(c.full ? 10 : 9, 10, 30_000);
    p.actor.send({ type: "WAKE" }); // waiting -> polling, whatever the last claim
    p.setLow(true);
    p.setRoom(c.room);
    p.actor.send({ type: "SLOT_FREED" });
    expect(p.ctx().inFlight).toBe(c.starts ? 2 : 1);
  });

  it("each CLAIMED is handled on its own: the first dispatches and stays, the last leaves polling", () => {
    const p = withClaimOut();
    p.setLow(true);
    p.actor.send({ type: "SLOT_FREED" });
    p.log.length = 0;
    p.claimed(7, 10, 30_000);
    expect(p.value()).toBe("polling");
    expect(p.log).toEqual(["dispatch"]);
    expect(p.ctx()).toMatchObject({ inFlight: 1, lastClaimed: 7, lastFull: false });
    p.claimed(5, 5, 1000);
    expect(p.value()).toBe("waiting");
    expect(p.log).toEqual(["dispatch", "dispatch"]);
    expect(p.ctx()).toMatchObject({ inFlight: 0, lastClaimed: 5, lastFull: true, delayMs: 1000 });
  });

  it("after a full first landing, a claim can start ahead again while the second is out", () => {
    const p = withClaimOut();
    p.setLow(true);
    p.actor.send({ type: "SLOT_FREED" });
    p.claimed(10, 10, 30_000);
    expect(p.ctx().inFlight).toBe(1);
    p.actor.send({ type: "SLOT_FREED" });
    expect(p.ctx().inFlight).toBe(2);
    expect(p.claim).toHaveBeenCalledTimes(4);
  });

  it("a failed claim with another out waits for it; the backoff starts only when the last fails", () => {
    const p = withClaimOut();
    p.setLow(true);
    p.actor.send({ type: "SLOT_FREED" });
    p.fail();
    expect(p.value()).toBe("polling");
    expect(p.ctx()).toMatchObject({ inFlight: 1, consecutiveErrors: 1, lastFull: false });
    p.actor.send({ type: "SLOT_FREED" }); // the failure forgot the backlog: no claim ahead
    expect(p.claim).toHaveBeenCalledTimes(3);
    p.fail();
    expect(p.value()).toBe("waiting");
    expect(p.ctx()).toMatchObject({ inFlight: 0, consecutiveErrors: 2, delayMs: 1000 });
  });

  it("a failed claim with another out that then succeeds: no backoff, errors reset", () => {
    const p = withClaimOut();
    p.setLow(true);
    p.actor.send({ type: "SLOT_FREED" });
    p.fail();
    p.claimed(3, 10, 700);
    expect(p.value()).toBe("waiting");
    expect(p.ctx()).toMatchObject({ inFlight: 0, consecutiveErrors: 0, delayMs: 700 });
  });

  it("a wake during two claims polls once more after the last lands", () => {
    const p = withClaimOut();
    p.setLow(true);
    p.actor.send({ type: "SLOT_FREED" });
    p.actor.send({ type: "WAKE" });
    p.claimed(10, 10, 30_000);
    expect(p.ctx()).toMatchObject({ inFlight: 1, wakePending: true });
    p.setLow(false);
    p.claimed(10, 10, 30_000);
    expect(p.value()).toBe("polling");
    expect(p.ctx()).toMatchObject({ inFlight: 1, wakePending: false, polls: 4 });
  });
});
