import { describe, expect, it } from "vitest";
import {
  CursorState,
  comparePositions,
  jitterDown,
  pickWindow,
  positionBefore,
  usToIso,
  type FullOutcome,
  type PassOutcome,
  type Position,
} from "../../src/store/claim-cursor-state.js";

const pos = (us: number, id: number): Position => ({ us: BigInt(us), id: BigInt(id) });
const state = () => new CursorState({ discoveryMs: 1000, fullDiscoveryMs: 10_000, random: () => 0 });
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
    expect(s.plan(10_000, ["a"])).toBe("full");
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
});
