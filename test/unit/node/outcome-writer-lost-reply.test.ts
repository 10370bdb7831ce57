/**
 * An outcome flush whose statement committed but whose reply was lost (the connection reset after the
 * commit) is sent again by the writer. On the in-memory twin of the store, with the reply dropped after the
 * write: the resend changes nothing, even when the node has claimed the row again meanwhile (the lease
 * token, src/store/jobs/lease-sql.ts), and the outcome is reported as landed exactly once.
 */
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../../src/core/clock.js";
import { silentLogger } from "../../../src/core/logger.js";
import { OutcomeWriter } from "../../../src/node/outcome-writer.js";
import type { ClaimedJob } from "../../../src/store/claim/claim-jobs.js";
import type { NodeStore } from "../../../src/store/job-store.js";
import { InMemoryJobStore } from "../../helpers/in-memory-store.js";
import { newJob } from "../../helpers/new-job.js";

/** `store` whose next `lost` writes of `kind` commit and then fail as a reset connection would. */
function losingReplies(store: InMemoryJobStore, kind: "complete" | "reschedule", lost: number): NodeStore {
  let left = lost;
  const write = store[kind].bind(store) as (node: string, items: never[]) => Promise<Set<string>>;
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop !== kind) return Reflect.get(target, prop, receiver) as unknown;
      return async (node: string, items: never[]) => {
        const landed = await write(node, items);
        if (left-- > 0) throw Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });
        return landed;
      };
    },
  }) as NodeStore;
}

const settle = () => new Promise((resolve) => setImmediate(resolve));
const token = (j: ClaimedJob) => ({ attempt: j.attempt, scheduledAtMs: j.scheduledAtMs });

async function claimOne(store: InMemoryJobStore): Promise<ClaimedJob> {
  const [job] = await store.claim({
    nodeId: "n1",
    limit: 1,
    types: ["a"],
    boostIntervalMs: 0,
    withPayload: false,
  });
  if (!job) throw new Error("nothing claimed");
  return job;
}

describe("OutcomeWriter after a lost reply", () => {
  it("a completion sent again lands once and is reported landed", async () => {
    const clock = new ManualClock(Date.parse("2030-01-01T00:00:00Z"));
    const store = new InMemoryJobStore(clock);
    await store.enqueue([newJob({ type: "a", runAt: new Date(clock.now()) })]);
    const job = await claimOne(store);
    const writer = new OutcomeWriter(
      losingReplies(store, "complete", 1),
      "n1",
      clock,
      silentLogger,
      5,
      () => {},
    );
    const reported: boolean[] = [];
    writer.complete({ id: job.id, lease: token(job), resultJson: "1" }, (ok) => reported.push(ok));
    clock.advance(5); // the write commits, its reply is lost
    await settle();
    expect(store.jobs.get(job.id)?.status).toBe("SUCCEEDED");
    expect(reported).toEqual([]);
    clock.advance(100); // sent again: the row is no longer under that lease
    await settle();
    expect(reported).toEqual([true]);
    expect(writer.backlog).toBe(0);
  });

  it("a hand-back sent again does not undo the node's next lease of the row", async () => {
    const clock = new ManualClock(Date.parse("2030-01-01T00:00:00Z"));
    const store = new InMemoryJobStore(clock);
    await store.enqueue([newJob({ type: "a", runAt: new Date(clock.now()) })]);
    const first = await claimOne(store);
    const writer = new OutcomeWriter(
      losingReplies(store, "reschedule", 1),
      "n1",
      clock,
      silentLogger,
      5,
      () => {},
    );
    writer.reschedule({ id: first.id, lease: token(first), delayMs: 0 }, () => {});
    clock.advance(5); // the hand-back commits, its reply is lost
    await settle();
    clock.advance(1); // due again (a hand-back moves the time at least a millisecond)
    const second = await claimOne(store); // ... and this node claims it again before the resend
    expect(second.attempt).toBe(first.attempt);
    clock.advance(100); // the resend
    await settle();
    expect(writer.backlog).toBe(0);
    const row = store.jobs.get(first.id);
    expect([row?.status, row?.pickedBy, row?.attempts]).toEqual(["RUNNING", "n1", second.attempt]);
  });
});
