/**
 * The store contract: one test body run against the PostgreSQL store (test/contract/store-postgres.test.ts)
 * and the in-memory twin (test/contract/store-in-memory.test.ts), so the twin the runtime tests rely on
 * cannot drift from the SQL. Times are fixed: every job has an explicit `runAt` and every claim an explicit
 * `now`, so PostgreSQL's now() and the twin's clock never enter the comparison.
 */
import { beforeEach, describe, expect, it } from "vitest";
import type { NewJob } from "../../src/input/enqueue-input.js";
import type { NodeStore } from "../../src/store/job-store.js";
import { newJob } from "../helpers/new-job.js";

/** A fresh, empty store per test. */
export interface StoreUnderTest {
  store: NodeStore;
}

const t0 = Date.parse("2030-01-01T00:00:00Z");
const minute = 60_000;

/** A job of type `type` (default `a`), due `agoMs` before t0 (negative: not yet due). */
function job(label: string, priority: number, agoMs: number, extra: Partial<NewJob> = {}): NewJob {
  const due = new Date(t0 - agoMs);
  return newJob({
    type: "a",
    payloadJson: JSON.stringify({ label }),
    priority,
    runAt: due,
    maxAttempts: 5,
    ...extra,
  });
}

const error = { attempt: 1, name: "Error", message: "boom" };

/** Runs the contract against the stores `fresh` builds (one per test). */
export function describeStoreContract(name: string, fresh: () => Promise<StoreUnderTest>): void {
  describe(`store contract: ${name}`, () => {
    let store: NodeStore;
    beforeEach(async () => {
      store = (await fresh()).store;
    });

    /** Enqueues `jobs` and returns label -> id. */
    async function seed(jobs: NewJob[]): Promise<Map<string, string>> {
      const rows = await store.enqueue(jobs);
      return new Map(rows.map((r) => [(r.payload as { label: string }).label, r.id]));
    }

    const claimArgs = {
      nodeId: "n1",
      types: ["a"],
      boostIntervalMs: 10 * minute,
      withPayload: true,
      now: new Date(t0),
    };

    it("claims due jobs of the given types by priority + age boost, then scheduled time, then id", async () => {
      await seed([
        job("fresh-high", 50, 0),
        job("old-low", 45, 60 * minute), // boost 6: effective 51, ahead of fresh-high
        job("tie-1", 30, 5 * minute),
        job("tie-2", 30, 5 * minute), // same level and time: id order
        job("older-same-level", 30, 8 * minute), // same effective (30) as the ties, older: first of them
        job("not-due", 100, -minute),
        job("other-type", 100, minute, { type: "b" }),
      ]);
      const claimed = await store.claim({ ...claimArgs, limit: 10 });
      expect(claimed.map((j) => (j.payload as { label: string }).label)).toEqual([
        "old-low",
        "fresh-high",
        "older-same-level",
        "tie-1",
        "tie-2",
      ]);
      expect(claimed.map((j) => [j.boost, j.attempt])).toEqual([
        [6, 1],
        [0, 1],
        [0, 1],
        [0, 1],
        [0, 1],
      ]);
    });

    it("takes at most `limit`, the best first, and the next claim continues where it stopped", async () => {
      const ids = await seed([job("p10", 10, 0), job("p30", 30, 0), job("p20", 20, 0)]);
      const first = await store.claim({ ...claimArgs, limit: 2 });
      const second = await store.claim({ ...claimArgs, limit: 2 });
      expect(first.map((j) => j.id)).toEqual([ids.get("p30"), ids.get("p20")]);
      expect(second.map((j) => j.id)).toEqual([ids.get("p10")]);
      expect(await store.claim({ ...claimArgs, limit: 2 })).toEqual([]);
    });

    it("claims only the named queue when one is given, and no payload on the lazy path", async () => {
      const ids = await seed([job("q", 10, 0, { queue: "mail" }), job("d", 90, 0)]);
      const claimed = await store.claim({ ...claimArgs, limit: 5, queue: "mail", withPayload: false });
      expect(claimed.map((j) => [j.id, j.queue, "payload" in j])).toEqual([[ids.get("q"), "mail", false]]);
      expect((await store.loadPayloads([ids.get("q") as string])).get(ids.get("q") as string)).toEqual({
        label: "q",
      });
    });

    it("writes outcomes only for rows RUNNING under the writing node", async () => {
      const ids = await seed([job("c", 10, 0), job("r", 10, 0), job("k", 10, 0), job("s", 10, 0)]);
      await store.claim({ ...claimArgs, limit: 4 });
      const id = (l: string) => ids.get(l) as string;
      expect(await store.complete("n2", [{ id: id("c"), resultJson: "1" }])).toEqual(new Set());
      expect(await store.complete("n1", [{ id: id("c"), resultJson: '{"ok":true}' }])).toEqual(
        new Set([id("c")]),
      );
      expect(await store.complete("n1", [{ id: id("c"), resultJson: null }])).toEqual(new Set());
      expect(await store.retry("n1", [{ id: id("r"), delayMs: 0, error }])).toEqual(new Set([id("r")]));
      expect(await store.kill("n1", [{ id: id("k"), error }])).toEqual(new Set([id("k")]));
      expect(await store.reschedule("n1", [{ id: id("s"), delayMs: 0 }])).toEqual(new Set([id("s")]));
      const read = async (l: string) => {
        const j = await store.get(id(l));
        return [j?.status, j?.attempts, j?.pickedBy, j?.lastError];
      };
      expect((await store.get(id("c")))?.result).toEqual({ ok: true });
      expect(await read("c")).toEqual(["SUCCEEDED", 1, "n1", null]);
      expect(await read("r")).toEqual(["PENDING", 1, null, "boom"]);
      expect(await read("k")).toEqual(["DEAD", 1, "n1", "boom"]);
      expect(await read("s")).toEqual(["PENDING", 0, null, null]);
    });

    it("an outcome sent again after it landed changes nothing, even on the node's next lease of the row", async () => {
      const ids = await seed([job("s", 10, 0), job("r", 10, 0)]);
      const id = (l: string) => ids.get(l) as string;
      const leaseOf = (j: { attempt: number; scheduledAtMs: number }) => ({
        attempt: j.attempt,
        scheduledAtMs: j.scheduledAtMs,
      });
      const claimOne = async (l: string) => {
        const later = { ...claimArgs, now: new Date(t0 + minute) };
        const [j] = (await store.claim({ ...later, limit: 2 })).filter((c) => c.id === id(l));
        if (!j) throw new Error(`${l} was not claimed`);
        return j;
      };
      const first = await store.claim({ ...claimArgs, limit: 2 });
      const s1 = first.find((j) => j.id === id("s"))!;
      const r1 = first.find((j) => j.id === id("r"))!;
      // A hand-back and a retry land (their replies, in the case this stands for, were lost) ...
      const handBack = { id: id("s"), delayMs: 0, lease: leaseOf(s1) };
      const retry = { id: id("r"), delayMs: 0, error, lease: leaseOf(r1) };
      expect(await store.reschedule("n1", [handBack])).toEqual(new Set([id("s")]));
      expect(await store.retry("n1", [retry])).toEqual(new Set([id("r")]));
      // ... the same node claims both rows again: the hand-back's row even has the same attempt number ...
      const s2 = await claimOne("s");
      expect(s2.attempt).toBe(s1.attempt);
      const r2 = (await store.get(id("r")))!;
      expect(r2.pickedBy).toBe("n1");
      // ... and the writes sent again find a lease they do not name: nothing changes.
      expect(await store.reschedule("n1", [handBack])).toEqual(new Set());
      expect(await store.retry("n1", [retry])).toEqual(new Set());
      expect(await store.complete("n1", [{ id: id("s"), resultJson: null, lease: leaseOf(s1) }])).toEqual(
        new Set(),
      );
      expect((await store.get(id("s")))?.pickedBy).toBe("n1");
      expect((await store.get(id("r")))?.attempts).toBe(2);
      // The outcome of the lease the node runs now lands.
      expect(await store.complete("n1", [{ id: id("s"), resultJson: null, lease: leaseOf(s2) }])).toEqual(
        new Set([id("s")]),
      );
    });

    it("cancels: a running job's outcome no longer lands, and canceledAmong names it", async () => {
      const ids = await seed([job("x", 10, 0), job("y", 10, 0)]);
      await store.claim({ ...claimArgs, limit: 1 });
      const x = ids.get("x") as string;
      const y = ids.get("y") as string;
      expect((await store.cancel(x, "stop"))?.outcome).toBe("running-canceled");
      expect((await store.cancel(y))?.outcome).toBe("canceled");
      expect((await store.cancel(y))?.outcome).toBe("already-final");
      expect(await store.cancel("999999")).toBeNull();
      expect(await store.canceledAmong([x, y, "999999"])).toEqual(new Set([x, y]));
      expect(await store.complete("n1", [{ id: x, resultJson: null }])).toEqual(new Set());
      expect((await store.get(x))?.cancelReason).toBe("stop");
    });

    it("holds a unique key for at most one live job", async () => {
      const [first] = await store.enqueue([job("u1", 10, 0, { uniqueKey: "k" })]);
      const [again] = await store.enqueue([job("u2", 10, 0, { uniqueKey: "k" })]);
      expect([again?.id, again?.inserted]).toEqual([first?.id, false]);
      await store.claim({ ...claimArgs, limit: 1 });
      const [whileRunning] = await store.enqueue([job("u3", 10, 0, { uniqueKey: "k" })]);
      expect([whileRunning?.id, whileRunning?.inserted]).toEqual([first?.id, false]);
      await store.complete("n1", [{ id: first?.id as string, resultJson: null }]);
      const [after] = await store.enqueue([job("u4", 10, 0, { uniqueKey: "k" })]);
      expect(after?.inserted).toBe(true);
      expect(after?.id).not.toBe(first?.id);
    });

    it("grants at most `capacity` permits per resource, idempotently, and frees those of finished jobs", async () => {
      const ids = await seed([job("p", 10, 0), job("q", 10, 0), job("r", 10, 0)]);
      await store.claim({ ...claimArgs, limit: 3 });
      const [p, q, r] = ["p", "q", "r"].map((l) => ids.get(l) as string) as [string, string, string];
      expect(await store.acquirePermit("db", p, "n1", 1)).toBe(true);
      expect(await store.acquirePermit("db", p, "n1", 1)).toBe(true);
      expect(await store.acquirePermit("db", q, "n1", 1)).toBe(false);
      await store.releasePermit("db", p);
      expect(await store.acquirePermit("db", q, "n1", 1)).toBe(true);
      // q's release is lost, but q is no longer RUNNING: its permit is freed on the next acquisition.
      await store.complete("n1", [{ id: q, resultJson: null }]);
      expect(await store.acquirePermit("db", r, "n1", 1)).toBe(true);
    });

    it("admits at most `limit` starts of a key in any window of perMs, and answers the next opening", async () => {
      const at = (ms: number) => new Date(t0 + ms);
      const k = [{ key: "type:a", limit: 2, perMs: 1000 }];
      expect((await store.admitRate(k, "1", at(0))).admitted).toBe(true);
      const second = await store.admitRate(k, "2", at(100));
      expect(second).toEqual({
        admitted: true,
        retryInMs: 0,
        keys: [{ key: "type:a", used: 2, limit: 2, full: false, openInMs: 0 }],
      });
      // Full: the window has room again when the start at 0 leaves it, at 1000.
      const refused = await store.admitRate(k, "3", at(200));
      expect(refused).toEqual({
        admitted: false,
        retryInMs: 800,
        keys: [{ key: "type:a", used: 2, limit: 2, full: true, openInMs: 800 }],
      });
      // The window is (now - perMs, now]: at 1000 the start at 0 is out of it, the one at 100 still in.
      expect((await store.admitRate(k, "3", at(1000))).admitted).toBe(true);
      const again = await store.admitRate(k, "4", at(1050));
      expect([again.admitted, again.retryInMs]).toEqual([false, 50]);
      expect(await store.rateWindows(["type:a"], at(1050))).toEqual([
        { key: "type:a", limit: 2, perMs: 1000, used: 2, openAt: at(1100) },
      ]);
      expect(await store.rateWindows(["type:a"], at(2100))).toEqual([
        { key: "type:a", limit: 2, perMs: 1000, used: 0, openAt: null },
      ]);
    });

    it("admits under several keys all or none, and waits for the last of their openings", async () => {
      const at = (ms: number) => new Date(t0 + ms);
      const queue = { key: "queue:mail", limit: 1, perMs: 5000 };
      const type = { key: "type:a", limit: 3, perMs: 1000 };
      expect((await store.admitRate([type, queue], "1", at(0))).admitted).toBe(true);
      const refused = await store.admitRate([type, queue], "2", at(10));
      expect([refused.admitted, refused.retryInMs]).toEqual([false, 4990]);
      expect(refused.keys.map((w) => [w.key, w.used, w.full])).toEqual([
        ["queue:mail", 1, true],
        ["type:a", 1, false],
      ]);
      // The refusal recorded nothing under the key that had room.
      expect((await store.rateWindows(["type:a"], at(10)))[0]?.used).toBe(1);
      expect((await store.admitRate([type], "3", at(20))).keys[0]?.used).toBe(2);
    });
  });
}
