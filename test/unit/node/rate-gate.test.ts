/**
 * The node's rate-limit gate on the in-memory twin and a ManualClock: the keys an attempt is admitted under,
 * refusals from the node's memory without a store call, and a failed admission that refuses (the job comes
 * back later) and is reported, never thrown.
 */
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../../src/core/clock.js";
import { PawlEventEmitter } from "../../../src/core/events.js";
import { resolveRateLimit } from "../../../src/logic/rate-limit.js";
import type { JobRun } from "../../../src/node/attempt/job-run.js";
import { RateGate } from "../../../src/node/rate-gate.js";
import { resolveJobType } from "../../../src/node/registry.js";
import { InMemoryJobStore } from "../../helpers/in-memory-store.js";

const t0 = Date.parse("2030-01-01T00:00:00Z");

function setup() {
  const clock = new ManualClock(t0);
  const store = new InMemoryJobStore(clock);
  const events = new PawlEventEmitter();
  let calls = 0;
  const admit = store.admitRate.bind(store);
  store.admitRate = (...args) => {
    calls++;
    return admit(...args);
  };
  const queueLimits = new Map([
    ["mail", resolveRateLimit("q", { limit: 1, perMs: 60_000 }, false, "INVALID_CONFIG")],
  ]);
  const gate = new RateGate({ store, clock, events, queueLimits });
  return { clock, store, events, gate, calls: () => calls };
}

const type = resolveJobType("api", async () => 1, { rateLimit: { limit: 2, perMs: 1000 } });
const keyed = resolveJobType("tenant", async () => 1, {
  rateLimit: { limit: 2, perMs: 1000, key: (p: unknown) => (p as { t: unknown }).t as string },
});
const plain = resolveJobType("plain", async () => 1);

function run(id: string, keys: JobRun["rateKeys"]): JobRun {
  return {
    claimed: { id, type: "api" },
    info: { id, type: "api", queue: "default", priority: 10, attempt: 1, maxAttempts: 5 },
    rateKeys: keys,
  } as unknown as JobRun;
}

const answer = (gate: RateGate, r: JobRun) =>
  new Promise<[boolean, number]>((resolve) => gate.admit(r, (ok, ms) => resolve([ok, ms])));

describe("RateGate", () => {
  it.each([
    ["a type's own window", type, "default", {}, [{ key: "type:api", limit: 2, perMs: 1000 }]],
    ["a payload key", keyed, "default", { t: "acme" }, [{ key: "key:acme", limit: 2, perMs: 1000 }]],
    [
      "the type's and its queue's",
      type,
      "mail",
      {},
      [
        { key: "type:api", limit: 2, perMs: 1000 },
        { key: "queue:mail", limit: 1, perMs: 60_000 },
      ],
    ],
    ["the queue's alone", plain, "mail", {}, [{ key: "queue:mail", limit: 1, perMs: 60_000 }]],
    ["none", plain, "default", {}, []],
  ])("keys: %s", (_, t, queue, payload, keys) => {
    const { gate } = setup();
    expect(gate.limited(t, queue)).toBe(keys.length > 0);
    expect(gate.keysOf(t, queue, payload)).toEqual(keys);
  });

  it.each([
    [{ t: 7 }, /returned 7: it must return a string/],
    [null, /the rateLimit key of tenant threw: /],
  ])("a key function that fails on %j is an error for that job", (payload, message) => {
    const { gate } = setup();
    const keys = gate.keysOf(keyed, "default", payload);
    expect(keys).toBeInstanceOf(Error);
    expect((keys as Error).message).toMatch(message);
  });

  it("after the store's refusal, the key's jobs are refused from memory, spread, until the opening", async () => {
    const { gate, clock, events, calls } = setup();
    const refusals: boolean[] = [];
    events.on("job:rate-limited", (e) => refusals.push(e.local));
    const k = gate.keysOf(type, "default", {}) as JobRun["rateKeys"];
    expect(await answer(gate, run("1", k))).toEqual([true, 0]);
    clock.advance(100);
    expect(await answer(gate, run("2", k))).toEqual([true, 0]);
    clock.advance(100);
    expect(await answer(gate, run("3", k))).toEqual([false, 800]); // the opening, at t0 + 1000
    expect(await answer(gate, run("4", k))).toEqual([false, 1300]); // the episode's next slot: + 500
    expect(await answer(gate, run("5", k))).toEqual([false, 1800]); // the next window
    expect(calls()).toBe(3);
    expect(refusals).toEqual([false, true, true]);
    expect(gate.closedKeys()).toEqual([{ key: "type:api", openAt: t0 + 1000, refused: 3 }]);
    clock.advance(800); // the opening: the store is asked again
    expect(await answer(gate, run("6", k))).toEqual([true, 0]);
    expect(calls()).toBe(4);
  });

  it("a failed admission refuses for min(perMs, 5 s) and reports an error, never throws", async () => {
    const { gate, store, events } = setup();
    store.admitRate = () => Promise.reject(new Error("connection refused"));
    const errors: string[] = [];
    events.on("error", (e) => errors.push(`${e.where}: ${e.error.message}`));
    const k = gate.keysOf(type, "mail", {}) as JobRun["rateKeys"];
    expect(await answer(gate, run("1", k))).toEqual([false, 5000]);
    expect(await answer(gate, run("2", gate.keysOf(type, "default", {}) as JobRun["rateKeys"]))).toEqual([
      false,
      1000,
    ]);
    expect(errors).toEqual([
      "rate limit admission: connection refused",
      "rate limit admission: connection refused",
    ]);
  });
});
