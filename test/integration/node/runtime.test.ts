import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { Discard, NonRetryableError, Snooze, type Pawl } from "../../../src/index.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";
import { jobEvent } from "../../helpers/events.js";

let schema: string;
let cleanup: () => Promise<void>;
let node: Pawl;

beforeAll(async () => {
  ({ schema, cleanup } = await setupSchema("rt"));
});
afterAll(() => cleanup());
afterEach(async () => {
  await node?.close();
});

const fast = { retry: { baseMs: 1, factor: 1, maxMs: 1, jitter: 0 } };

describe("runtime", () => {
  it("runs a job to SUCCEEDED and stores its result", async () => {
    node = testPawl(schema);
    node.register("ok", async (payload: { n: number }, ctx) => ({
      doubled: payload.n * 2,
      attempt: ctx.attempt,
    }));
    await node.start();
    const jobSucceeded = jobEvent(node.events, "job:succeeded");
    const job = await node.enqueue("ok", { n: 21 });
    await jobSucceeded.for(job.id);
    expect(await node.getJob(job.id)).toMatchObject({
      status: "SUCCEEDED",
      result: { doubled: 42, attempt: 1 },
      attempts: 1,
    });
  });

  it("retries a failing job and then succeeds", async () => {
    node = testPawl(schema);
    let calls = 0;
    node.register(
      "flaky",
      async () => {
        calls++;
        if (calls < 3) throw new Error(`fail ${calls}`);
        return "ok";
      },
      fast,
    );
    await node.start();
    const retried: number[] = [];
    node.on("job:retried", (e) => retried.push(e.job.attempt));
    const jobSucceeded = jobEvent(node.events, "job:succeeded");
    const job = await node.enqueue("flaky", {});
    await jobSucceeded.for(job.id);
    expect(retried).toEqual([1, 2]);
    const read = await node.getJob(job.id);
    expect(read).toMatchObject({ status: "SUCCEEDED", attempts: 3 });
    expect(read!.errors.map((e) => e.message)).toEqual(["fail 1", "fail 2"]);
  });

  it("ends DEAD after max attempts, straight away for non-retryable errors and Discard", async () => {
    node = testPawl(schema);
    node.register(
      "always-fails",
      async () => {
        throw new Error("nope");
      },
      { ...fast, maxAttempts: 2 },
    );
    node.register(
      "fatal",
      async () => {
        throw new NonRetryableError("bad data");
      },
      fast,
    );
    node.register(
      "discard",
      async () => {
        throw new Discard("not needed");
      },
      fast,
    );
    await node.start();
    const jobDead = jobEvent(node.events, "job:dead");
    const [a, b, c] = await node.enqueueMany([
      { type: "always-fails" },
      { type: "fatal" },
      { type: "discard" },
    ]);
    const dead = await jobDead.forAll([a!.id, b!.id, c!.id]);
    expect(dead.map((e) => e.reason)).toEqual(["exhausted", "non-retryable", "discarded"]);
    expect(await node.getJob(a!.id)).toMatchObject({ status: "DEAD", attempts: 2, lastError: "nope" });
    expect(await node.getJob(b!.id)).toMatchObject({ status: "DEAD", attempts: 1 });
  });

  it("snoozes without counting the attempt", async () => {
    node = testPawl(schema);
    let calls = 0;
    node.register("sleepy", async () => {
      calls++;
      if (calls === 1) throw new Snooze(10);
      return calls;
    });
    await node.start();
    const jobSnoozed = jobEvent(node.events, "job:snoozed");
    const jobSucceeded = jobEvent(node.events, "job:succeeded");
    const job = await node.enqueue("sleepy", {});
    await jobSnoozed.for(job.id);
    await jobSucceeded.for(job.id);
    expect(await node.getJob(job.id)).toMatchObject({ status: "SUCCEEDED", attempts: 1, errors: [] });
  });

  it.each([
    [
      "throws synchronously",
      () => {
        throw new Error("sync boom");
      },
      "sync boom",
    ],
    ["returns a rejected promise", () => Promise.reject(new Error("async boom")), "async boom"],
    [
      "throws a non-Error",
      () => {
        throw "a string";
      },
      "a string",
    ],
    [
      "throws an object",
      () => {
        throw { code: 42 };
      },
      'non-error thrown: {"code":42}',
    ],
  ])("records a handler that %s as a failure", async (_name, handler, message) => {
    node = testPawl(schema);
    node.register("bad-" + _name.replace(/\s/g, "-"), handler as () => never, { maxAttempts: 1 });
    await node.start();
    const jobDead = jobEvent(node.events, "job:dead");
    const job = await node.enqueue("bad-" + _name.replace(/\s/g, "-"), {});
    const dead = await jobDead.for(job.id);
    expect(dead.error.message).toBe(message);
    expect((await node.getJob(job.id))?.lastError).toBe(message);
  });
});
