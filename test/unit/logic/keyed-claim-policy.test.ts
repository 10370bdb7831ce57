import { describe, expect, it } from "vitest";
import {
  afterFullPassRequest,
  afterKeyedAnswer,
  afterKeyedWakeup,
  afterUnkeyedAnswer,
  initialKeyedClaimMemory,
  planKeyedClaim,
  splitRoom,
  type KeyedClaimMemory,
  type KeyedClaimPlan,
} from "../../../src/logic/keyed-claim-policy.js";

const m = (over: Partial<KeyedClaimMemory> = {}): KeyedClaimMemory => ({
  ...initialKeyedClaimMemory,
  ...over,
});
const both = (keyedFirst: boolean): KeyedClaimPlan => ({ kind: "both", keyedFirst });
const recheck = 1000;

describe("keyed claim policy: the plan of a poll", () => {
  it.each<[string, KeyedClaimMemory, number, KeyedClaimPlan]>([
    ["a new node sends both, the keyed claim first", m(), 0, both(true)],
    ["both again: the order alternates", m({ keyedFirst: true }), 0, both(false)],
    [
      "both, keyed first again while the unkeyed answer was short",
      m({ keyedFirst: true, keyedFirstUntilMs: 500 }),
      499,
      both(true),
    ],
    [
      "no keyed row live and not time to look: unkeyed alone",
      m({ keyedLive: false, nextLookMs: 1000 }),
      999,
      {
        kind: "unkeyed",
      },
    ],
    [
      "no keyed row live, time to look: unkeyed, keyed only if it found nothing",
      m({ keyedLive: false, nextLookMs: 1000 }),
      1000,
      { kind: "unkeyed-then-keyed-if-empty" },
    ],
    [
      "no keyed row live but a look is owed: both",
      m({ keyedLive: false, nextLookMs: 0, keyedOwed: true }),
      5,
      both(true),
    ],
    ["the unkeyed claim is quiet: keyed alone", m({ unkeyedQuietUntilMs: 800 }), 799, { kind: "keyed" }],
    ["the quiet ends at its time", m({ unkeyedQuietUntilMs: 800 }), 800, both(true)],
  ])("%s", (_label, memory, now, plan) => {
    expect(planKeyedClaim(memory, now).plan).toEqual(plan);
  });

  it("a poll that sends both pays the owed look and remembers its order; the others change nothing", () => {
    const owed = m({ keyedLive: false, keyedOwed: true });
    expect(planKeyedClaim(owed, 0).memory).toEqual({ ...owed, keyedFirst: true, keyedOwed: false });
    const quiet = m({ unkeyedQuietUntilMs: 10 });
    expect(planKeyedClaim(quiet, 0).memory).toBe(quiet);
  });
});

describe("keyed claim policy: what the answers teach", () => {
  it.each<[string, KeyedClaimMemory, KeyedClaimPlan, number, number, Partial<KeyedClaimMemory>]>([
    [
      "a full unkeyed answer clears both windows",
      m({ keyedFirstUntilMs: 9, unkeyedQuietUntilMs: 9 }),
      both(false),
      10,
      10,
      {
        keyedFirstUntilMs: 0,
        unkeyedQuietUntilMs: 0,
      },
    ],
    [
      "a short one puts the keyed claim first for recheckMs",
      m(),
      both(false),
      3,
      10,
      {
        keyedFirstUntilMs: 100 + recheck,
        unkeyedQuietUntilMs: 0,
      },
    ],
    [
      "an empty one with keyed rows live quiets the unkeyed claim",
      m(),
      both(true),
      0,
      10,
      {
        keyedFirstUntilMs: 100 + recheck,
        unkeyedQuietUntilMs: 100 + recheck,
      },
    ],
    [
      "an empty one with no keyed row live does not",
      m({ keyedLive: false }),
      { kind: "unkeyed-then-keyed-if-empty" },
      0,
      10,
      {
        unkeyedQuietUntilMs: 0,
        keyedOwed: false,
      },
    ],
    [
      "jobs found before looking at keyed rows owe the look",
      m({ keyedLive: false }),
      { kind: "unkeyed-then-keyed-if-empty" },
      2,
      10,
      {
        keyedOwed: true,
      },
    ],
  ])("%s", (_label, memory, plan, claimed, asked, expected) => {
    expect(afterUnkeyedAnswer(memory, plan, { claimed, asked }, 100, recheck)).toMatchObject(expected);
  });

  it("a keyed answer with no keyed row live schedules the next look; a live one keeps it", () => {
    expect(afterKeyedAnswer(m(), false, 100, recheck)).toMatchObject({ keyedLive: false, nextLookMs: 1100 });
    expect(afterKeyedAnswer(m({ keyedLive: false, nextLookMs: 50 }), true, 100, recheck)).toMatchObject({
      keyedLive: true,
      nextLookMs: 50,
    });
  });

  // A node that saw no keyed row live, waiting until 900 for its next keyed look, with both holds on.
  const waitingForLook = () =>
    m({ keyedLive: false, nextLookMs: 900, keyedFirstUntilMs: 900, unkeyedQuietUntilMs: 900 });

  it("a wakeup looks at both at once; a full-pass request looks at keyed rows at once", () => {
    const waiting = waitingForLook();
    expect(planKeyedClaim(waiting, 100).plan).toEqual({ kind: "unkeyed" });
    const woken = afterKeyedWakeup(waiting);
    expect(woken).toMatchObject({ nextLookMs: 0, keyedFirstUntilMs: 0, unkeyedQuietUntilMs: 0 });
    expect(planKeyedClaim(woken, 100).plan).toEqual({ kind: "unkeyed-then-keyed-if-empty" });
    expect(afterFullPassRequest(waiting)).toMatchObject({
      nextLookMs: 0,
      unkeyedQuietUntilMs: 0,
      keyedFirstUntilMs: 900,
    });
  });

  it("a wakeup for work without keys ends the unkeyed holds but leaves the keyed look where it was", () => {
    const waiting = waitingForLook();
    const woken = afterKeyedWakeup(waiting, true);
    expect(woken).toEqual({ ...waiting, keyedFirstUntilMs: 0, unkeyedQuietUntilMs: 0 });
    expect(planKeyedClaim(woken, 100).plan).toEqual({ kind: "unkeyed" });
    // With keyed rows live it changes nothing about sending both.
    expect(planKeyedClaim(afterKeyedWakeup(m({ keyedFirst: true }), true), 100).plan).toEqual(both(false));
  });

  it.each<[string, boolean, number]>([
    // Every poll woken: the look owed after each unkeyed find is paid by the next, in front of its jobs.
    ["hints that may carry keys", false, 10],
    // Only the look every recheckMs comes due, as on a node that is never woken.
    ["hints that say unkeyed", true, 1],
  ])("pickups each woken by %s: polls that send two statements in 2 s", (_label, unkeyed, twice) => {
    let memory = afterKeyedAnswer(initialKeyedClaimMemory, false, 0, recheck);
    let doubles = 0;
    for (let now = 100; now < 2100; now += 100) {
      memory = afterKeyedWakeup(memory, unkeyed);
      const { plan, memory: planned } = planKeyedClaim(memory, now);
      memory = planned;
      if (plan.kind === "both") {
        doubles++;
        memory = afterKeyedAnswer(memory, false, now, recheck);
      }
      memory = afterUnkeyedAnswer(memory, plan, { claimed: 1, asked: 10 }, now, recheck);
    }
    expect(doubles).toBe(twice);
  });

  it("a node whose jobs carry no keys sends one statement per poll after its first look", () => {
    let memory = initialKeyedClaimMemory;
    const sent: string[] = [];
    for (let now = 0; now < 3000; now += 100) {
      const { plan, memory: planned } = planKeyedClaim(memory, now);
      memory = planned;
      if (plan.kind === "both") {
        sent.push(plan.keyedFirst ? "keyed+unkeyed" : "unkeyed+keyed");
        memory = afterKeyedAnswer(memory, false, now, recheck);
        memory = afterUnkeyedAnswer(memory, plan, { claimed: 10, asked: 10 }, now, recheck);
      } else if (plan.kind === "unkeyed") {
        sent.push("unkeyed");
      } else if (plan.kind === "unkeyed-then-keyed-if-empty") {
        sent.push("unkeyed");
        memory = afterUnkeyedAnswer(memory, plan, { claimed: 10, asked: 10 }, now, recheck);
      } else {
        sent.push("keyed");
      }
    }
    expect(sent[0]).toBe("keyed+unkeyed");
    // Every recheckMs the look comes due: the poll then finds unkeyed jobs alone and owes the look, which
    // the next poll pays with both claims; every other poll is one statement.
    expect(sent.filter((s) => s.includes("+"))).toHaveLength(3);
    expect(sent.filter((s) => s === "unkeyed")).toHaveLength(27);
  });
});

describe("splitRoom", () => {
  const m = (lastKeyed: [number, number] | null, lastUnkeyed: [number, number] | null) => ({
    ...initialKeyedClaimMemory,
    lastKeyed: lastKeyed && { taken: lastKeyed[0], asked: lastKeyed[1] },
    lastUnkeyed: lastUnkeyed && { taken: lastUnkeyed[0], asked: lastUnkeyed[1] },
  });
  it.each<[string, ReturnType<typeof m>, number, boolean, { keyed: number; unkeyed: number }]>([
    [
      "no answers yet: halves, keyed first takes the odd row",
      m(null, null),
      11,
      true,
      { keyed: 6, unkeyed: 5 },
    ],
    [
      "no answers yet: halves, unkeyed first takes the odd row",
      m(null, null),
      11,
      false,
      { keyed: 5, unkeyed: 6 },
    ],
    ["both filled last time: halves", m([5, 5], [5, 5]), 10, true, { keyed: 5, unkeyed: 5 }],
    [
      "keyed took nothing (keys at their limit): 1 keyed, the rest unkeyed",
      m([0, 5], [5, 5]),
      10,
      true,
      { keyed: 1, unkeyed: 9 },
    ],
    ["keyed took 2 of 5: it asks for 4", m([2, 5], [5, 5]), 10, false, { keyed: 4, unkeyed: 6 }],
    [
      "unkeyed took nothing: 1 unkeyed, the rest keyed",
      m([5, 5], [0, 5]),
      10,
      false,
      { keyed: 9, unkeyed: 1 },
    ],
    ["both short: both capped, less than the room", m([1, 5], [0, 5]), 10, true, { keyed: 2, unkeyed: 1 }],
    ["a room of 1 goes to the side that goes first", m(null, null), 1, true, { keyed: 1, unkeyed: 0 }],
  ])("%s", (_, memory, limit, keyedFirst, expected) => {
    const r = splitRoom(memory, limit, keyedFirst);
    expect(r).toEqual(expected);
    expect(r.keyed + r.unkeyed).toBeLessThanOrEqual(limit);
  });

  it("forgets a short answer at a wakeup that may bring that kind of work", () => {
    const short = m([0, 5], [0, 5]);
    expect(afterKeyedWakeup(short, true)).toMatchObject({ lastUnkeyed: null, lastKeyed: { taken: 0 } });
    expect(afterKeyedWakeup(short, false)).toMatchObject({ lastUnkeyed: null, lastKeyed: null });
  });
});
