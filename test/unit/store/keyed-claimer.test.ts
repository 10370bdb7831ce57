/**
 * The keyed claimer runs two claims per poll, at once, each committing its own leases: one that fails (a
 * terminated backend) must not lose the other one's jobs: they are leased to a live node, and no sweep
 * would ever rescue them.
 */
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../../src/core/clock.js";
import type { ClaimedJob } from "../../../src/store/claim/claim-jobs.js";
import type { Claimer } from "../../../src/store/claim/claimer.js";
import type { KeyedClaim } from "../../../src/store/claim/keyed-claim.js";
import { KeyedClaimer } from "../../../src/store/claim/keyed-claimer.js";

const job = (id: string) => ({ id }) as unknown as ClaimedJob;
const lost = new Error("terminating connection due to administrator command");

/** A keyed claimer over a plain claim and a keyed claim statement, on `clock` (recheckMs 1000). */
function claimers(
  plain: () => Promise<ClaimedJob[]>,
  keyed: () => Promise<KeyedClaim>,
  clock = new ManualClock(0),
  failed: Array<{ error: unknown; kind: string }> = [],
) {
  const inner = {
    claim: plain,
    onWakeup: () => {},
    describe: () => ({}),
  } as unknown as Claimer;
  return new KeyedClaimer(inner, {
    claimKeyed: keyed,
    nodeId: "n",
    boostIntervalMs: 0,
    withPayload: true,
    clock,
    recheckMs: 1000,
    onStatementFailed: (error, kind) => failed.push({ error, kind }),
  });
}

/** A keyed claim statement's result while keyed rows are live. */
const live = (jobs: ClaimedJob[]): KeyedClaim => ({ jobs, keyed: true, nextKey: null });

describe("KeyedClaimer when one of its claims fails", () => {
  it("returns the other claim's jobs, and surfaces the error only when nothing was claimed", async () => {
    let plain: ClaimedJob[] = [];
    const clock = new ManualClock(0);
    const c = claimers(
      async () => plain.splice(0),
      async () => {
        throw lost;
      },
      clock,
    );
    // Nothing was claimed: the error surfaces (the poller backs off).
    await expect(c.claim(10, ["t"])).rejects.toBe(lost);
    // The keyed claim fails again, the plain one (sent again after recheckMs) took p1: p1 is kept.
    plain = [job("p1")];
    clock.advance(1000);
    expect((await c.claim(10, ["t"])).map((j) => j.id)).toEqual(["p1"]);
    expect(c.describe()).toMatchObject({ keyed: { secondClaimFailures: 1 } });
  });

  it("tells each failure the poll swallowed, naming its kind (a lost reply's claim may have committed)", async () => {
    const failed: Array<{ error: unknown; kind: string }> = [];
    const c = claimers(
      async () => [job("p1")],
      async () => {
        throw lost;
      },
      new ManualClock(0),
      failed,
    );
    expect((await c.claim(10, ["t"])).map((j) => j.id)).toEqual(["p1"]);
    expect(failed).toEqual([{ error: lost, kind: "keyed" }]);
  });

  it("does not tell a failure the poll threw (the claim cycle reports that one)", async () => {
    const failed: Array<{ error: unknown; kind: string }> = [];
    const c = claimers(
      async () => [],
      async () => {
        throw lost;
      },
      new ManualClock(0),
      failed,
    );
    await expect(c.claim(10, ["t"])).rejects.toBe(lost);
    expect(failed).toEqual([]);
  });

  it("keeps the keyed claim's jobs when the plain claim after it fails", async () => {
    const c = claimers(
      async () => {
        throw lost;
      },
      async () => live([job("k1"), job("k2")]),
    );
    expect((await c.claim(10, ["t"])).map((j) => j.id)).toEqual(["k1", "k2"]);
    expect(c.describe()).toMatchObject({ keyed: { secondClaimFailures: 1 } });
  });
});

describe("KeyedClaimer while every due job carries a key", () => {
  it("stops sending an unkeyed claim that came back empty, until recheckMs passes or a wakeup", async () => {
    const clock = new ManualClock(0);
    let plainCalls = 0;
    let keyedCalls = 0;
    const c = claimers(
      async () => {
        plainCalls++;
        return [];
      },
      async () => {
        keyedCalls++;
        return { jobs: [job(`k${keyedCalls}`)], keyed: true, nextKey: "a" };
      },
      clock,
    );
    // Poll 1: keyed first (1 job), then the unkeyed claim for the rest: empty.
    await c.claim(10, ["t"]);
    expect([keyedCalls, plainCalls]).toEqual([1, 1]);
    // Polls 2-3 within recheckMs: the keyed claim only.
    await c.claim(10, ["t"]);
    await c.claim(10, ["t"]);
    expect([keyedCalls, plainCalls]).toEqual([3, 1]);
    // After recheckMs the unkeyed claim is sent again.
    clock.advance(1000);
    await c.claim(10, ["t"]);
    expect(plainCalls).toBe(2);
    // A wakeup (a local enqueue, a coordinator hint) sends it at once.
    await c.claim(10, ["t"]);
    expect(plainCalls).toBe(2);
    c.onWakeup();
    await c.claim(10, ["t"]);
    expect(plainCalls).toBe(3);
  });
});

describe("KeyedClaimer while no keyed row is live", () => {
  it("returns a wakeup's unkeyed jobs after one statement, and looks at keyed rows at the next poll", async () => {
    const clock = new ManualClock(0);
    const calls: string[] = [];
    let plain: ClaimedJob[] = [];
    const c = claimers(
      async () => {
        calls.push("plain");
        return plain;
      },
      async () => {
        calls.push("keyed");
        return { jobs: [], keyed: false, nextKey: null };
      },
      clock,
    );
    // The first poll looks at both and learns that no keyed row is live.
    await c.claim(10, ["t"]);
    expect(calls).toEqual(["keyed", "plain"]);
    // A wakeup (an enqueue) with unkeyed work: one statement, its jobs returned at once.
    calls.length = 0;
    plain = [job("p1")];
    c.onWakeup();
    expect((await c.claim(10, ["t"])).map((j) => j.id)).toEqual(["p1"]);
    expect(calls).toEqual(["plain"]);
    // The next poll owes the keyed look.
    calls.length = 0;
    plain = [];
    await c.claim(10, ["t"]);
    expect(calls).toContain("keyed");
    // A wakeup whose work the unkeyed claim does not find (keyed work): the keyed claim follows at once.
    calls.length = 0;
    c.onWakeup();
    await c.claim(10, ["t"]);
    expect(calls).toEqual(["plain", "keyed"]);
  });

  it("sends only the unkeyed claim for wakeups whose hint says unkeyed, until its next look is due", async () => {
    const clock = new ManualClock(0);
    const calls: string[] = [];
    const c = claimers(
      async () => {
        calls.push("plain");
        return [job("p")];
      },
      async () => {
        calls.push("keyed");
        return { jobs: [], keyed: false, nextKey: null };
      },
      clock,
    );
    await c.claim(10, ["t"]);
    calls.length = 0;
    for (let i = 0; i < 5; i++) {
      clock.advance(100);
      c.onWakeup(true);
      await c.claim(10, ["t"]);
    }
    // No look was owed: each woken poll was one statement.
    expect(calls).toEqual(["plain", "plain", "plain", "plain", "plain"]);
    // recheckMs after the last look, the keyed rows are looked at again: the woken poll finds unkeyed jobs
    // and owes the look, which the next poll pays (keyed first, the unkeyed answer having been short).
    calls.length = 0;
    clock.advance(1000);
    c.onWakeup(true);
    await c.claim(10, ["t"]);
    await c.claim(10, ["t"]);
    expect(calls).toEqual(["plain", "keyed", "plain"]);
  });
});

describe("KeyedClaimer sends both claims at once", () => {
  it("hands the first answer's jobs over early, while the other claim is still out", async () => {
    let releaseKeyed: (r: KeyedClaim) => void = () => {};
    const c = claimers(
      async () => [job("p1"), job("p2")],
      () => new Promise<KeyedClaim>((resolve) => (releaseKeyed = resolve)),
    );
    const early: string[][] = [];
    const poll = c.claim(10, ["t"], [], (jobs) => early.push(jobs.map((j) => j.id)));
    // The unkeyed claim answered; the keyed one is still out: p1 and p2 are already handed over.
    await new Promise<void>((resolve) => {
      const check = () => (early.length > 0 ? resolve() : setImmediate(check));
      check();
    });
    expect(early).toEqual([["p1", "p2"]]);
    releaseKeyed(live([job("k1")]));
    expect((await poll).map((j) => j.id)).toEqual(["k1"]);
  });
});

describe("KeyedClaimer splitting a poll's room", () => {
  it("gives the room one side left to the side that filled its share, so the poll is not short", async () => {
    let n = 0;
    const asked: number[] = [];
    const inner = {
      claim: async (limit: number) => {
        asked.push(limit);
        return Array.from({ length: limit }, () => job(`p${n++}`));
      },
      onWakeup: () => {},
      describe: () => ({}),
    } as unknown as Claimer;
    const c = new KeyedClaimer(inner, {
      claimKeyed: async () => live([job("k1")]),
      nodeId: "n",
      boostIntervalMs: 0,
      withPayload: true,
      clock: new ManualClock(0),
    });
    // Keyed (first) asks for 5 and takes 1; unkeyed fills its 5 and then takes the 4 left.
    expect((await c.claim(10, ["t"])).length).toBe(10);
    expect(asked).toEqual([5, 4]);
  });
});
