import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { CancellationRequestedError, JobContext, type Pawl } from "../../../src/index.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";
import { jobEvent } from "../../helpers/events.js";

let schema: string;
let cleanup: () => Promise<void>;
let node: Pawl;

beforeAll(async () => {
  ({ schema, cleanup } = await setupSchema("wd"));
});
afterAll(() => cleanup());
afterEach(async () => {
  await node?.close();
});

const fast = { retry: { baseMs: 1, factor: 1, maxMs: 1, jitter: 0 } };
const never = () => new Promise<never>(() => {});

describe("watchdog", () => {
  it("warns at the soft threshold and lets a job that finishes in time succeed", async () => {
    node = testPawl(schema, { watchdog: { softTimeoutPercent: 25 } });
    node.register(
      "slowish",
      async (_p, ctx) => {
        await node.events.next("watchdog:soft-warning", (e) => e.job.id === ctx.jobId);
        return ctx.isCancellationRequested();
      },
      { timeoutMs: 2000 },
    );
    await node.start();
    const hard: string[] = [];
    node.on("watchdog:hard-timeout", (e) => hard.push(e.job.id));
    const jobSucceeded = jobEvent(node.events, "job:succeeded");
    const job = await node.enqueue("slowish", {});
    await jobSucceeded.for(job.id);
    expect(await node.getJob(job.id)).toMatchObject({ status: "SUCCEEDED", result: false });
    expect(hard).toEqual([]);
  });

  it("aborts a handler that never settles at the hard deadline: a timeout, retried then DEAD", async () => {
    node = testPawl(schema);
    const signals: AbortSignal[] = [];
    node.register(
      "stuck",
      (_p, ctx) => {
        signals.push(ctx.signal);
        return never();
      },
      { timeoutMs: 150, maxAttempts: 2, ...fast },
    );
    await node.start();
    const jobRetried = jobEvent(node.events, "job:retried");
    const jobDead = jobEvent(node.events, "job:dead");
    const job = await node.enqueue("stuck", {});
    const retried = await jobRetried.for(job.id);
    expect(retried.timedOut).toBe(true);
    const dead = await jobDead.for(job.id);
    expect(dead).toMatchObject({ reason: "exhausted", timedOut: true });
    expect(signals).toHaveLength(2);
    expect(signals.every((s) => s.aborted)).toBe(true);
    const read = await node.getJob(job.id);
    expect(read).toMatchObject({ status: "DEAD", attempts: 2 });
    expect(read!.errors.map((e) => e.name)).toEqual(["JobTimeoutError", "JobTimeoutError"]);
  });

  describe("cancellation grace and CancellationRequestedError", () => {
    const grace = { watchdog: { cancellationGraceMs: 700, softTimeoutPercent: 95 } };
    const waitForRequest = (ctx: JobContext) =>
      node.events.next("watchdog:cancel-request", (e) => e.job.id === ctx.jobId);

    it("a stop at the safe point after the request is a timeout, without a hard abort", async () => {
      node = testPawl(schema, grace);
      node.register(
        "units",
        async (_p, ctx) => {
          await waitForRequest(ctx);
          expect(ctx.signal.aborted).toBe(false);
          ctx.throwIfCancellationRequested();
        },
        { timeoutMs: 1000, maxAttempts: 1 },
      );
      await node.start();
      const hard: string[] = [];
      node.on("watchdog:hard-timeout", (e) => hard.push(e.job.id));
      const jobDead = jobEvent(node.events, "job:dead");
      const job = await node.enqueue("units", {});
      const dead = await jobDead.for(job.id);
      expect(dead.timedOut).toBe(true);
      expect(dead.error).toBeInstanceOf(CancellationRequestedError);
      expect(hard).toEqual([]);
    });

    it("one wrapped as the cause of another error counts too", async () => {
      node = testPawl(schema, grace);
      node.register(
        "wrapped",
        async (_p, ctx) => {
          await waitForRequest(ctx);
          throw new Error("stopped between pages", { cause: new CancellationRequestedError() });
        },
        { timeoutMs: 1000, maxAttempts: 1 },
      );
      await node.start();
      const jobDead = jobEvent(node.events, "job:dead");
      const job = await node.enqueue("wrapped", {});
      expect((await jobDead.for(job.id)).timedOut).toBe(true);
    });

    it("one created before the request is an ordinary failure", async () => {
      node = testPawl(schema, grace);
      node.register(
        "early",
        async (_p, ctx) => {
          const early = new CancellationRequestedError("made too soon");
          await waitForRequest(ctx);
          throw early;
        },
        { timeoutMs: 1000, maxAttempts: 1 },
      );
      await node.start();
      const jobDead = jobEvent(node.events, "job:dead");
      const job = await node.enqueue("early", {});
      expect((await jobDead.for(job.id)).timedOut).toBe(false);
    });

    it("one kept from an earlier attempt is an ordinary failure", async () => {
      node = testPawl(schema, grace);
      let kept: CancellationRequestedError | null = null;
      node.register(
        "kept",
        async (_p, ctx) => {
          if (kept) throw kept; // attempt 2 rethrows attempt 1's error at once
          await waitForRequest(ctx);
          kept = new CancellationRequestedError("from attempt 1");
          throw kept;
        },
        { timeoutMs: 1000, maxAttempts: 2, ...fast },
      );
      await node.start();
      const jobRetried = jobEvent(node.events, "job:retried");
      const jobDead = jobEvent(node.events, "job:dead");
      const job = await node.enqueue("kept", {});
      expect((await jobRetried.for(job.id)).timedOut).toBe(true);
      const dead = await jobDead.for(job.id);
      expect(dead.timedOut).toBe(false);
      expect(dead.error).toBe(kept);
    });

    it("returning normally after the request is a success", async () => {
      node = testPawl(schema, grace);
      node.register(
        "finisher",
        async (_p, ctx) => {
          await waitForRequest(ctx);
          return JobContext.current().isCancellationRequested();
        },
        { timeoutMs: 1000, maxAttempts: 1 },
      );
      await node.start();
      const jobSucceeded = jobEvent(node.events, "job:succeeded");
      const job = await node.enqueue("finisher", {});
      await jobSucceeded.for(job.id);
      expect((await node.getJob(job.id))?.result).toBe(true);
    });
  });
});
