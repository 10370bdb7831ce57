/**
 * pawl.waitFor across instances: woken by the completion notice of the node that ended the job (postgres
 * coordinator), by polling without one, and bounded in cost (a thousand waiters, a handful of reads). A
 * forged notice only makes the waiter read; a timeout, an abort and an unknown id reject as documented.
 *
 * With a coordinator connected, waitFor polls first after 5 s: a waiter that resolves within a second of
 * the job's outcome landing was woken by the notice, not by a poll.
 */
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { postgresChannelName } from "../../../coordinators/index.js";
import {
  JobNotFoundError,
  PawlClient,
  WaitTimeoutError,
  type Job,
  type Pawl,
  type PawlConfig,
} from "../../../src/index.js";
import { databaseUrl } from "../../helpers/db.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";
import { jobEvent } from "../../helpers/events.js";
import { gate } from "../../helpers/gate.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
const closers: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("wf"));
}, 60_000);
afterAll(async () => {
  await cleanup();
});
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c.close();
});

/** A pool that counts waitFor's batched reads (and tells the test about each one). */
function countingPool(): {
  pool: pg.Pool;
  reads: () => number;
  onRead: (fn: (ids: string[]) => void) => void;
} {
  const p = new pg.Pool({ connectionString: databaseUrl, max: 4 });
  p.on("error", () => {});
  let reads = 0;
  const listeners: ((ids: string[]) => void)[] = [];
  const query = p.query.bind(p) as (...args: unknown[]) => Promise<unknown>;
  (p as unknown as { query: (...args: unknown[]) => Promise<unknown> }).query = (...args: unknown[]) => {
    const text = typeof args[0] === "string" ? args[0] : (args[0] as { text?: string }).text;
    const result = query(...args);
    if (text?.includes("scheduler_job_all") && text.includes("= ANY($1::bigint[])")) {
      reads++;
      const ids = (args[1] as [string[]])[0];
      void result.then(() => listeners.forEach((l) => l(ids)));
    }
    return result;
  };
  return { pool: p, reads: () => reads, onRead: (fn) => listeners.push(fn) };
}

function worker(config: PawlConfig = {}): Pawl {
  const node = testPawl(schema, config);
  closers.push(node);
  return node;
}

function client(config: PawlConfig = {}): PawlClient {
  // Like testPawl's nodes: no coordinator unless the test chooses one (pawl's default LISTENs).
  const c = new PawlClient({
    connectionString: databaseUrl,
    schema,
    coordinator: "none",
    logger: false,
    ...config,
  });
  closers.push(c);
  return c;
}

/** Connects an instance's waitFor coordinator before the test depends on it. */
async function connected(instance: PawlClient): Promise<void> {
  await (instance as unknown as { waitCoordinator(): Promise<unknown> }).waitCoordinator();
}

describe("waitFor with the postgres coordinator", () => {
  it("resolves a Pawl instance and a bare client on the other node's completion notice", async () => {
    const release = gate();
    const a = worker({ coordinator: "postgres" });
    a.register("wf.notice", async (p: { n: number }) => {
      await release.promise;
      return { doubled: p.n * 2 };
    });
    await a.start();
    const b = testPawl(schema, { coordinator: "postgres" }); // never started: it only waits
    closers.push(b);
    const c = client({ coordinator: "postgres" });
    await Promise.all([connected(b), connected(c)]);

    const jobStarted = jobEvent(a.events, "job:started");
    const job = await c.enqueue("wf.notice", { n: 21 });
    await jobStarted.for(job.id);
    const viaPawl = b.waitFor(job);
    const viaClient = c.waitFor(job.id, { timeoutMs: 20_000 });
    const landed = a.events.next("job:succeeded", (e) => e.job.id === job.id);
    release.open();
    await landed;
    const at = Date.now();
    const [fromPawl, fromClient] = await Promise.all([viaPawl, viaClient]);
    // Well before the first poll (5 s while connected): only the notice can have woken them.
    expect(Date.now() - at).toBeLessThan(1_500);
    for (const done of [fromPawl, fromClient]) {
      expect(done).toMatchObject({ id: job.id, status: "SUCCEEDED", result: { doubled: 42 } });
    }
  });

  it("resolves the node's own waiter directly (a node never hears its own notice)", async () => {
    const a = worker({ coordinator: "postgres" });
    const release = gate();
    a.register("wf.own", async () => {
      await release.promise;
      return "done";
    });
    await a.start();
    await connected(a);
    const jobStarted = jobEvent(a.events, "job:started");
    const job = await a.enqueue("wf.own");
    await jobStarted.for(job.id);
    const waiting = a.waitFor(job);
    const landed = a.events.next("job:succeeded", (e) => e.job.id === job.id);
    release.open();
    await landed;
    const at = Date.now();
    expect(await waiting).toMatchObject({ status: "SUCCEEDED", result: "done" });
    expect(Date.now() - at).toBeLessThan(1_500);
  });

  it("reads on a forged finished notice but never resolves from it", async () => {
    const counted = countingPool();
    closers.push({ close: () => counted.pool.end() });
    const release = gate();
    const a = worker({ coordinator: "postgres" });
    a.register("wf.forged", async () => {
      await release.promise;
      return { real: true };
    });
    await a.start();
    const c = client({ coordinator: "postgres", pool: counted.pool });
    await connected(c);
    const jobStarted = jobEvent(a.events, "job:started");
    const job = await c.enqueue("wf.forged");
    await jobStarted.for(job.id);

    let settled: Job | null = null;
    const waiting = c.waitFor(job).then((j) => (settled = j));
    // Its first read, then the forged notice and the read it causes.
    await new Promise<void>((resolve) => counted.onRead((ids) => ids.includes(job.id) && resolve()));
    const forgedRead = new Promise<void>((resolve) =>
      counted.onRead((ids) => ids.includes(job.id) && resolve()),
    );
    const forged = { pawl: 1, kind: "finished", priority: 0, source: "forger", jobIds: [job.id] };
    await pool.query("SELECT pg_notify($1, $2)", [postgresChannelName(schema), JSON.stringify(forged)]);
    await forgedRead;
    await new Promise((r) => setImmediate(r));
    expect(settled).toBeNull(); // the row says RUNNING: the notice changed nothing

    release.open();
    expect(await waiting).toMatchObject({ status: "SUCCEEDED", result: { real: true } });
  });

  it("serves a thousand waiters with a few batched reads", async () => {
    const counted = countingPool();
    closers.push({ close: () => counted.pool.end() });
    const a = worker({ coordinator: "postgres", concurrency: 50, completionFlushMs: 20 });
    a.register("wf.many", async (p: { i: number }) => p.i);
    const c = client({ coordinator: "postgres", pool: counted.pool });
    await connected(c);
    const jobs = await c.enqueueMany(
      Array.from({ length: 1_000 }, (_, i) => ({ type: "wf.many", payload: { i } })),
    );
    const waits = jobs.map((j) => c.waitFor(j, { timeoutMs: 60_000 }));
    await a.start();
    const done = await Promise.all(waits);
    expect(done.every((j, i) => j.status === "SUCCEEDED" && j.result === i)).toBe(true);
    // One statement per wake-up for all of them, never one per waiter.
    expect(counted.reads()).toBeGreaterThanOrEqual(2);
    expect(counted.reads()).toBeLessThan(50);
  }, 60_000);
});

describe("waitFor without a coordinator", () => {
  it("resolves by polling", async () => {
    const counted = countingPool();
    closers.push({ close: () => counted.pool.end() });
    const release = gate();
    const a = worker();
    a.register("wf.poll", async () => {
      await release.promise;
      return 7;
    });
    await a.start();
    const c = client({ pool: counted.pool });
    const jobStarted = jobEvent(a.events, "job:started");
    const job = await c.enqueue("wf.poll");
    await jobStarted.for(job.id);
    const waiting = c.waitFor(job, { timeoutMs: 20_000 });
    const polled = new Promise<void>((resolve) => counted.onRead(() => counted.reads() >= 2 && resolve()));
    await polled; // it read again on its own, with nothing to wake it
    release.open();
    expect(await waiting).toMatchObject({ status: "SUCCEEDED", result: 7 });
  });

  it("rejects after timeoutMs with WAIT_TIMEOUT and the last status seen", async () => {
    const c = client();
    const job = await c.enqueue("wf.nobody-runs-this");
    const error = await c.waitFor(job, { timeoutMs: 300 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WaitTimeoutError);
    expect(error).toMatchObject({ code: "WAIT_TIMEOUT", jobId: job.id, lastStatus: "PENDING" });
    expect((await c.getJob(job.id))?.status).toBe("PENDING"); // the job is not touched
  });

  it("rejects with the signal's reason when it aborts, and at once when already aborted", async () => {
    const c = client();
    const job = await c.enqueue("wf.nobody-runs-this");
    const controller = new AbortController();
    const waiting = c.waitFor(job, { signal: controller.signal }).catch((e: unknown) => e);
    const reason = new Error("the caller went away");
    controller.abort(reason);
    expect(await waiting).toBe(reason);
    expect(await c.waitFor(job, { signal: controller.signal }).catch((e: unknown) => e)).toBe(reason);
  });

  it("rejects an unknown id with JobNotFoundError and bad input with a ValidationError", async () => {
    const c = client();
    await expect(c.waitFor("987654321")).rejects.toBeInstanceOf(JobNotFoundError);
    await expect(c.waitFor("abc")).rejects.toMatchObject({ name: "ValidationError" });
    await expect(c.waitFor("1", { timeoutMs: 0 })).rejects.toMatchObject({ code: "INVALID_OPTION" });
    await expect(c.waitFor("1", { timeout: 5 } as never)).rejects.toMatchObject({ code: "UNKNOWN_OPTION" });
  });

  it("resolves a job already final at once", async () => {
    const c = client();
    const job = await c.enqueue("wf.nobody-runs-this");
    await c.cancel(job.id, "not needed");
    const done = await c.waitFor(job, { timeoutMs: 1_000 });
    expect(done).toMatchObject({ id: job.id, status: "CANCELED", cancelReason: "not needed" });
  });

  it("rejects with JobNotFoundError when a succeeded job leaves no row (keepSucceeded: false)", async () => {
    const release = gate();
    const a = worker({ keepSucceeded: false });
    a.register("wf.deleted", async () => {
      await release.promise;
    });
    await a.start();
    const counted = countingPool();
    closers.push({ close: () => counted.pool.end() });
    const c = client({ pool: counted.pool });
    const jobStarted = jobEvent(a.events, "job:started");
    const job = await c.enqueue("wf.deleted");
    await jobStarted.for(job.id);
    const firstRead = new Promise<void>((resolve) => counted.onRead(() => resolve()));
    const waiting = c.waitFor(job, { timeoutMs: 20_000 }).catch((e: unknown) => e);
    await firstRead; // it saw the row RUNNING: a row gone afterwards was deleted, not unknown
    release.open();
    const error = await waiting;
    expect(error).toBeInstanceOf(JobNotFoundError);
    expect((error as Error).message).toContain("keepSucceeded: false");
  });
});
