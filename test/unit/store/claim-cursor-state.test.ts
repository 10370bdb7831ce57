import { describe, expect, it } from "vitest";
import {
  CursorState,
  jitterDown,
  nextFullInterval,
  pickWindow,
  wakeupFlooredGapMs,
} from "../../../src/store/claim/claim-cursor-state.js";
import {
  comparePositions,
  positionBefore,
  usToIso,
  type FullOutcome,
  type PassOutcome,
  type Position,
} from "../../../src/store/claim/claim-positions.js";

const pos = (us: number, id: number): Position => ({ us: BigInt(us), id: BigInt(id) });
const state = (random: () => number = () => 0) =>
  new CursorState({ discoveryMs: 1000, fullDiscoveryMs: 10_000, fullDiscoveryMaxMs: 60_000, random });
const SEC = 1_000_000; // µs

function full(o: Partial<FullOutcome> = {}): FullOutcome {
  return {
    claimed: [],
    heads: new Map(),
    limit: 10,
    nowUs: 100n * BigInt(SEC),
    highId: 50n,
    levels: [],
    ...o,
  };
}
function outcome(o: Partial<PassOutcome> = {}): PassOutcome {
  return { claimed: [], heads: new Map(), limit: 10, nowUs: 101n * BigInt(SEC), ...o };
}

describe("claim cursor helpers", () => {
  it.each([
    [10_000, 0, 10_000],
    [10_000, 0.5, 8750],
    [10_000, 0.999999, 7500],
    [10_000, 7, 7500], // a bad random source is clamped
    [1, 0.99, 1],
  ])("jitterDown(%i) with random %d is %i", (ms, r, expected) => {
    expect(jitterDown(ms, () => r)).toBe(expected);
  });

  it.each([
    // current, found work, base, max -> next
    [10_000, false, 10_000, 60_000, 20_000],
    [20_000, false, 10_000, 60_000, 40_000],
    [40_000, false, 10_000, 60_000, 60_000], // capped
    [60_000, false, 10_000, 60_000, 60_000],
    [60_000, true, 10_000, 60_000, 10_000], // work resets
    [10_000, true, 10_000, 60_000, 10_000],
    [10_000, false, 10_000, 10_000, 10_000], // cap = base: no backoff
    [10_000, false, 10_000, 5_000, 10_000], // a cap below the base never shortens it
    [30_000, false, 10_000, 45_000, 45_000],
  ])("nextFullInterval(%i, %s, %i, %i) is %i", (current, found, base, max, expected) => {
    expect(nextFullInterval(current, found, base, max)).toBe(expected);
  });

  it("keeps microseconds in ISO text and orders positions by time then id", () => {
    expect(usToIso(1_767_268_800_123_456n)).toBe("2026-01-01T12:00:00.123456Z");
    expect(usToIso(1_767_268_800_000_007n)).toBe("2026-01-01T12:00:00.000007Z");
    expect(comparePositions(pos(1, 9), pos(2, 1))).toBe(-1);
    expect(comparePositions(pos(2, 1), pos(2, 1))).toBe(0);
    expect(comparePositions(pos(2, 2), pos(2, 1))).toBe(1);
    expect(positionBefore(pos(5, 10))).toEqual(pos(5, 9));
  });

  it("orders the floored window by effective priority with the age boost, then time, then id", () => {
    const now = 3_600n * BigInt(SEC);
    const interval = 15 * 60_000;
    const window = [
      { id: 1n, priority: 10, us: now - 15n * 60n * BigInt(SEC) }, // boosted to 11, older
      { id: 2n, priority: 11, us: now }, // 11, fresh
      { id: 3n, priority: 5, us: now - 10n }, // 5
      { id: 4n, priority: 11, us: now - 1n }, // 11, older than id 2
    ];
    expect(pickWindow(window, 3, now, interval).map((r) => r.id)).toEqual([1n, 4n, 2n]);
    expect(pickWindow(window, 10, now, 0).map((r) => r.id)).toEqual([4n, 2n, 1n, 3n]);
  });
});

describe("CursorState", () => {
  it("runs full passes at boot, then skips while there is no cursor and no discovery due", () => {
    const s = state();
    expect(s.plan(0, ["a"])).toBe("full");
    s.afterFull(s.begin(), full(), 0);
    // Boot seeds the floors from the pass itself: the id floor at max(id), the time floor one full interval back.
    expect(s.floorId).toBe(50n);
    expect(s.floorUs).toBe(90n * BigInt(SEC));
    expect(s.plan(999, ["a"])).toBe("skip");
    expect(s.plan(1000, ["a"])).toBe("floored");
    // The boot pass found nothing, so the full cadence backed off to 20 s.
    expect(s.plan(19_999, ["a"])).toBe("floored");
    expect(s.plan(20_000, ["a"])).toBe("full");
  });

  it("drops the floors to what was observed before the last full pass", () => {
    const s = state();
    s.afterFull(s.begin(), full({ highId: 50n, nowUs: 100n * BigInt(SEC) }), 0);
    s.afterSeek([], outcome({ claimed: [{ priority: 10, pos: pos(5, 70) }] }), 1);
    s.afterFull(s.begin(), full({ highId: 90n, nowUs: 110n * BigInt(SEC) }), 10_000);
    expect(s.floorId).toBe(70n); // the highest id seen before this pass
    expect(s.floorUs).toBe(100n * BigInt(SEC)); // the previous full pass's database time
    expect(s.highWater).toBe(90n);
  });

  it("moves cursors: last claimed row, just before the first unclaimed candidate, or gone when empty", () => {
    const s = state();
    s.afterFull(
      s.begin(),
      full({
        claimed: [
          { priority: 30, pos: pos(10, 3) },
          { priority: 30, pos: pos(11, 1) },
        ],
        heads: new Map([
          [30, pos(10, 3)],
          [20, pos(7, 8)],
        ]),
        levels: [30, 20, 10],
      }),
      0,
    );
    expect(s.cursors).toEqual(
      new Map([
        [30, pos(11, 1)],
        [20, pos(7, 7)],
      ]),
    );
    expect(s.plan(1, ["a"])).toBe("seek");
    const targets = s.seekTargets("seek", 1);
    expect(targets).toEqual([
      { priority: 30, after: pos(11, 1) },
      { priority: 20, after: pos(7, 7) },
    ]);
    // Level 30 came back empty, level 20 claimed two rows.
    s.afterSeek(
      targets,
      outcome({
        claimed: [
          { priority: 20, pos: pos(7, 8) },
          { priority: 20, pos: pos(9, 2) },
        ],
        heads: new Map([[20, pos(7, 8)]]),
      }),
      1,
    );
    expect(s.cursors).toEqual(new Map([[20, pos(9, 2)]]));
    s.afterSeek(s.seekTargets("seek", 2), outcome(), 2);
    expect(s.cursors.size).toBe(0);
    expect(s.plan(3, ["a"])).toBe("skip");
  });

  it("seeks every recently seen level from the lower of its cursor and the time floor in a floored pass", () => {
    const s = state();
    s.afterFull(s.begin(), full({ levels: [10, 20], heads: new Map([[20, pos(95 * SEC, 4)]]) }), 0);
    const floor = 90n * BigInt(SEC);
    s.cursors.set(30, pos(50 * SEC, 1)); // a backlog older than the floor keeps its own start
    expect(s.seekTargets("floored", 1)).toEqual([
      { priority: 30, after: pos(50 * SEC, 1) },
      { priority: 20, after: { us: floor, id: 0n } },
      { priority: 10, after: { us: floor, id: 0n } },
    ]);
    // A level not seen for two full intervals is no longer sought (unless it holds a cursor).
    s.cursors.clear();
    s.cursors.set(20, pos(96 * SEC, 1));
    expect(s.seekTargets("floored", 20_001).map((t) => t.priority)).toEqual([20]);
  });

  it("runs the floored pass for levels with rows just due, and seeks them from the time floor even when forgotten", () => {
    const s = state();
    s.afterFull(s.begin(), full({ levels: [10] }), 0);
    const floor = 90n * BigInt(SEC);
    // No cursor, no discovery due: nothing to send, unless a row this node wrote has come due.
    expect(s.plan(500, ["a"])).toBe("skip");
    expect(s.plan(500, ["a"], [40])).toBe("floored");
    // Level 40 was never seen by a pass (a snooze can outlast two full intervals); it is sought anyway.
    expect(s.seekTargets("floored", 500, [40])).toEqual([
      { priority: 40, after: { us: floor, id: 0n } },
      { priority: 10, after: { us: floor, id: 0n } },
    ]);
    // A due level that is also known is sought once.
    expect(s.seekTargets("floored", 500, [10]).map((t) => t.priority)).toEqual([10]);
    // A full pass due wins: it sees every level.
    expect(s.plan(20_000, ["a"], [40])).toBe("full");
  });

  it("keeps discovery due after a floored pass that left window rows uncovered, or saw a wakeup", () => {
    const s = state();
    s.afterFull(s.begin(), full(), 0);
    s.wakeup();
    expect(s.plan(1, ["a"])).toBe("floored");
    // The pass filled its limit with level 50 and left a level-10 row of the window unclaimed, below no cursor.
    const window = [
      { id: 60n, priority: 50, us: 5n },
      { id: 61n, priority: 10, us: 1n },
    ];
    s.afterFloored(
      s.begin(),
      [],
      window,
      outcome({ claimed: [{ priority: 50, pos: pos(5, 60) }], limit: 1 }),
      1,
    );
    expect(s.discoveryDue).toBe(true);
    // Next time the level-10 row is claimed: nothing uncovered is left.
    s.afterFloored(
      s.begin(),
      [],
      window.slice(1),
      outcome({ claimed: [{ priority: 10, pos: pos(1, 61) }] }),
      2,
    );
    expect(s.discoveryDue).toBe(false);
    // A window row above its level's cursor is the seeks' business.
    s.afterFloored(s.begin(), [], [{ id: 62n, priority: 10, us: 2n }], outcome(), 3);
    expect(s.cursors.get(10)).toEqual(pos(1, 61));
    expect(s.discoveryDue).toBe(false);
    const token = s.begin();
    s.wakeup(); // lands while the pass runs
    s.afterFloored(token, [], [], outcome(), 4);
    expect(s.discoveryDue).toBe(true);
    expect(s.nextDiscoveryAt).toBe(1004);
  });

  it("defers a wakeup's floored pass to a seek while claims come back full, for at most the gap", () => {
    const claimedFull = (n: number, at: number) =>
      outcome({
        claimed: Array.from({ length: n }, (_, i) => ({ priority: 10, pos: pos(at, at * 100 + i) })),
        limit: 10,
      });
    const s = state();
    s.afterFull(s.begin(), full(), 0);
    s.wakeup();
    expect(s.plan(1, ["a"])).toBe("floored");
    s.afterFloored(s.begin(), [{ priority: 10, after: pos(0, 0) }], [], claimedFull(10, 1), 1);
    // A wakeup right after a full floored pass: a seek (the level has a cursor), discovery still due.
    s.wakeup();
    expect(s.plan(2, ["a"])).toBe("seek");
    s.afterSeek([{ priority: 10, after: pos(1, 109) }], claimedFull(10, 2), 2);
    expect([s.discoveryDue, s.plan(50, ["a"])]).toEqual([true, "seek"]);
    // Once the gap has passed since the last floored pass, the deferred pass runs.
    expect(s.plan(1 + wakeupFlooredGapMs, ["a"])).toBe("floored");
    // A seek that came back short: the next poll runs the floored pass at once, gap or not.
    s.afterSeek([{ priority: 10, after: pos(2, 209) }], claimedFull(3, 3), 3);
    expect(s.plan(4, ["a"])).toBe("floored");
    // So does a wakeup after a short floored pass (an idle node's pickup path).
    const idle = state();
    idle.afterFull(idle.begin(), full(), 0);
    idle.afterFloored(idle.begin(), [{ priority: 10, after: pos(0, 0) }], [], claimedFull(2, 1), 1);
    idle.wakeup();
    expect(idle.plan(2, ["a"])).toBe("floored");
  });

  it("gives a level claimed only through the window a cursor at its last claimed row", () => {
    const s = state();
    s.afterFull(s.begin(), full(), 0);
    s.afterFloored(
      s.begin(),
      [],
      [{ id: 60n, priority: 100, us: 5n }],
      outcome({ claimed: [{ priority: 100, pos: pos(5, 60) }] }),
      1,
    );
    expect(s.cursors).toEqual(new Map([[100, pos(5, 60)]]));
    expect([...s.known.keys()]).toContain(100);
    expect(s.highWater).toBe(60n);
  });

  it("keeps a full-pass request that lands while a full pass runs", () => {
    const s = state();
    s.afterFull(s.begin(), full(), 0);
    s.requestFull();
    expect(s.plan(1, ["a"])).toBe("full");
    const token = s.begin();
    s.requestFull();
    s.afterFull(token, full(), 1);
    expect(s.plan(2, ["a"])).toBe("full");
    s.afterFull(s.begin(), full(), 2);
    expect(s.plan(3, ["a"])).toBe("skip");
  });

  it("clears the cursors and runs a full pass when the claimed types change", () => {
    const s = state();
    s.afterFull(s.begin(), full({ claimed: [{ priority: 1, pos: pos(1, 1) }] }), 0);
    expect(s.plan(1, ["a"])).toBe("seek");
    expect(s.plan(2, ["a", "a"])).toBe("seek"); // the same set
    expect(s.plan(3, ["b", "a"])).toBe("full");
    expect(s.cursors.size).toBe(0);
  });

  describe("full pass backoff", () => {
    /** Runs the full pass that is due at `at` (it must be due then, and not a moment earlier). */
    function fullAt(s: CursorState, at: number, o: Partial<FullOutcome> = {}): void {
      expect(s.plan(at - 1, ["a"])).not.toBe("full");
      expect(s.plan(at, ["a"])).toBe("full");
      s.afterFull(s.begin(), full(o), at);
    }

    it("doubles the interval after each empty full pass: 10 -> 20 -> 40 -> 60 s, capped", () => {
      const s = state();
      expect(s.fullIntervalMs).toBe(10_000);
      expect(s.plan(0, ["a"])).toBe("full");
      s.afterFull(s.begin(), full(), 0);
      expect([s.fullIntervalMs, s.nextFullDiscoveryAt]).toEqual([20_000, 20_000]);
      fullAt(s, 20_000);
      expect([s.fullIntervalMs, s.nextFullDiscoveryAt]).toEqual([40_000, 60_000]);
      fullAt(s, 60_000);
      expect([s.fullIntervalMs, s.nextFullDiscoveryAt]).toEqual([60_000, 120_000]);
      fullAt(s, 120_000);
      expect([s.fullIntervalMs, s.nextFullDiscoveryAt]).toEqual([60_000, 180_000]);
    });

    it("keeps the downward jitter on the backed-off interval", () => {
      const s = state(() => 0.5);
      s.afterFull(s.begin(), full(), 0);
      s.afterFull(s.begin(), full(), 17_500);
      expect(s.fullIntervalMs).toBe(40_000);
      expect(s.nextFullDiscoveryAt).toBe(17_500 + 35_000);
    });

    it("resets to the base interval on a claim by any pass, and brings the next full pass forward", () => {
      const s = state();
      s.afterFull(s.begin(), full(), 0);
      fullAt(s, 20_000);
      fullAt(s, 60_000);
      expect(s.nextFullDiscoveryAt).toBe(120_000);
      // A seek that claims nothing changes nothing; one that claims resets.
      s.cursors.set(10, pos(1, 1));
      s.afterSeek([{ priority: 10, after: pos(1, 1) }], outcome(), 70_000);
      expect([s.fullIntervalMs, s.nextFullDiscoveryAt]).toEqual([60_000, 120_000]);
      s.afterSeek(
        [{ priority: 10, after: pos(1, 1) }],
        outcome({ claimed: [{ priority: 10, pos: pos(2, 60) }] }),
        70_000,
      );
      expect([s.fullIntervalMs, s.nextFullDiscoveryAt]).toEqual([10_000, 80_000]);
      // A claim while not backed off leaves the schedule alone.
      s.afterSeek([], outcome({ claimed: [{ priority: 10, pos: pos(3, 61) }] }), 75_000);
      expect(s.nextFullDiscoveryAt).toBe(80_000);
      // Back off again, then a floored pass claims.
      fullAt(s, 80_000);
      expect(s.fullIntervalMs).toBe(20_000);
      s.afterFloored(
        s.begin(),
        [],
        [{ id: 70n, priority: 10, us: 5n }],
        outcome({ claimed: [{ priority: 10, pos: pos(5, 70) }] }),
        81_000,
      );
      expect([s.fullIntervalMs, s.nextFullDiscoveryAt]).toEqual([10_000, 91_000]);
      // A full pass that claims resets too.
      fullAt(s, 91_000);
      expect(s.fullIntervalMs).toBe(20_000);
      fullAt(s, 111_000, { claimed: [{ priority: 10, pos: pos(6, 71) }] });
      expect([s.fullIntervalMs, s.nextFullDiscoveryAt]).toEqual([10_000, 121_000]);
    });

    it("resets on a full pass that sees a due candidate it did not claim", () => {
      const s = state();
      s.afterFull(s.begin(), full(), 0);
      expect(s.fullIntervalMs).toBe(20_000);
      fullAt(s, 20_000, { heads: new Map([[10, pos(5, 7)]]) });
      expect([s.fullIntervalMs, s.nextFullDiscoveryAt]).toEqual([10_000, 30_000]);
      // Levels holding only rows not yet due (no head) do not count as work.
      fullAt(s, 30_000, { levels: [10] });
      expect(s.fullIntervalMs).toBe(20_000);
    });

    it("is not reset by a wakeup alone, but by the work claimed after it", () => {
      const s = state();
      s.afterFull(s.begin(), full(), 0);
      fullAt(s, 20_000);
      s.wakeup();
      expect(s.plan(21_000, ["a"])).toBe("floored");
      s.afterFloored(s.begin(), [], [], outcome(), 21_000);
      expect([s.fullIntervalMs, s.nextFullDiscoveryAt]).toEqual([40_000, 60_000]);
      s.wakeup();
      expect(s.plan(22_000, ["a"])).toBe("floored");
      s.afterFloored(
        s.begin(),
        [],
        [{ id: 60n, priority: 10, us: 5n }],
        outcome({ claimed: [{ priority: 10, pos: pos(5, 60) }] }),
        22_000,
      );
      expect([s.fullIntervalMs, s.nextFullDiscoveryAt]).toEqual([10_000, 32_000]);
    });

    it("lets requestFull and a change of types preempt the backed-off schedule", () => {
      const s = state();
      s.afterFull(s.begin(), full(), 0);
      fullAt(s, 20_000);
      fullAt(s, 60_000);
      expect(s.nextFullDiscoveryAt).toBe(120_000);
      s.requestFull();
      expect(s.plan(61_000, ["a"])).toBe("full");
      s.afterFull(s.begin(), full(), 61_000); // found nothing: still backed off, at the cap
      expect([s.fullIntervalMs, s.nextFullDiscoveryAt]).toEqual([60_000, 121_000]);
      expect(s.plan(62_000, ["a"])).not.toBe("full");
      expect(s.plan(62_000, ["a", "b"])).toBe("full");
    });

    it("forgets levels after two current intervals, not two base ones", () => {
      const s = state();
      s.afterFull(s.begin(), full({ levels: [10] }), 0);
      fullAt(s, 20_000, { levels: [10] });
      expect(s.fullIntervalMs).toBe(40_000);
      // 30 s after the last full pass saw it (more than two base intervals): still sought.
      expect(s.seekTargets("floored", 50_000).map((t) => t.priority)).toEqual([10]);
      expect(s.seekTargets("floored", 100_001).map((t) => t.priority)).toEqual([]);
    });
  });
});
