import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import type { JobContext, Pawl } from "../../../src/index.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";
import { jobEvent } from "../../helpers/events.js";
import { gate } from "../../helpers/gate.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
const nodes: Pawl[] = [];

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("cd"));
});
afterAll(() => cleanup());
afterEach(async () => {
  for (const n of nodes.splice(0)) await n.close();
});

function node(config: Parameters<typeof testPawl>[1] = {}): Pawl {
  const n = testPawl(schema, config);
  nodes.push(n);
  return n;
}

const untilAborted = (ctx: JobContext) =>
  new Promise<string>((resolve) =>
    ctx.signal.addEventListener("abort", () => resolve("aborted"), { once: true }),
  );

describe("cancel while running", () => {
  it("discards the result, keeps CANCELED and tells the handler's context", async () => {
    const n = node();
    const seen: boolean[] = [];
    n.register("long", async (_p, ctx) => {
      await untilAborted(ctx);
      seen.push(ctx.isCancellationRequested());
      return "finished anyway";
    });
    await n.start();
    const jobStarted = jobEvent(n.events, "job:started");
    const jobCanceled = jobEvent(n.events, "job:canceled");
    const job = await n.enqueue("long", {});
    await jobStarted.for(job.id);
    const result = await n.cancel(job.id, "user asked");
    expect(result.outcome).toBe("running-canceled");
    await jobCanceled.for(job.id);
    expect(seen).toEqual([true]);
    expect(await n.getJob(job.id)).toMatchObject({
      status: "CANCELED",
      cancelReason: "user asked",
      result: null,
    });
  });

  it("reaches the running node from another node through the store check (no coordinator)", async () => {
    const runner = node({ cancelRecheckMs: 100 });
    const other = node();
    runner.register("long2", async (_p, ctx) => untilAborted(ctx));
    await runner.start();
    const jobStarted = jobEvent(runner.events, "job:started");
    const jobCanceled = jobEvent(runner.events, "job:canceled");
    const job = await other.enqueue("long2", {});
    await jobStarted.for(job.id);
    await other.cancel(job.id);
    await jobCanceled.for(job.id);
    expect((await other.getJob(job.id))?.status).toBe("CANCELED");
  });
});

describe("drain", () => {
  it("gives running jobs the grace, then hands the rest back to PENDING with attempts unchanged", async () => {
    const n = node({ concurrency: 2 });
    const quick = gate();
    n.register("quick", async () => {
      await quick.promise;
      return "done";
    });
    n.register("stubborn", async (_p, ctx) => untilAborted(ctx));
    n.register("waiting", async () => "never started");
    await n.start();
    const jobStarted = jobEvent(n.events, "job:started");
    const [q, s] = await n.enqueueMany([
      { type: "quick", priority: 50 },
      { type: "stubborn", priority: 50 },
    ]);
    await jobStarted.for(s!.id);
    const buffered = await n.enqueueMany(Array.from({ length: 3 }, () => ({ type: "waiting", delayMs: 0 })));
    const stopped = n.stop({ graceMs: 300 });
    quick.open(); // the quick job finishes inside the grace
    await stopped;
    expect(await n.getJob(q!.id)).toMatchObject({ status: "SUCCEEDED" });
    expect(await n.getJob(s!.id)).toMatchObject({ status: "PENDING", attempts: 0, pickedBy: null });
    for (const b of buffered) {
      const read = await n.getJob(b.id);
      expect(read?.status === "PENDING" || read?.status === "SUCCEEDED").toBe(true);
      if (read?.status === "PENDING") expect(read.attempts).toBe(0);
    }
    const running = await pool.query(
      `SELECT count(*)::int AS n FROM "${schema}".scheduler_job_all WHERE status = 'RUNNING'`,
    );
    expect(running.rows[0].n).toBe(0);
  });

  it("a second stop aborts at once", async () => {
    const n = node();
    n.register("forever", async (_p, ctx) => untilAborted(ctx));
    await n.start();
    const jobStarted = jobEvent(n.events, "job:started");
    const job = await n.enqueue("forever", {});
    await jobStarted.for(job.id);
    const first = n.stop({ graceMs: 60_000 });
    const t0 = Date.now();
    await n.stop();
    await first;
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(await n.getJob(job.id)).toMatchObject({ status: "PENDING", attempts: 0 });
  });

  it("a canceled job stays CANCELED when the node drains", async () => {
    const n = node();
    n.register("cancel-then-drain", async (_p, ctx) => {
      await untilAborted(ctx);
      await new Promise(() => {}); // ignores the request
    });
    await n.start();
    const jobStarted = jobEvent(n.events, "job:started");
    const job = await n.enqueue("cancel-then-drain", {});
    await jobStarted.for(job.id);
    await n.cancel(job.id);
    await n.stop({ graceMs: 50 });
    expect((await n.getJob(job.id))?.status).toBe("CANCELED");
  });
});
