import { describe, expect, it } from "vitest";
import { ManualClock } from "../../../src/core/clock.js";
import { CancelCheck } from "../../../src/node/cancel-check.js";
import type { JobRun } from "../../../src/node/attempt/job-run.js";
import { gate } from "../../helpers/gate.js";

// The cancel check on a ManualClock with a store whose reads the test answers by hand.

const settle = () => new Promise<void>((r) => setTimeout(r, 0));

function check(recheckMs = 1000) {
  const clock = new ManualClock(10_000);
  const reads: { ids: string[]; answer: (canceled: string[]) => void }[] = [];
  const runs = new Map<string, JobRun>();
  const told: number[] = [];
  const c = new CancelCheck({
    runs,
    buffered: (id) => id === "buffered-1",
    store: {
      canceledAmong: (ids) => {
        const d = gate<Set<string>>();
        reads.push({ ids: [...ids], answer: (canceled) => d.open(new Set(canceled)) });
        return d.promise;
      },
    },
    clock,
    recheckMs,
    tellSlot: (slot) => void told.push(slot),
    onError: (error) => {
      throw error;
    },
  });
  const run = (id: string, slot: number, startedAt: number) =>
    runs.set(id, {
      claimed: { id },
      slot,
      startedAt,
      settled: false,
      cancelRequested: false,
    } as unknown as JobRun);
  return { clock, reads, runs, told, c, run };
}

describe("CancelCheck on the PeriodicTask loop", () => {
  it("reads the long-running attempts every recheckMs and tells the canceled ones", async () => {
    const t = check(1000);
    t.run("7", 3, 10_000);
    t.c.start();
    t.clock.advance(999);
    expect(t.reads).toEqual([]);
    t.clock.advance(1);
    expect(t.reads.map((r) => r.ids)).toEqual([["7"]]);
    t.reads[0]?.answer(["7"]);
    await settle();
    expect(t.told).toEqual([3]);
    expect(t.runs.get("7")?.cancelRequested).toBe(true);
    // The loop carries on: the next pass after another interval (7 is told already, so nothing to read).
    t.run("8", 4, 10_000);
    t.clock.advance(1000);
    expect(t.reads.map((r) => r.ids)).toEqual([["7"], ["8"]]);
    t.reads[1]?.answer([]);
    await t.c.stop();
  });

  it("stop() waits for a periodic read in flight, and no pass runs after it", async () => {
    const t = check(1000);
    t.run("7", 0, 10_000);
    t.c.start();
    t.clock.advance(1000);
    expect(t.reads).toHaveLength(1);
    let stopped = false;
    const stopping = t.c.stop().then(() => {
      stopped = true;
    });
    await settle();
    expect(stopped).toBe(false);
    t.reads[0]?.answer([]);
    await stopping;
    expect(stopped).toBe(true);
    t.clock.advance(10_000);
    expect(t.reads).toHaveLength(1);
  });

  it("stop() waits for a hinted read in flight too; hints after stop are ignored", async () => {
    const t = check(1000);
    t.run("7", 0, 10_000);
    t.c.hinted("7");
    await settle();
    expect(t.reads.map((r) => r.ids)).toEqual([["7"]]);
    let stopped = false;
    const stopping = t.c.stop().then(() => {
      stopped = true;
    });
    await settle();
    expect(stopped).toBe(false);
    t.reads[0]?.answer([]);
    await stopping;
    t.c.hinted("7");
    await settle();
    expect(t.reads).toHaveLength(1);
  });

  it("a hint reads only the named job's row, and a buffered job found canceled is marked for its slot", async () => {
    const t = check(1000);
    t.c.hinted("buffered-1");
    t.c.hinted("not-here");
    await settle();
    expect(t.reads.map((r) => r.ids)).toEqual([["buffered-1"]]);
    t.reads[0]?.answer(["buffered-1"]);
    await settle();
    expect(t.told).toEqual([]);
    expect(t.c.takeMark("buffered-1")).toBe(true);
    expect(t.c.takeMark("buffered-1")).toBe(false);
    await t.c.stop();
  });
});
