/**
 * The event helpers themselves, on a bare emitter: a job's event emitted before its id is known still
 * counts, another job's event never does, and a wait that sees nothing fails with a clear message.
 */
import { describe, expect, it } from "vitest";
import { PawlEventEmitter, type JobEventInfo } from "../../src/core/events.js";
import { jobEvent, onAny, record } from "./events.js";

const info = (id: string, type = "t"): JobEventInfo => ({
  id,
  type,
  queue: "default",
  priority: 10,
  attempt: 1,
  maxAttempts: 3,
});
const succeed = (events: PawlEventEmitter, id: string, type = "t") =>
  events.emit("job:succeeded", { job: info(id, type), durationMs: 1 });

describe("jobEvent", () => {
  it("keeps a job's event emitted before the id was known, and ignores other jobs'", async () => {
    const events = new PawlEventEmitter();
    const succeeded = jobEvent(events, "job:succeeded");
    succeed(events, "1");
    succeed(events, "2");
    expect((await succeeded.for("2")).job.id).toBe("2");
    expect(events.has("job:succeeded")).toBe(false); // it unsubscribed
  });

  it("waits for an event still to come, through the filter, on any of several emitters", async () => {
    const [a, b] = [new PawlEventEmitter(), new PawlEventEmitter()];
    const succeeded = jobEvent([a, { events: b }], "job:succeeded", (e) => e.job.type === "mail");
    const waiting = succeeded.forAll(["7", "8"]);
    succeed(a, "8", "mail");
    succeed(b, "7", "sms"); // filtered out
    succeed(b, "7", "mail");
    expect((await waiting).map((e) => e.job.id)).toEqual(["7", "8"]);
  });

  it("forAny resolves with the first of the ids emitted", async () => {
    const events = new PawlEventEmitter();
    const succeeded = jobEvent(events, "job:succeeded");
    succeed(events, "5");
    succeed(events, "4");
    expect((await succeeded.forAny(["3", "4", "5"])).job.id).toBe("5");
  });

  it("names jobs by jobId too", async () => {
    const events = new PawlEventEmitter();
    const paused = jobEvent(events, "job:paused");
    events.emit("job:paused", { jobId: "9", type: "t", queue: "default" });
    expect(await paused.for("9")).toMatchObject({ jobId: "9" });
  });

  it("fails when the job's event never comes, naming the event and the job", async () => {
    const events = new PawlEventEmitter();
    const succeeded = jobEvent(events, "job:succeeded", undefined, 20);
    succeed(events, "1");
    await expect(succeeded.for("2")).rejects.toThrow(
      "timed out after 20 ms waiting for event job:succeeded of job 2",
    );
    expect(events.has("job:succeeded")).toBe(false);
  });

  it("answers once", async () => {
    const events = new PawlEventEmitter();
    const succeeded = jobEvent(events, "job:succeeded");
    succeed(events, "1");
    await succeeded.for("1");
    await expect(succeeded.for("1")).rejects.toThrow("already asked");
  });
});

describe("onAny and record", () => {
  it("onAny resolves with the first match on any emitter and fails after its timeout", async () => {
    const [a, b] = [new PawlEventEmitter(), new PawlEventEmitter()];
    const next = onAny([a, b], "job:succeeded", (e) => e.job.type === "x");
    succeed(a, "1");
    succeed(b, "2", "x");
    expect((await next).job.id).toBe("2");
    await expect(onAny(a, "job:succeeded", undefined, 20)).rejects.toThrow("timed out after 20 ms");
  });

  it("record keeps the matches until stopped", () => {
    const events = new PawlEventEmitter();
    const seen = record(events, "job:succeeded", (e) => e.job.type === "x");
    succeed(events, "1", "x");
    succeed(events, "2");
    seen.stop();
    succeed(events, "3", "x");
    expect(seen.n).toBe(1);
    expect(seen.seen.map((e) => e.job.id)).toEqual(["1"]);
  });
});
