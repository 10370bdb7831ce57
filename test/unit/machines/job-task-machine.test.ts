import { createActor, SimulatedClock } from "xstate";
import { describe, expect, it, vi } from "vitest";
import { jobTaskMachine } from "../../../src/machines/job-task-machine.js";
import type { TaskJob, TaskOutcome } from "../../../src/machines/job-task-machine.js";

// The job task with every effect and guard supplied as spies, as the runtime does with `.provide()`.
// Every effect and supplied guard receives the task's slot number as its params (the runtime finds the
// attempt in its slot table). `log` records the effects in the order they ran, so a test can assert the
// exact path an attempt took.

const SLOT = 2;

interface Gates {
  readyToRun?: boolean;
  needsCancelCheck?: boolean;
  breakerOpen?: boolean;
  needsPermit?: boolean;
  needsRateLimit?: boolean;
  payloadInvalid?: boolean;
}

const job = (over: Partial<TaskJob> = {}): TaskJob => ({
  id: "42",
  type: "email.send",
  attempt: 1,
  hasPayload: true,
  claimedAt: 0,
  service: undefined,
  resource: undefined,
  ...over,
});

function task(gates: Gates = {}) {
  const clock = new SimulatedClock();
  const log: string[] = [];
  const effect = (name: string) => vi.fn((_: unknown, _slot: number) => void log.push(name));
  const loadPayload = effect("loadPayload");
  const checkCancellation = effect("checkCancellation");
  const acquirePermit = effect("acquirePermit");
  const admitRate = effect("admitRate");
  const runHandler = effect("runHandler");
  const requestCancellation = effect("requestCancellation");
  const admitBreaker = effect("admitBreaker");
  const validatePayload = effect("validatePayload");
  const decideBreaker = effect("decideBreaker");
  const finish = vi.fn((_: unknown, outcome: TaskOutcome) => void log.push(`finish:${outcome.kind}`));
  const gate = (name: keyof Gates) => vi.fn((_: unknown, _slot: number) => gates[name] ?? false);
  const guards = {
    readyToRun: gate("readyToRun"),
    needsCancelCheck: gate("needsCancelCheck"),
    breakerOpen: gate("breakerOpen"),
    needsPermit: gate("needsPermit"),
    needsRateLimit: gate("needsRateLimit"),
    payloadInvalid: gate("payloadInvalid"),
  };
  const machine = jobTaskMachine.provide({
    actions: {
      loadPayload,
      checkCancellation,
      acquirePermit,
      admitRate,
      runHandler,
      requestCancellation,
      admitBreaker,
      validatePayload,
      decideBreaker,
      finish,
    },
    guards,
  });
  const actor = createActor(machine, { clock, input: { slot: SLOT, now: () => clock.now() } }).start();
  return {
    actor,
    log,
    finish,
    guards,
    effects: {
      loadPayload,
      checkCancellation,
      acquirePermit,
      admitRate,
      runHandler,
      requestCancellation,
      admitBreaker,
      validatePayload,
      decideBreaker,
    },
    value: () => actor.getSnapshot().value,
    ctx: () => actor.getSnapshot().context,
    /** The outcomes `finish` was called with, in order. */
    outcomes: () => finish.mock.calls.map(([, outcome]) => outcome),
  };
}

describe("job task: the hot path", () => {
  it("START with readyToRun goes straight to running; SETTLED finishes with the handler's outcome", () => {
    const t = task({ readyToRun: true });
    expect(t.value()).toBe("idle");
    t.actor.send({ type: "START", job: job() });
    expect(t.value()).toBe("running");
    expect(t.guards.readyToRun).toHaveBeenCalledTimes(1);
    expect(t.guards.readyToRun.mock.calls[0]?.[1]).toBe(SLOT);
    expect(t.effects.runHandler).toHaveBeenCalledTimes(1);
    expect(t.effects.runHandler.mock.calls[0]?.[1]).toBe(SLOT);
    expect(t.ctx().slot).toBe(SLOT);
    expect(t.guards.needsCancelCheck).not.toHaveBeenCalled();
    expect(t.guards.breakerOpen).not.toHaveBeenCalled();
    // The hot path runs neither the validator nor the breaker's decision.
    expect(t.effects.validatePayload).not.toHaveBeenCalled();
    expect(t.effects.decideBreaker).not.toHaveBeenCalled();

    t.actor.send({ type: "SETTLED", outcome: { kind: "success", result: 7 } });
    expect(t.value()).toBe("idle");
    expect(t.outcomes()).toEqual([{ kind: "success", result: 7 }]);
    expect(t.log).toEqual(["runHandler", "finish:success"]);
  });

  it.each<TaskOutcome>([
    { kind: "failure", error: "boom" },
    { kind: "snooze", delayMs: 5000 },
    { kind: "timeout", error: "late" },
  ])("SETTLED passes $kind through to finish unchanged", (outcome) => {
    const t = task({ readyToRun: true });
    t.actor.send({ type: "START", job: job() });
    t.actor.send({ type: "SETTLED", outcome });
    expect(t.outcomes()).toEqual([outcome]);
  });

  it("the finish action sees the slot in its context", () => {
    const t = task({ readyToRun: true });
    t.actor.send({ type: "START", job: job() });
    t.actor.send({ type: "SETTLED", outcome: { kind: "success", result: null } });
    const context = t.finish.mock.calls[0]?.[0] as { slot: number };
    expect(context.slot).toBe(SLOT);
  });

  it("a job writes no context: the same context object before, during and after it", () => {
    const t = task({ readyToRun: true });
    const before = t.ctx();
    t.actor.send({ type: "START", job: job() });
    expect(t.ctx()).toBe(before);
    t.actor.send({ type: "SETTLED", outcome: { kind: "success", result: null } });
    expect(t.ctx()).toBe(before);
  });

  it("the inspector sees every event and the state each one led to", () => {
    const seen: string[] = [];
    // The task is the only actor of its system here, so every inspection event is its own.
    const actor = createActor(jobTaskMachine.provide({ guards: { readyToRun: () => true } }), {
      input: { slot: SLOT, now: () => 0 },
      inspect: (e) => {
        if (e.type === "@xstate.event") seen.push(`event:${e.event.type}`);
        if (e.type === "@xstate.snapshot") seen.push(`state:${(e.snapshot as { value?: string }).value}`);
      },
    }).start();
    actor.send({ type: "START", job: job() });
    actor.send({ type: "SETTLED", outcome: { kind: "success", result: null } });
    expect(seen.filter((x) => !x.startsWith("event:xstate"))).toEqual([
      "state:idle",
      "event:START",
      "state:running",
      "event:SETTLED",
      "state:idle",
    ]);
  });

  it("the slot is reused: a second job runs on the same actor after the first finished", () => {
    const t = task({ readyToRun: true });
    t.actor.send({ type: "START", job: job({ id: "1" }) });
    t.actor.send({ type: "SETTLED", outcome: { kind: "success", result: 1 } });
    t.actor.send({ type: "START", job: job({ id: "2" }) });
    expect(t.value()).toBe("running");
    expect(t.effects.runHandler.mock.calls.map(([, slot]) => slot)).toEqual([SLOT, SLOT]);
    t.actor.send({ type: "SETTLED", outcome: { kind: "success", result: 2 } });
    expect(t.outcomes()).toEqual([
      { kind: "success", result: 1 },
      { kind: "success", result: 2 },
    ]);
  });
});

describe("job task: the lazy path and the gates", () => {
  it("needsPayload -> loading -> LOADED -> checkingCancellation -> CHECKED false -> gating -> running", () => {
    const t = task();
    t.actor.send({ type: "START", job: job({ hasPayload: false }) });
    expect(t.value()).toBe("loading");
    expect(t.effects.loadPayload.mock.calls[0]?.[1]).toBe(SLOT);
    t.actor.send({ type: "LOADED" });
    expect(t.value()).toBe("checkingCancellation");
    expect(t.effects.checkCancellation.mock.calls[0]?.[1]).toBe(SLOT);
    // After a load the cancellation check always runs; the supplied needsCancelCheck is not asked.
    expect(t.guards.needsCancelCheck).not.toHaveBeenCalled();
    t.actor.send({ type: "CHECKED", canceled: false });
    expect(t.value()).toBe("running");
    expect(t.guards.breakerOpen).toHaveBeenCalledTimes(1);
    expect(t.guards.needsPermit).toHaveBeenCalledTimes(1);
    expect(t.guards.payloadInvalid).toHaveBeenCalledTimes(1);
    expect(t.log).toEqual([
      "loadPayload",
      "checkCancellation",
      "validatePayload",
      "decideBreaker",
      "admitBreaker",
      "runHandler",
    ]);
  });

  it("LOAD_FAILED finishes as a failure carrying the error", () => {
    const t = task();
    const error = new Error("db down");
    t.actor.send({ type: "START", job: job({ hasPayload: false }) });
    t.actor.send({ type: "LOAD_FAILED", error });
    expect(t.value()).toBe("idle");
    expect(t.outcomes()).toEqual([{ kind: "failure", error }]);
    expect(t.effects.runHandler).not.toHaveBeenCalled();
  });

  it("needsCancelCheck (payload known) goes to checkingCancellation; CHECKED true finishes canceled", () => {
    const t = task({ needsCancelCheck: true });
    t.actor.send({ type: "START", job: job() });
    expect(t.value()).toBe("checkingCancellation");
    expect(t.effects.loadPayload).not.toHaveBeenCalled();
    t.actor.send({ type: "CHECKED", canceled: true });
    expect(t.value()).toBe("idle");
    expect(t.log).toEqual(["checkCancellation", "finish:canceled"]);
    expect(t.outcomes()).toEqual([{ kind: "canceled" }]);
  });

  it("no gate applies and not readyToRun: START goes through gating to running in one step", () => {
    const t = task();
    t.actor.send({ type: "START", job: job() });
    expect(t.value()).toBe("running");
    expect(t.log).toEqual(["validatePayload", "decideBreaker", "admitBreaker", "runHandler"]);
  });

  it("breakerOpen: back to idle with finish breaker-open (delay 0: the runtime fills it in)", () => {
    const t = task({ breakerOpen: true });
    t.actor.send({ type: "START", job: job({ service: "smtp" }) });
    expect(t.value()).toBe("idle");
    expect(t.guards.breakerOpen.mock.calls[0]?.[1]).toBe(SLOT);
    expect(t.outcomes()).toEqual([{ kind: "breaker-open", delayMs: 0 }]);
    expect(t.log).toEqual(["validatePayload", "decideBreaker", "finish:breaker-open"]);
  });

  it("the breaker is consulted before the permit: an open breaker never asks for a permit", () => {
    const t = task({ breakerOpen: true, needsPermit: true });
    t.actor.send({ type: "START", job: job({ service: "smtp", resource: "gpu" }) });
    expect(t.guards.needsPermit).not.toHaveBeenCalled();
    expect(t.effects.acquirePermit).not.toHaveBeenCalled();
    expect(t.outcomes()).toEqual([{ kind: "breaker-open", delayMs: 0 }]);
  });

  it("needsPermit -> acquiringPermit; PERMIT denied finishes permit-denied with retryInMs", () => {
    const t = task({ needsPermit: true });
    t.actor.send({ type: "START", job: job({ resource: "gpu" }) });
    expect(t.value()).toBe("acquiringPermit");
    expect(t.guards.needsPermit.mock.calls[0]?.[1]).toBe(SLOT);
    expect(t.effects.acquirePermit.mock.calls[0]?.[1]).toBe(SLOT);
    t.actor.send({ type: "PERMIT", granted: false, retryInMs: 5000 });
    expect(t.value()).toBe("idle");
    expect(t.outcomes()).toEqual([{ kind: "permit-denied", delayMs: 5000 }]);
    expect(t.effects.runHandler).not.toHaveBeenCalled();
  });

  it("PERMIT granted goes to running", () => {
    const t = task({ needsPermit: true });
    t.actor.send({ type: "START", job: job({ resource: "gpu" }) });
    t.actor.send({ type: "PERMIT", granted: true, retryInMs: 5000 });
    expect(t.value()).toBe("running");
    expect(t.log).toEqual([
      "validatePayload",
      "decideBreaker",
      "admitBreaker",
      "acquirePermit",
      "runHandler",
    ]);
    expect(t.finish).not.toHaveBeenCalled();
  });

  it("needsRateLimit -> admitting; ADMISSION refused finishes rate-limited with retryInMs, never runs", () => {
    const t = task({ needsRateLimit: true });
    t.actor.send({ type: "START", job: job() });
    expect(t.value()).toBe("admitting");
    expect(t.effects.admitRate.mock.calls[0]?.[1]).toBe(SLOT);
    t.actor.send({ type: "ADMISSION", admitted: false, retryInMs: 740 });
    expect(t.value()).toBe("idle");
    expect(t.outcomes()).toEqual([{ kind: "rate-limited", delayMs: 740 }]);
    expect(t.effects.runHandler).not.toHaveBeenCalled();
  });

  it("the rate limit is asked last: after the breaker and the permit, then ADMISSION admitted runs", () => {
    const t = task({ needsPermit: true, needsRateLimit: true });
    t.actor.send({ type: "START", job: job({ resource: "gpu", service: "smtp" }) });
    expect(t.value()).toBe("acquiringPermit");
    t.actor.send({ type: "ADMISSION", admitted: true, retryInMs: 0 }); // not listened to yet: ignored
    expect(t.value()).toBe("acquiringPermit");
    t.actor.send({ type: "PERMIT", granted: true, retryInMs: 0 });
    expect(t.value()).toBe("admitting");
    t.actor.send({ type: "ADMISSION", admitted: true, retryInMs: 0 });
    expect(t.value()).toBe("running");
    expect(t.log).toEqual([
      "validatePayload",
      "decideBreaker",
      "admitBreaker",
      "acquirePermit",
      "admitRate",
      "runHandler",
    ]);
  });

  it("a denied permit or an open breaker never asks the rate limit (no start is recorded)", () => {
    const denied = task({ needsPermit: true, needsRateLimit: true });
    denied.actor.send({ type: "START", job: job({ resource: "gpu" }) });
    denied.actor.send({ type: "PERMIT", granted: false, retryInMs: 5000 });
    const open = task({ breakerOpen: true, needsRateLimit: true });
    open.actor.send({ type: "START", job: job({ service: "smtp" }) });
    expect(denied.effects.admitRate).not.toHaveBeenCalled();
    expect(open.effects.admitRate).not.toHaveBeenCalled();
  });

  it("ABORT while admitting finishes aborted; the late ADMISSION is ignored", () => {
    const t = task({ needsRateLimit: true });
    t.actor.send({ type: "START", job: job() });
    t.actor.send({ type: "ABORT" });
    t.actor.send({ type: "ADMISSION", admitted: true, retryInMs: 0 });
    expect(t.value()).toBe("idle");
    expect(t.outcomes()).toEqual([{ kind: "aborted" }]);
    expect(t.effects.runHandler).not.toHaveBeenCalled();
  });

  it("an invalid payload is refused before the breaker or a permit is asked", () => {
    const t = task({ payloadInvalid: true, needsPermit: true, breakerOpen: true });
    t.actor.send({ type: "START", job: job({ resource: "gpu", service: "smtp" }) });
    expect(t.value()).toBe("idle");
    expect(t.guards.breakerOpen).not.toHaveBeenCalled();
    expect(t.effects.acquirePermit).not.toHaveBeenCalled();
    expect(t.effects.admitBreaker).not.toHaveBeenCalled();
    expect(t.outcomes()).toEqual([{ kind: "invalid-payload", error: undefined }]);
  });

  it("records the breaker admission in the same step as the decision, before waiting for a permit", () => {
    const t = task({ needsPermit: true });
    t.actor.send({ type: "START", job: job({ resource: "gpu", service: "smtp" }) });
    expect(t.value()).toBe("acquiringPermit");
    expect(t.log).toEqual(["validatePayload", "decideBreaker", "admitBreaker", "acquirePermit"]);
    t.actor.send({ type: "PERMIT", granted: true, retryInMs: 0 });
    expect(t.value()).toBe("running");
    expect(t.effects.admitBreaker).toHaveBeenCalledTimes(1);
  });

  it("payloadInvalid without a resource: finish invalid-payload straight from gating", () => {
    const t = task({ payloadInvalid: true });
    t.actor.send({ type: "START", job: job() });
    expect(t.value()).toBe("idle");
    expect(t.log).toEqual(["validatePayload", "finish:invalid-payload"]);
  });
});

describe("job task: running and aborts", () => {
  it("TIMED_OUT in running finishes as a timeout carrying the error", () => {
    const t = task({ readyToRun: true });
    const error = new Error("deadline");
    t.actor.send({ type: "START", job: job() });
    t.actor.send({ type: "TIMED_OUT", error });
    expect(t.value()).toBe("idle");
    expect(t.outcomes()).toEqual([{ kind: "timeout", error }]);
  });

  it("ABORT in running finishes aborted; a late SETTLED is ignored (one finish per attempt)", () => {
    const t = task({ readyToRun: true });
    t.actor.send({ type: "START", job: job() });
    t.actor.send({ type: "ABORT" });
    t.actor.send({ type: "SETTLED", outcome: { kind: "success", result: 1 } });
    expect(t.value()).toBe("idle");
    expect(t.outcomes()).toEqual([{ kind: "aborted" }]);
  });

  it("CANCEL in running requests cancellation and keeps running until the handler settles", () => {
    const t = task({ readyToRun: true });
    t.actor.send({ type: "START", job: job() });
    t.actor.send({ type: "CANCEL" });
    expect(t.value()).toBe("running");
    expect(t.effects.requestCancellation).toHaveBeenCalledTimes(1);
    expect(t.effects.requestCancellation.mock.calls[0]?.[1]).toBe(SLOT);
    expect(t.finish).not.toHaveBeenCalled();
    t.actor.send({ type: "SETTLED", outcome: { kind: "failure", error: "stopped" } });
    expect(t.outcomes()).toEqual([{ kind: "failure", error: "stopped" }]);
    expect(t.log).toEqual(["runHandler", "requestCancellation", "finish:failure"]);
  });

  it("ABORT while loading finishes aborted; the late LOADED is ignored", () => {
    const t = task();
    t.actor.send({ type: "START", job: job({ hasPayload: false }) });
    t.actor.send({ type: "ABORT" });
    expect(t.value()).toBe("idle");
    t.actor.send({ type: "LOADED" });
    expect(t.value()).toBe("idle");
    expect(t.log).toEqual(["loadPayload", "finish:aborted"]);
  });

  it.each([
    { name: "checkingCancellation", gates: { needsCancelCheck: true }, over: {} },
    { name: "acquiringPermit", gates: { needsPermit: true }, over: { resource: "gpu" } },
  ])("ABORT in $name finishes aborted", ({ name, gates, over }) => {
    const t = task(gates);
    t.actor.send({ type: "START", job: job(over) });
    expect(t.value()).toBe(name);
    t.actor.send({ type: "ABORT" });
    expect(t.value()).toBe("idle");
    expect(t.outcomes()).toEqual([{ kind: "aborted" }]);
  });

  it("events outside their state are ignored: no finish from idle, no cancel request before running", () => {
    const t = task({ needsCancelCheck: true });
    t.actor.send({ type: "SETTLED", outcome: { kind: "success", result: 1 } });
    t.actor.send({ type: "TIMED_OUT", error: "x" });
    t.actor.send({ type: "ABORT" });
    expect(t.finish).not.toHaveBeenCalled();
    t.actor.send({ type: "START", job: job() });
    t.actor.send({ type: "CANCEL" });
    expect(t.value()).toBe("checkingCancellation");
    expect(t.effects.requestCancellation).not.toHaveBeenCalled();
  });
});

describe("job task: guards only read what the actions computed", () => {
  // The validator (user code) and the breaker's decision (which may spawn a breaker) are actions; the
  // guards that follow read the values they left, in the same macrostep.
  function computed(verdicts: { invalid: boolean; open: boolean }) {
    const seen = { invalid: false, open: false };
    const order: string[] = [];
    const machine = jobTaskMachine.provide({
      actions: {
        validatePayload: () => {
          order.push("validatePayload");
          seen.invalid = verdicts.invalid;
        },
        decideBreaker: () => {
          order.push("decideBreaker");
          seen.open = verdicts.open;
        },
        finish: (_, outcome: TaskOutcome) => void order.push(`finish:${outcome.kind}`),
        runHandler: () => void order.push("runHandler"),
      },
      guards: {
        payloadInvalid: () => (order.push("payloadInvalid?"), seen.invalid),
        breakerOpen: () => (order.push("breakerOpen?"), seen.open),
      },
    });
    const actor = createActor(machine, { input: { slot: SLOT, now: () => 0 } }).start();
    actor.send({ type: "START", job: job({ service: "smtp" }) });
    return { order, value: actor.getSnapshot().value };
  }

  it("an invalid verdict left by validatePayload finishes invalid-payload; the breaker is never decided", () => {
    const r = computed({ invalid: true, open: true });
    expect(r.value).toBe("idle");
    expect(r.order).toEqual(["validatePayload", "payloadInvalid?", "finish:invalid-payload"]);
  });

  it("an open breaker decided by decideBreaker finishes breaker-open", () => {
    const r = computed({ invalid: false, open: true });
    expect(r.value).toBe("idle");
    expect(r.order).toEqual([
      "validatePayload",
      "payloadInvalid?",
      "decideBreaker",
      "breakerOpen?",
      "finish:breaker-open",
    ]);
  });

  it("a valid payload and a closed breaker run", () => {
    const r = computed({ invalid: false, open: false });
    expect(r.value).toBe("running");
    expect(r.order.slice(0, 4)).toEqual([
      "validatePayload",
      "payloadInvalid?",
      "decideBreaker",
      "breakerOpen?",
    ]);
    expect(r.order.at(-1)).toBe("runHandler");
  });
});
