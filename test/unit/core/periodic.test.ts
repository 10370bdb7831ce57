import { describe, expect, it } from "vitest";
import { ManualClock } from "../../../src/core/clock.js";
import { PeriodicTask } from "../../../src/core/periodic.js";
import { recurringDelay } from "../../../src/cluster/cluster-services.js";
import type { RecurringResult } from "../../../src/cluster/recurring.js";

const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("PeriodicTask", () => {
  it("wakeWithin brings the next pass forward, never back, and caps the wait a pass in flight chooses", async () => {
    const clock = new ManualClock(0);
    const runs: number[] = [];
    let release: (() => void) | null = null;
    let hold = false;
    const task = new PeriodicTask<void>({
      clock,
      run: async () => {
        runs.push(clock.now());
        if (hold) await new Promise<void>((r) => (release = r));
      },
      nextDelay: () => 10_000,
      onError: () => {},
    });
    task.start(0);
    clock.advance(0);
    await flush();
    expect(runs).toEqual([0]);
    // Next pass due at 10,000: brought forward to 300.
    task.wakeWithin(300);
    clock.advance(300);
    await flush();
    expect(runs).toEqual([0, 300]);
    // Due at 10,300; a wake asking for 20,000 leaves it there.
    task.wakeWithin(20_000);
    clock.advance(10_000);
    await flush();
    expect(runs).toEqual([0, 300, 10_300]);
    // A wake while a pass is in flight caps the 10,000 that pass then chooses to 500 from the wake.
    hold = true;
    clock.advance(10_000);
    await flush();
    expect(runs).toEqual([0, 300, 10_300, 20_300]);
    task.wakeWithin(500);
    hold = false;
    (release as unknown as () => void)();
    await flush();
    clock.advance(500);
    await flush();
    expect(runs).toEqual([0, 300, 10_300, 20_300, 20_800]);
    await task.stop();
  });

  it("runs, waits what nextDelay says, and survives failures", async () => {
    const clock = new ManualClock(0);
    const runs: number[] = [];
    const errors: unknown[] = [];
    let n = 0;
    const task = new PeriodicTask<number>({
      clock,
      run: async () => {
        runs.push(clock.now());
        n++;
        if (n === 2) throw new Error("boom");
        return n;
      },
      nextDelay: (r) => (r.ok ? 100 : 30),
      onError: (e) => errors.push(e),
    });
    task.start(10);
    clock.advance(10);
    await flush();
    clock.advance(100);
    await flush();
    clock.advance(30);
    await flush();
    clock.advance(99);
    await flush();
    expect(runs).toEqual([10, 110, 140]);
    expect(errors).toHaveLength(1);
    await task.stop();
    clock.advance(10_000);
    await flush();
    expect(runs).toHaveLength(3);
    expect(task.running).toBe(false);
  });

  it("stop() waits for the pass in flight", async () => {
    const clock = new ManualClock(0);
    let release!: () => void;
    let finished = false;
    const task = new PeriodicTask<void>({
      clock,
      run: () =>
        new Promise<void>((resolve) => {
          release = () => {
            finished = true;
            resolve();
          };
        }),
      nextDelay: () => 5,
      onError: () => {},
    });
    task.start(0);
    clock.advance(0);
    const stopped = task.stop();
    let done = false;
    void stopped.then(() => (done = true));
    await flush();
    expect(done).toBe(false);
    release();
    await stopped;
    expect(finished).toBe(true);
    expect(clock.pending).toBe(0);
  });
});

describe("recurringDelay", () => {
  const result = (nextDueInMs: number | null): RecurringResult => ({
    ran: true,
    fired: [],
    skipped: [],
    failed: [],
    nextDueInMs,
    durationMs: 1,
  });
  it.each([
    { nextDueInMs: null, delay: 10_000 },
    { nextDueInMs: 60_000, delay: 10_000 },
    { nextDueInMs: 1234, delay: 1244 },
    { nextDueInMs: 0, delay: 250 },
    { nextDueInMs: -5000, delay: 250 },
    { nextDueInMs: 1, delay: 11 },
  ])("next fire in $nextDueInMs ms -> wait $delay", ({ nextDueInMs, delay }) => {
    expect(recurringDelay({ ok: true, result: result(nextDueInMs) }, 10_000)).toBe(delay);
  });
  it("waits the interval after a failure", () => {
    expect(recurringDelay({ ok: false, error: new Error("x") }, 10_000)).toBe(10_000);
  });
});
