import { createActor, SimulatedClock } from "xstate";
import { describe, expect, it, vi } from "vitest";
import { breakerMachine } from "../../../src/machines/breaker-machine.js";
import { breakerAllow } from "../../../src/logic/breaker.js";
import type { BreakerConfig } from "../../../src/logic/breaker.js";

// The breaker on xstate's SimulatedClock. Admissions are decided as the runtime decides them: the pure
// breakerAllow over the actor's snapshot; an admitted trial goes back to the actor as ADMIT { trial }.

const T0 = 1_000_000;
const cfg: BreakerConfig = {
  failureThreshold: 3,
  failureRate: 0.5,
  minimumCalls: 10,
  windowMs: 60_000,
  openMs: 30_000,
  halfOpenTrials: 1,
};

function breaker(config: BreakerConfig = cfg) {
  const clock = new SimulatedClock();
  clock.set(T0);
  const reportChange = vi.fn((_: unknown, _p: { service: string; to: string }) => {});
  const actor = createActor(breakerMachine.provide({ actions: { reportChange } }), {
    clock,
    input: { service: "smtp", config, now: () => clock.now() },
  }).start();
  const snap = () => actor.getSnapshot().context.breaker;
  return {
    clock,
    actor,
    reportChange,
    snap,
    value: () => actor.getSnapshot().value,
    result: (ok: boolean, trial = false) => actor.send({ type: "RESULT", ok, trial }),
    /** What the runtime's breakerRefuses + admitBreaker do for one job. */
    admit: (now = clock.now()) => {
      const d = breakerAllow(snap(), now, config);
      actor.send({ type: "ADMIT", trial: d.allowed && d.trial });
      return d;
    },
    /** The states reported, with consecutive repeats collapsed (the runtime reports changes only). */
    changes: () =>
      reportChange.mock.calls.map(([, p]) => p.to).filter((to, i, all) => i === 0 || all[i - 1] !== to),
  };
}

function trip(b: ReturnType<typeof breaker>): void {
  for (let i = 0; i < cfg.failureThreshold; i++) b.result(false);
}

describe("breaker machine", () => {
  it("starts CLOSED and reports it, for the service it guards", () => {
    const b = breaker();
    expect(b.value()).toBe("CLOSED");
    expect(b.reportChange).toHaveBeenCalledTimes(1);
    expect(b.reportChange.mock.calls[0]?.[1]).toEqual({ service: "smtp", to: "CLOSED" });
    expect(b.snap()).toMatchObject({ state: "CLOSED", outcomes: [], openedAt: null, transitions: 0 });
  });

  it("CLOSED calls pass through breakerAllow without changing the machine", () => {
    const b = breaker();
    const d = b.admit();
    expect(d).toMatchObject({ allowed: true, trial: false });
    expect(b.value()).toBe("CLOSED");
    expect(b.changes()).toEqual(["CLOSED"]);
  });

  it("failureThreshold failures open it: OPEN with reportChange and openedAt = now", () => {
    const b = breaker();
    b.result(false);
    b.clock.increment(100);
    b.result(true);
    b.result(false);
    expect(b.value()).toBe("CLOSED");
    expect(b.snap().outcomes).toHaveLength(3);
    b.clock.increment(100);
    b.result(false);
    expect(b.value()).toBe("OPEN");
    expect(b.snap()).toMatchObject({ state: "OPEN", openedAt: T0 + 200, outcomes: [], transitions: 1 });
    expect(b.changes()).toEqual(["CLOSED", "OPEN"]);
    expect(b.reportChange.mock.calls.at(-1)?.[1]).toEqual({ service: "smtp", to: "OPEN" });
  });

  it("a failure rate over minimumCalls opens it too", () => {
    const b = breaker({ ...cfg, failureThreshold: 100, minimumCalls: 4 });
    b.result(true);
    b.result(true);
    b.result(false);
    expect(b.value()).toBe("CLOSED");
    b.result(false); // 2 of 4 = 50 %
    expect(b.value()).toBe("OPEN");
  });

  it("failures older than windowMs are forgotten", () => {
    const b = breaker();
    b.result(false);
    b.result(false);
    b.clock.increment(cfg.windowMs);
    b.result(false);
    expect(b.value()).toBe("CLOSED");
    expect(b.snap().outcomes).toEqual([{ at: T0 + cfg.windowMs, ok: false }]);
  });

  it("OPEN refuses calls with the time left; after openMs on the clock it moves to HALF_OPEN", () => {
    const b = breaker();
    trip(b);
    b.clock.increment(10_000);
    const refused = breakerAllow(b.snap(), b.clock.now(), cfg);
    expect(refused).toMatchObject({ allowed: false, retryInMs: 20_000 });
    b.clock.increment(19_999);
    expect(b.value()).toBe("OPEN");
    b.clock.increment(1);
    expect(b.value()).toBe("HALF_OPEN");
    expect(b.snap()).toMatchObject({
      state: "HALF_OPEN",
      trialsInFlight: 0,
      trialSuccesses: 0,
      transitions: 2,
    });
    expect(b.changes()).toEqual(["CLOSED", "OPEN", "HALF_OPEN"]);
  });

  it("HALF_OPEN: ADMIT takes the trial; a second call is refused; a good trial closes it", () => {
    const b = breaker();
    trip(b);
    b.clock.increment(cfg.openMs);
    const d = b.admit();
    expect(d).toMatchObject({ allowed: true, trial: true });
    expect(b.value()).toBe("HALF_OPEN");
    expect(b.snap().trialsInFlight).toBe(1);
    expect(breakerAllow(b.snap(), b.clock.now(), cfg)).toMatchObject({
      allowed: false,
      retryInMs: cfg.openMs,
    });
    b.result(true, true);
    expect(b.value()).toBe("CLOSED");
    expect(b.snap()).toMatchObject({ state: "CLOSED", outcomes: [], openedAt: null, trialsInFlight: 0 });
    expect(b.changes()).toEqual(["CLOSED", "OPEN", "HALF_OPEN", "CLOSED"]);
  });

  it("a failed trial opens it again, for a fresh openMs from the failure", () => {
    const b = breaker();
    trip(b);
    b.clock.increment(cfg.openMs);
    b.admit();
    b.clock.increment(5000);
    b.result(false, true);
    expect(b.value()).toBe("OPEN");
    expect(b.snap().openedAt).toBe(T0 + cfg.openMs + 5000);
    b.clock.increment(cfg.openMs - 1);
    expect(b.value()).toBe("OPEN");
    b.clock.increment(1);
    expect(b.value()).toBe("HALF_OPEN");
    expect(b.changes()).toEqual(["CLOSED", "OPEN", "HALF_OPEN", "OPEN", "HALF_OPEN"]);
  });

  it("two trials needed: one success keeps it HALF_OPEN, the second closes it", () => {
    const b = breaker({ ...cfg, halfOpenTrials: 2 });
    trip(b);
    b.clock.increment(cfg.openMs);
    expect(b.admit()).toMatchObject({ allowed: true, trial: true });
    expect(b.admit()).toMatchObject({ allowed: true, trial: true });
    expect(b.snap().trialsInFlight).toBe(2);
    b.result(true, true);
    expect(b.value()).toBe("HALF_OPEN");
    expect(b.snap()).toMatchObject({ trialSuccesses: 1, trialsInFlight: 1 });
    b.result(true, true);
    expect(b.value()).toBe("CLOSED");
  });

  it("ADMIT is applied on the actor's own clock: a decision taken on a clock ahead of it takes no trial while it is OPEN", () => {
    const b = breaker();
    trip(b);
    const d = b.admit(T0 + cfg.openMs); // decided as if the window had passed
    expect(d).toMatchObject({ allowed: true, trial: true });
    expect(b.value()).toBe("OPEN");
    expect(b.snap().trialsInFlight).toBe(0);
    b.clock.increment(cfg.openMs);
    expect(b.value()).toBe("HALF_OPEN");
    expect(b.snap().trialsInFlight).toBe(0);
  });

  it("late results while OPEN are ignored and do not push the HALF_OPEN move back", () => {
    const b = breaker();
    trip(b);
    b.clock.increment(20_000);
    b.result(false);
    b.result(true);
    expect(b.value()).toBe("OPEN");
    expect(b.snap().openedAt).toBe(T0);
    b.clock.increment(10_000);
    expect(b.value()).toBe("HALF_OPEN");
  });

  it("non-trial results in HALF_OPEN are ignored", () => {
    const b = breaker();
    trip(b);
    b.clock.increment(cfg.openMs);
    b.result(false, false);
    expect(b.value()).toBe("HALF_OPEN");
    expect(b.snap().trialsInFlight).toBe(0);
  });

  it("RELEASE frees a HALF_OPEN trial slot without counting a result", () => {
    const b = breaker();
    trip(b);
    b.clock.increment(cfg.openMs);
    expect(b.value()).toBe("HALF_OPEN");
    const d = breakerAllow(b.snap(), b.clock.now(), cfg);
    expect(d.allowed && d.trial).toBe(true);
    b.actor.send({ type: "ADMIT", trial: true });
    expect(b.snap().trialsInFlight).toBe(1);
    expect(breakerAllow(b.snap(), b.clock.now(), cfg).allowed).toBe(false);
    b.actor.send({ type: "RELEASE", trial: true });
    expect(b.value()).toBe("HALF_OPEN");
    expect(b.snap()).toMatchObject({ trialsInFlight: 0, trialSuccesses: 0 });
    expect(breakerAllow(b.snap(), b.clock.now(), cfg).allowed).toBe(true);
  });

  it("an admission decided before results that opened the breaker does not close it (applied to the current snapshot)", () => {
    const b = breaker();
    const decidedEarly = breakerAllow(b.snap(), b.clock.now(), cfg); // CLOSED: allowed, not a trial
    trip(b);
    expect(b.value()).toBe("OPEN");
    b.actor.send({ type: "ADMIT", trial: decidedEarly.allowed && decidedEarly.trial });
    expect(b.value()).toBe("OPEN");
    expect(b.snap().openedAt).toBe(T0);
  });

  it("a trial admission arriving after the breaker closed counts no trial", () => {
    const b = breaker();
    trip(b);
    b.clock.increment(cfg.openMs);
    const first = b.admit();
    const second = breakerAllow(b.snap(), b.clock.now(), { ...cfg, halfOpenTrials: 2 });
    b.result(true, first.allowed && first.trial);
    expect(b.value()).toBe("CLOSED");
    b.actor.send({ type: "ADMIT", trial: second.allowed && second.trial });
    expect(b.value()).toBe("CLOSED");
    expect(b.snap().trialsInFlight).toBe(0);
  });
});
