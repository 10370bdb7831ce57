/**
 * pawl/testing runs durable handlers (docs/durable.md): drain() records their steps, parks them on their
 * waits, and a `now` ahead of the database's time is their clock, so a three-day sleep is skipped by
 * draining "three days later"; a named signal sent by the test is delivered; children run in the next
 * drain and wake their parent.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Pawl } from "../../../src/index.js";
import { drain } from "../../../src/testing/index.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";

let schema: string;
let cleanup: () => Promise<void>;
let pawl: Pawl;

beforeAll(async () => {
  ({ schema, cleanup } = await setupSchema("dtest"));
  pawl = testPawl(schema);
});
afterAll(async () => {
  await pawl.close();
  await cleanup();
});

const day = 86_400_000;

describe("pawl/testing with durable handlers", () => {
  it("skips sleeps with drain's clock, delivers signals, runs children and wakes their parent", async () => {
    const runs: string[] = [];
    pawl.register("kid", async (p: { n: number }) => p.n * 2);
    pawl.register("drip", async (_p: unknown, ctx) => {
      await ctx.step("welcome", () => {
        runs.push("welcome");
      });
      await ctx.sleep("three-days", 3 * day);
      const answer = await ctx.waitForSignal<{ plan: string }>("upgraded", { timeoutMs: day });
      const kid = await ctx.spawn("kid", "kid", { n: 21 });
      const doubled = await ctx.waitFor<number>("kid-done", kid);
      return { plan: answer.timedOut ? null : answer.payload.plan, doubled };
    });
    const job = await pawl.enqueue("drip", {});
    const status = async () => (await pawl.getJob(job.id))?.status;

    await drain(pawl);
    expect(await status()).toBe("WAITING");
    await drain(pawl); // nothing due: the sleep holds
    expect(await status()).toBe("WAITING");

    const later = new Date(Date.now() + 3 * day + 60_000);
    await drain(pawl, { now: later });
    expect(await status()).toBe("WAITING"); // now at the signal wait
    expect((await pawl.getJob(job.id))?.steps?.map((s) => [s.name, s.status])).toEqual([
      ["welcome", "succeeded"],
      ["three-days", "succeeded"],
      ["upgraded", "waiting"],
    ]);

    expect((await pawl.signal(job.id, { plan: "pro" }, { name: "upgraded" })).status).toBe("PENDING");
    await drain(pawl, { now: later }); // takes the signal, spawns the child, parks on it
    await drain(pawl, { now: later }); // the child runs; its end wakes the parent
    await drain(pawl, { now: later }); // the parent finishes
    const done = await pawl.getJob(job.id);
    expect(done?.status).toBe("SUCCEEDED");
    expect(done?.result).toEqual({ plan: "pro", doubled: 42 });
    expect(runs).toEqual(["welcome"]);
  });

  it("a signal wait times out on drain's clock", async () => {
    pawl.register("patient", async (_p: unknown, ctx) => {
      const a = await ctx.waitForSignal("never", { timeoutMs: day });
      return a.timedOut;
    });
    const job = await pawl.enqueue("patient", {});
    const now = Date.now();
    await drain(pawl, { now: new Date(now + 1000) });
    expect((await pawl.getJob(job.id))?.status).toBe("WAITING");
    await drain(pawl, { now: new Date(now + day + 60_000) });
    expect(await pawl.getJob(job.id)).toMatchObject({ status: "SUCCEEDED", result: true });
  });
});
