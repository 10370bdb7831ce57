import { describe, expect, it } from "vitest";
import { Lane, NodeLanes, prefetchShare, type Buffered } from "../../../src/node/claim/lanes.js";
import { claimLanes, reserveLanes } from "../../../src/node/claim/lane-claim.js";
import type { ClaimedJob } from "../../../src/store/claim/claim-jobs.js";
import type { Claimer } from "../../../src/store/claim/claimer.js";

// The node's lanes on their own: no database, claimers are small fakes that record what they were asked.

/** A claimer that answers with `answer(limit)` (or throws it) and records its calls. */
function fakeClaimer(answer: (limit: number) => ClaimedJob[] | Error = () => []) {
  const calls: { limit: number; types: readonly string[]; dueLevels: readonly number[] | undefined }[] = [];
  let wakeups = 0;
  let fullPasses = 0;
  const claimer: Claimer & { calls: typeof calls; wakeups: () => number; fullPasses: () => number } = {
    calls,
    wakeups: () => wakeups,
    fullPasses: () => fullPasses,
    claim: (limit, types, dueLevels) => {
      calls.push({ limit, types, dueLevels });
      const r = answer(limit);
      return r instanceof Error ? Promise.reject(r) : Promise.resolve(r);
    },
    onWakeup: () => void wakeups++,
    requestFullPass: () => void fullPasses++,
    describe: () => ({ kind: "fake" }),
  };
  return claimer;
}

const claimed = (id: string, queue = "default", priority = 0): ClaimedJob => ({
  id,
  type: "t",
  queue,
  priority,
  boost: 0,
  attempt: 1,
  maxAttempts: 3,
  timeoutMs: null,
  scheduledAtMs: 0,
  payload: {},
});

const buffer = (lane: Lane, ...ids: string[]) => {
  for (const id of ids) lane.buffer.push({ job: claimed(id, lane.queue ?? "default"), claimedAt: 0, lane });
};

const drainIds = (lanes: NodeLanes): string[] => {
  const out: string[] = [];
  for (let next: Buffered | undefined = lanes.next(); next; next = lanes.next()) out.push(next.job.id);
  return out;
};

describe("NodeLanes.build", () => {
  it("without queues: one catch-all lane with the node's concurrency, prefetch and claimer", () => {
    const claimer = fakeClaimer();
    const lanes = NodeLanes.build({
      concurrency: 4,
      prefetch: 10,
      queues: null,
      claimer: () => claimer,
      queueClaimer: () => {
        throw new Error("no per-queue claimer without queues");
      },
    });
    expect(lanes.all).toHaveLength(1);
    const [lane] = lanes.all as [Lane];
    expect(lane.queue).toBeNull();
    expect(lane.limit).toBe(4);
    expect(lane.prefetch).toBe(10);
    expect(lane.claimer).toBe(claimer);
    expect(lanes.room()).toBe(14);
  });

  it("with queues: one lane per queue, in order, each with its own claimer and a share of the prefetch", () => {
    const made: string[] = [];
    const lanes = NodeLanes.build({
      concurrency: 4,
      prefetch: 8,
      queues: new Map([
        ["a", 3],
        ["b", 1],
      ]),
      claimer: () => {
        throw new Error("the node's claimer is the catch-all lane's");
      },
      queueClaimer: (queue) => {
        made.push(queue);
        return fakeClaimer();
      },
    });
    expect(made).toEqual(["a", "b"]);
    expect(lanes.describe()).toEqual([
      { queue: "a", limit: 3, running: 0, buffered: 0 },
      { queue: "b", limit: 1, running: 0, buffered: 0 },
    ]);
    expect(lanes.all.map((l) => l.prefetch)).toEqual([6, 2]);
    expect(lanes.all.map((l) => l.room)).toEqual([9, 3]);
    expect(lanes.room()).toBe(12);
  });

  it("shares the prefetch in proportion, at least one per lane when positive, none when zero", () => {
    expect(prefetchShare(8, 3, 4)).toBe(6);
    expect(prefetchShare(1, 1, 100)).toBe(1);
    expect(prefetchShare(0, 3, 4)).toBe(0);
  });

  it("refuses a node without lanes", () => {
    expect(() => new NodeLanes([])).toThrow(/at least one lane/);
  });
});

describe("NodeLanes: starting, releasing, handing back", () => {
  it("a catch-all lane starts jobs up to the node's concurrency, in claim order", () => {
    const lane = new Lane(null, 2, 3, fakeClaimer());
    const lanes = new NodeLanes([lane]);
    buffer(lane, "1", "2", "3");
    expect(lane.room).toBe(2); // 2 free + 3 prefetch - 3 buffered
    expect(drainIds(lanes)).toEqual(["1", "2"]);
    expect(lane.running).toBe(2);
    expect(lanes.buffered).toBe(1);
    lane.release();
    expect(drainIds(lanes)).toEqual(["3"]);
  });

  it("per-queue lanes start up to each limit, round robin, and free on release", () => {
    const a = new Lane("a", 2, 0, fakeClaimer());
    const b = new Lane("b", 1, 0, fakeClaimer());
    const lanes = new NodeLanes([a, b]);
    buffer(a, "a1", "a2", "a3");
    buffer(b, "b1", "b2");
    expect(drainIds(lanes)).toEqual(["a1", "b1", "a2"]);
    expect(lanes.describe()).toEqual([
      { queue: "a", limit: 2, running: 2, buffered: 1 },
      { queue: "b", limit: 1, running: 1, buffered: 1 },
    ]);
    expect(lanes.withRoom()).toEqual([]);
    expect(lanes.has("b2")).toBe(true);
    expect(lanes.has("b1")).toBe(false);
    b.release();
    expect(lanes.next()?.job.id).toBe("b2");
    expect(lanes.next()).toBeUndefined();
  });

  it("release never counts below zero", () => {
    const lane = new Lane(null, 1, 0, fakeClaimer());
    lane.release();
    expect(lane.running).toBe(0);
    expect(lane.room).toBe(1);
  });

  it("takeAll empties every lane once, whatever the configuration", () => {
    const single = new Lane(null, 1, 5, fakeClaimer());
    buffer(single, "1", "2");
    const one = new NodeLanes([single]);
    expect(one.takeAll().map((i) => i.job.id)).toEqual(["1", "2"]);
    expect(one.takeAll()).toEqual([]);
    expect(one.buffered).toBe(0);

    const a = new Lane("a", 1, 5, fakeClaimer());
    const b = new Lane("b", 1, 5, fakeClaimer());
    buffer(a, "a1");
    buffer(b, "b1", "b2");
    const two = new NodeLanes([a, b]);
    expect(two.takeAll().map((i) => i.job.id)).toEqual(["a1", "b1", "b2"]);
    expect(two.takeAll()).toEqual([]);
    expect(two.buffered).toBe(0);
  });

  it("wakeups and full-pass requests reach every lane's claimer", () => {
    const ca = fakeClaimer();
    const cb = fakeClaimer();
    const lanes = new NodeLanes([new Lane("a", 1, 0, ca), new Lane("b", 1, 0, cb)]);
    lanes.onWakeup();
    lanes.requestFullPass();
    expect([ca.wakeups(), cb.wakeups(), ca.fullPasses(), cb.fullPasses()]).toEqual([1, 1, 1, 1]);
  });
});

describe("claimLanes", () => {
  const options = (errors: [string | null, unknown][] = []) => ({
    types: ["t"],
    dueLevels: [5],
    onError: (lane: Lane, error: unknown) => void errors.push([lane.queue, error]),
  });

  it("each lane claims its own room (capped at the batch) through its own claimer, with the due levels", async () => {
    const ca = fakeClaimer((n) => Array.from({ length: n }, (_, i) => claimed(`a${i}`, "a")));
    const cb = fakeClaimer(() => [claimed("b0", "b")]);
    const a = new Lane("a", 4, 4, ca);
    const b = new Lane("b", 1, 1, cb);
    const r = await claimLanes(reserveLanes([a, b], 3), options());
    expect(ca.calls).toEqual([{ limit: 3, types: ["t"], dueLevels: [5] }]);
    expect(cb.calls).toEqual([{ limit: 2, types: ["t"], dueLevels: [5] }]);
    expect(r.limit).toBe(5);
    expect(r.batches.map((x) => [x.lane.queue, x.jobs.map((j) => j.id)])).toEqual([
      ["a", ["a0", "a1", "a2"]],
      ["b", ["b0"]],
    ]);
  });

  it("a failed lane is reported and costs the others nothing", async () => {
    const boom = new Error("lane a down");
    const errors: [string | null, unknown][] = [];
    const a = new Lane(
      "a",
      1,
      0,
      fakeClaimer(() => boom),
    );
    const b = new Lane(
      "b",
      1,
      0,
      fakeClaimer(() => [claimed("b0", "b")]),
    );
    const r = await claimLanes(reserveLanes([a, b], 3), options(errors));
    expect(r.batches.map((x) => x.lane.queue)).toEqual(["b"]);
    expect(errors).toEqual([["a", boom]]);
  });

  it("fails the poll when every lane failed (one lane: its claim's error)", async () => {
    const boom = new Error("database down");
    const errors: [string | null, unknown][] = [];
    const only = new Lane(
      null,
      1,
      0,
      fakeClaimer(() => boom),
    );
    await expect(claimLanes(reserveLanes([only], 3), options(errors))).rejects.toBe(boom);
    expect(errors).toEqual([]);
  });

  it("a reservation counts against the lanes' room until released, so a poll ahead asks only for the rest", async () => {
    const ca = fakeClaimer((n) => Array.from({ length: n }, (_, i) => claimed(`a${i}`, "a")));
    const a = new Lane("a", 2, 8, ca); // room 10
    const first = reserveLanes([a], 4);
    expect([first.limit, a.reserved, a.room]).toEqual([4, 4, 6]);
    const second = reserveLanes([a], 500);
    expect([second.limit, a.reserved, a.room]).toEqual([6, 10, 0]);
    expect(reserveLanes([a], 500).limit).toBe(0);
    await claimLanes(second, options());
    expect(ca.calls.map((c) => c.limit)).toEqual([6]);
    second.release();
    second.release(); // once only
    expect([a.reserved, a.room]).toEqual([4, 6]);
    first.release();
    expect(a.room).toBe(10);
  });
});
