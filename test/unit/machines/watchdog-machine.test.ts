import { createActor, SimulatedClock } from "xstate";
import { describe, expect, it, vi } from "vitest";
import { watchdogMachine } from "../../../src/machines/watchdog-machine.js";
import { defaultWatchdogConfig } from "../../../src/logic/watchdog-schedule.js";
import type { WatchdogConfig, WatchdogStep } from "../../../src/logic/watchdog-schedule.js";

// The watchdog driven by xstate's SimulatedClock: no real timers, no sleeps. `reportStep` is a spy that
// also records the simulated time at which each step fired.
//
// SimulatedClock quirk (xstate 5.33): a timer set by a timer that fired during `increment(ms)` is not
// flushed when the fired one was the last in that flush, even if it is already due, and it starts at the
// advanced time. So one long `increment` fires only the first of a chain of steps. `advance` moves the
// clock 1 ms at a time, so every step fires at its own due time.
function advance(clock: SimulatedClock, ms: number): void {
  for (let i = 0; i < ms; i++) clock.increment(1);
}

const T0 = 1_000_000;

interface Fired {
  firedAt: number;
  jobId: string;
  kind: WatchdogStep["kind"];
  at: number;
}

function watchdog(config: WatchdogConfig = defaultWatchdogConfig) {
  const clock = new SimulatedClock();
  clock.set(T0);
  const fired: Fired[] = [];
  const reportStep = vi.fn((_: unknown, p: { jobId: string; step: WatchdogStep }) => {
    fired.push({ firedAt: clock.now(), jobId: p.jobId, kind: p.step.kind, at: p.step.at });
  });
  const actor = createActor(watchdogMachine.provide({ actions: { reportStep } }), {
    clock,
    input: { slot: 3, config, now: () => clock.now() },
  });
  actor.start();
  return {
    clock,
    actor,
    reportStep,
    fired,
    arm: (jobId: string, timeoutMs: number, startedAt = clock.now()) =>
      actor.send({ type: "ARM", jobId, startedAt, timeoutMs }),
    value: () => actor.getSnapshot().value,
    ctx: () => actor.getSnapshot().context,
  };
}

describe("watchdog machine", () => {
  it("starts idle with an empty schedule", () => {
    const w = watchdog();
    expect(w.value()).toBe("idle");
    expect(w.ctx()).toMatchObject({ slot: 3, jobId: null, steps: [], next: 0, phase: null });
    w.clock.increment(60 * 60_000);
    expect(w.reportStep).not.toHaveBeenCalled();
  });

  it("default config: soft warning at 80 %, then hard timeout at the deadline -> expired", () => {
    const w = watchdog();
    w.arm("job-1", 1000);
    expect(w.value()).toBe("watching");
    expect(w.ctx()).toMatchObject({
      jobId: "job-1",
      startedAt: T0,
      deadline: T0 + 1000,
      next: 0,
      phase: "armed",
      steps: [
        { kind: "soft-warning", at: T0 + 800 },
        { kind: "hard-timeout", at: T0 + 1000 },
      ],
    });

    w.clock.increment(799);
    expect(w.reportStep).not.toHaveBeenCalled();
    w.clock.increment(1);
    expect(w.fired).toEqual([{ firedAt: T0 + 800, jobId: "job-1", kind: "soft-warning", at: T0 + 800 }]);
    expect(w.value()).toBe("watching");
    expect(w.ctx()).toMatchObject({ next: 1, phase: "soft-warning" });

    w.clock.increment(199);
    expect(w.reportStep).toHaveBeenCalledTimes(1);
    w.clock.increment(1);
    expect(w.fired.at(-1)).toEqual({
      firedAt: T0 + 1000,
      jobId: "job-1",
      kind: "hard-timeout",
      at: T0 + 1000,
    });
    expect(w.value()).toBe("expired");
    expect(w.ctx()).toMatchObject({ next: 2, phase: "hard-timeout" });

    w.clock.increment(10_000);
    expect(w.reportStep).toHaveBeenCalledTimes(2);
  });

  it("grace shorter than the soft margin: soft warning, cancel request, hard timeout", () => {
    const w = watchdog({ softTimeoutPercent: 80, cancellationGraceMs: 100 });
    w.arm("job-1", 1000);
    advance(w.clock, 2000);
    expect(w.fired.map((f) => [f.kind, f.firedAt - T0])).toEqual([
      ["soft-warning", 800],
      ["cancel-request", 900],
      ["hard-timeout", 1000],
    ]);
    expect(w.value()).toBe("expired");
  });

  it("grace longer than the soft margin: the cancel request comes before the soft warning", () => {
    const w = watchdog({ softTimeoutPercent: 80, cancellationGraceMs: 300 });
    w.arm("job-1", 1000);
    w.clock.increment(699);
    expect(w.fired).toEqual([]);
    w.clock.increment(1);
    expect(w.fired.map((f) => f.kind)).toEqual(["cancel-request"]);
    expect(w.ctx().phase).toBe("cancel-request");
    w.clock.increment(100);
    expect(w.fired.map((f) => f.kind)).toEqual(["cancel-request", "soft-warning"]);
    w.clock.increment(200);
    expect(w.fired.map((f) => [f.kind, f.firedAt - T0])).toEqual([
      ["cancel-request", 700],
      ["soft-warning", 800],
      ["hard-timeout", 1000],
    ]);
  });

  it("each step fires once, in order, at its own time; nothing fires after expiry", () => {
    const w = watchdog({ softTimeoutPercent: 50, cancellationGraceMs: 250 });
    w.arm("job-1", 1000);
    advance(w.clock, 5000);
    expect(w.fired.map((f) => [f.kind, f.at - T0, f.firedAt - T0])).toEqual([
      ["soft-warning", 500, 500],
      ["cancel-request", 750, 750],
      ["hard-timeout", 1000, 1000],
    ]);
    expect(w.value()).toBe("expired");
  });

  it.each([
    { grace: 0, label: "grace 0" },
    { grace: 1000, label: "grace == timeout" },
    { grace: 5000, label: "grace > timeout" },
  ])("$label: no cancel request, only soft warning and hard timeout", ({ grace }) => {
    const w = watchdog({ softTimeoutPercent: 80, cancellationGraceMs: grace });
    w.arm("job-1", 1000);
    expect(w.ctx().steps.map((s) => s.kind)).toEqual(["soft-warning", "hard-timeout"]);
    advance(w.clock, 1000);
    expect(w.fired.map((f) => [f.kind, f.firedAt - T0])).toEqual([
      ["soft-warning", 800],
      ["hard-timeout", 1000],
    ]);
  });

  it("soft warning at 100 % is omitted: the hard timeout is the only step", () => {
    const w = watchdog({ softTimeoutPercent: 100, cancellationGraceMs: 0 });
    w.arm("job-1", 1000);
    w.clock.increment(999);
    expect(w.fired).toEqual([]);
    w.clock.increment(1);
    expect(w.fired.map((f) => f.kind)).toEqual(["hard-timeout"]);
    expect(w.value()).toBe("expired");
  });

  it("DISARM before any step: nothing is reported after the deadline passes", () => {
    const w = watchdog();
    w.arm("job-1", 1000);
    w.clock.increment(500);
    w.actor.send({ type: "DISARM" });
    expect(w.value()).toBe("idle");
    w.clock.increment(10_000);
    expect(w.reportStep).not.toHaveBeenCalled();
    expect(w.value()).toBe("idle");
  });

  it("DISARM after the soft warning drops the hard timeout", () => {
    const w = watchdog();
    w.arm("job-1", 1000);
    advance(w.clock, 900);
    expect(w.fired.map((f) => f.kind)).toEqual(["soft-warning"]);
    w.actor.send({ type: "DISARM" });
    w.clock.increment(10_000);
    expect(w.fired.map((f) => f.kind)).toEqual(["soft-warning"]);
    expect(w.value()).toBe("idle");
  });

  it("re-ARM while watching drops the old schedule and follows the new one", () => {
    const w = watchdog();
    w.arm("job-1", 1000);
    w.clock.increment(500);
    w.arm("job-2", 2000);
    expect(w.ctx()).toMatchObject({ jobId: "job-2", startedAt: T0 + 500, deadline: T0 + 2500, next: 0 });
    advance(w.clock, 1000); // job-1's soft (800) and hard (1000) would both have fired by now
    expect(w.fired).toEqual([]);
    advance(w.clock, 599);
    expect(w.fired).toEqual([]);
    w.clock.increment(1);
    expect(w.fired).toEqual([{ firedAt: T0 + 2100, jobId: "job-2", kind: "soft-warning", at: T0 + 2100 }]);
    advance(w.clock, 400);
    expect(w.fired.map((f) => [f.jobId, f.kind])).toEqual([
      ["job-2", "soft-warning"],
      ["job-2", "hard-timeout"],
    ]);
    expect(w.value()).toBe("expired");
  });

  it("ARM after expiry watches the next attempt; DISARM from expired goes idle", () => {
    const w = watchdog();
    w.arm("job-1", 100);
    advance(w.clock, 100);
    expect(w.value()).toBe("expired");
    w.arm("job-2", 100);
    expect(w.value()).toBe("watching");
    expect(w.ctx()).toMatchObject({ jobId: "job-2", phase: "armed", next: 0 });
    advance(w.clock, 100);
    expect(w.fired.map((f) => f.jobId)).toEqual(["job-1", "job-1", "job-2", "job-2"]);
    w.actor.send({ type: "DISARM" });
    expect(w.value()).toBe("idle");
  });

  it("armed late (as the runtime does after watchdogArmDelayMs), steps keep their absolute times", () => {
    const w = watchdog();
    const startedAt = w.clock.now();
    w.clock.increment(20);
    w.arm("job-1", 1000, startedAt);
    expect(w.ctx().deadline).toBe(T0 + 1000);
    w.clock.increment(779);
    expect(w.fired).toEqual([]);
    w.clock.increment(1);
    expect(w.fired.map((f) => [f.kind, f.firedAt - T0])).toEqual([["soft-warning", 800]]);
    w.clock.increment(200);
    expect(w.fired.map((f) => [f.kind, f.firedAt - T0])).toEqual([
      ["soft-warning", 800],
      ["hard-timeout", 1000],
    ]);
  });

  it("a step already due at arm time fires on the next clock tick", () => {
    const w = watchdog();
    const startedAt = w.clock.now();
    w.clock.increment(900); // past the soft warning (800), before the deadline
    w.arm("job-1", 1000, startedAt);
    w.clock.increment(0);
    expect(w.fired.map((f) => [f.kind, f.firedAt - T0])).toEqual([["soft-warning", 900]]);
    w.clock.increment(100);
    expect(w.fired.map((f) => [f.kind, f.firedAt - T0])).toEqual([
      ["soft-warning", 900],
      ["hard-timeout", 1000],
    ]);
  });
});
