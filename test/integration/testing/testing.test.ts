import { AssertionError } from "node:assert";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import {
  Discard,
  JobContext,
  NonRetryableError,
  PawlError,
  Snooze,
  ValidationError,
  createPawl,
  type Pawl,
} from "../../../src/index.js";
import { drain, fake, inline } from "../../../src/testing/index.js";
import { record } from "../../helpers/events.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
const opened: Pawl[] = [];

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("tt"));
});
afterAll(() => cleanup());
afterEach(async () => {
  for (const p of opened.splice(0)) await p.close();
});

function newPawl(): Pawl {
  const pawl = testPawl(schema);
  opened.push(pawl);
  return pawl;
}

let typeSeq = 0;
/** A job type unique to one test, so tests sharing the schema never see each other's jobs. */
const uniqueType = (name: string) => `${name}.${++typeSeq}.${Math.random().toString(36).slice(2, 8)}`;

async function rowsOfType(type: string): Promise<{ id: string; status: string; attempts: number }[]> {
  const res = await pool.query(
    `SELECT id, status, attempts FROM "${schema}".scheduler_job_all WHERE type = $1`,
    [type],
  );
  return res.rows as { id: string; status: string; attempts: number }[];
}

describe("fake", () => {
  it("records enqueue and enqueueMany without touching the database", async () => {
    // A pawl whose database does not exist: any query would fail.
    const offline = createPawl({ connectionString: "postgres://postgres@127.0.0.1:1/none", schema });
    opened.push(offline);
    const recorder = fake(offline);
    const job = await offline.enqueue("email.welcome", { to: "a@b.c", tags: ["x"] }, { priority: "high" });
    const many = await offline.enqueueMany([
      { type: "thumb", payload: { id: 1 } },
      { type: "thumb", payload: { id: 2 }, delayMs: 1000 },
    ]);
    expect(job).toMatchObject({ type: "email.welcome", status: "PENDING", priority: 20, inserted: true });
    expect(many.map((j) => j.payload)).toEqual([{ id: 1 }, { id: 2 }]);
    expect(recorder.enqueued.map((r) => r.type)).toEqual(["email.welcome", "thumb", "thumb"]);
    expect(recorder.enqueued[0]).toMatchObject({
      payload: { to: "a@b.c", tags: ["x"] },
      options: { priority: "high" },
    });
    expect(recorder.enqueuedOf("thumb")[1]?.options).toEqual({ delayMs: 1000 });

    expect(recorder.assertEnqueued("email.welcome", { to: "a@b.c" }).job.id).toBe(job.id);
    recorder.assertEnqueued("thumb", (p) => (p as { id: number }).id === 2);
    recorder.assertEnqueued("thumb");
    recorder.assertNotEnqueued("thumb", { id: 3 });
    expect(() => recorder.assertEnqueued("email.welcome", { to: "z@b.c" })).toThrow(AssertionError);
    expect(() => recorder.assertEnqueued("email.welcome", { to: "z@b.c" })).toThrow(
      /email\.welcome \{"to":"a@b\.c"/,
    );
    expect(() => recorder.assertEnqueued("email.welcome", { tags: [] })).toThrow(AssertionError);
    expect(() => recorder.assertNotEnqueued("thumb")).toThrow(AssertionError);
    recorder.clear();
    expect(recorder.enqueued).toEqual([]);
    recorder.restore();
    await expect(offline.enqueue("email.welcome", {})).rejects.toThrow();
  });

  it("validates like a real enqueue, records nothing on bad input, and ignores unique keys", async () => {
    const pawl = newPawl();
    const type = uniqueType("signup");
    pawl.register(type, async () => {}, {
      validate: (p) => (p as { id?: unknown }).id !== undefined || "id missing",
      queue: "mail",
    });
    const recorder = fake(pawl);
    await expect(pawl.enqueue(type, {}, { priority: 500 })).rejects.toBeInstanceOf(ValidationError);
    await expect(pawl.enqueue(type, { other: 1 })).rejects.toMatchObject({ code: "VALIDATION_FAILED" });
    await expect(pawl.enqueueMany([{ type, payload: { id: 1 } }, { type: "bad type" }])).rejects.toThrow(
      /item 1/,
    );
    expect(recorder.enqueued).toEqual([]);

    const a = await pawl.enqueue(type, { id: 1 }, { uniqueKey: "k" });
    const b = await pawl.enqueue(type, { id: 1 }, { uniqueKey: "k" });
    expect([a.inserted, b.inserted]).toEqual([true, true]);
    expect(a.id).not.toBe(b.id);
    expect(a.queue).toBe("mail"); // the type's defaults apply
    expect(recorder.enqueuedOf(type)).toHaveLength(2);
    expect(await rowsOfType(type)).toEqual([]);

    const client = await pool.connect();
    try {
      await pawl.enqueue(type, { id: 2 }, { client });
      expect(recorder.enqueued.at(-1)).toMatchObject({ inTransaction: true, options: {} });
    } finally {
      client.release();
    }
    expect(() => fake(pawl)).toThrow(PawlError); // one mode per instance
    recorder.restore();
    await pawl.enqueue(type, { id: 3 });
    expect(await rowsOfType(type)).toHaveLength(1);
  });

  it("restores after a block, also when it throws", async () => {
    const pawl = newPawl();
    const type = uniqueType("block");
    const seen = await fake(pawl, async (recorder) => {
      await pawl.enqueue(type, { n: 1 });
      return recorder.enqueued.length;
    });
    expect(seen).toBe(1);
    await expect(
      fake(pawl, () => {
        throw new Error("inside");
      }),
    ).rejects.toThrow("inside");
    await pawl.enqueue(type, { n: 2 });
    expect(await rowsOfType(type)).toHaveLength(1);
  });
});

describe("inline", () => {
  it("runs a job at once with a real context and returns it finished", async () => {
    const pawl = newPawl();
    const type = uniqueType("ok");
    const seen: { attempt: number; deadline: number; current: boolean; signal: boolean }[] = [];
    pawl.register(
      type,
      async (payload: { n: number }, ctx) => {
        seen.push({
          attempt: ctx.attempt,
          deadline: ctx.deadline.getTime(),
          current: JobContext.current() === ctx,
          signal: ctx.signal.aborted,
        });
        return { doubled: payload.n * 2 };
      },
      { timeoutMs: 60_000 },
    );
    const started = record(pawl, "job:started");
    const succeeded = record(pawl, "job:succeeded");
    const mode = inline(pawl);
    const before = Date.now();
    const job = await pawl.enqueue(type, { n: 21 }, { delayMs: 3_600_000 }); // due later: runs at once anyway
    expect(job).toMatchObject({ status: "SUCCEEDED", result: { doubled: 42 }, attempts: 1, inserted: true });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ attempt: 1, current: true, signal: false });
    expect(seen[0]!.deadline).toBeGreaterThanOrEqual(before + 60_000);
    expect(seen[0]!.deadline).toBeLessThanOrEqual(Date.now() + 60_000);
    expect({ started: started.n, succeeded: succeeded.n }).toEqual({ started: 1, succeeded: 1 });
    expect(mode.results).toEqual([
      expect.objectContaining({ jobId: job.id, status: "succeeded", result: { doubled: 42 }, attempt: 1 }),
    ]);
    await mode.restore();
    const later = await pawl.enqueue(type, { n: 1 });
    expect(later.status).toBe("PENDING");
    expect(seen).toHaveLength(1);
  });

  it("records failures with the runtime's retry and DEAD rules", async () => {
    const pawl = newPawl();
    const flaky = uniqueType("flaky");
    const once = uniqueType("once");
    const fatal = uniqueType("fatal");
    const discard = uniqueType("discard");
    pawl.register(
      flaky,
      () => {
        throw new Error("boom");
      },
      { retry: { baseMs: 60_000, factor: 2, maxMs: 600_000, jitter: 0 } },
    );
    pawl.register(once, () => Promise.reject(new Error("only once")), { maxAttempts: 1 });
    pawl.register(fatal, () => {
      throw new NonRetryableError("bad data");
    });
    pawl.register(discard, () => {
      throw new Discard("not needed");
    });
    const dead: string[] = [];
    pawl.on("job:dead", (e) => dead.push(e.reason));
    const mode = inline(pawl);
    const before = await pawl.store.databaseTime();
    const retried = await pawl.enqueue(flaky, {});
    expect(retried).toMatchObject({ status: "PENDING", attempts: 1, lastError: "boom", pickedBy: null });
    const delay = retried.scheduledTime.getTime() - before.getTime();
    expect(delay).toBeGreaterThanOrEqual(60_000);
    expect(delay).toBeLessThan(65_000);
    expect(mode.results.at(-1)).toMatchObject({ status: "retried", delayMs: 60_000, timedOut: false });
    expect(mode.results.at(-1)?.error?.message).toBe("boom");

    expect(await pawl.enqueue(once, {})).toMatchObject({
      status: "DEAD",
      attempts: 1,
      lastError: "only once",
    });
    expect(await pawl.enqueue(fatal, {})).toMatchObject({ status: "DEAD", attempts: 1 });
    expect(await pawl.enqueue(discard, {})).toMatchObject({ status: "DEAD", lastError: "not needed" });
    expect(dead).toEqual(["exhausted", "non-retryable", "discarded"]);
    expect(mode.results.slice(1).map((r) => [r.status, r.reason])).toEqual([
      ["dead", "exhausted"],
      ["dead", "non-retryable"],
      ["dead", "discarded"],
    ]);
    await mode.restore();
  });

  it("leaves a snoozed job PENDING without counting the attempt", async () => {
    const pawl = newPawl();
    const type = uniqueType("sleepy");
    pawl.register(type, () => {
      throw new Snooze(30_000);
    });
    await inline(pawl, async (mode) => {
      const job = await pawl.enqueue(type, {});
      expect(job).toMatchObject({ status: "PENDING", attempts: 0, errors: [] });
      expect(mode.results[0]).toMatchObject({ status: "snoozed", delayMs: 30_000 });
    });
  });

  it("ends an attempt at its deadline as a timeout", async () => {
    const pawl = newPawl();
    const type = uniqueType("slow");
    let aborted = false;
    pawl.register(
      type,
      (_p, ctx) =>
        new Promise((resolve) => {
          ctx.signal.addEventListener("abort", () => (aborted = true));
          setTimeout(resolve, 2_000).unref();
        }),
      { timeoutMs: 50, maxAttempts: 1 },
    );
    const hard = record(pawl, "watchdog:hard-timeout");
    await inline(pawl, async (mode) => {
      const job = await pawl.enqueue(type, {});
      expect(job.status).toBe("DEAD");
      expect(job.errors[0]).toMatchObject({
        name: "JobTimeoutError",
        message: "attempt timed out after 50 ms",
      });
      expect(mode.results[0]).toMatchObject({ status: "dead", timedOut: true, reason: "exhausted" });
    });
    expect(aborted).toBe(true);
    expect(hard.n).toBe(1);
  });

  it("runs a transaction's job only after COMMIT, and never after ROLLBACK", async () => {
    const pawl = newPawl();
    const type = uniqueType("tx");
    const other = uniqueType("plain");
    const ran: string[] = [];
    pawl.register(type, (p: { tag: string }) => {
      ran.push(p.tag);
    });
    pawl.register(other, () => {});
    const mode = inline(pawl);
    const client = await pool.connect();
    try {
      await client.query("BEGIN");
      const job = await pawl.enqueue(type, { tag: "committed" }, { client });
      expect(job.status).toBe("PENDING");
      expect(await mode.flush()).toEqual([]); // still open: waits
      expect(ran).toEqual([]);
      await client.query("COMMIT");
      // The next enqueue outside a transaction runs it first.
      await pawl.enqueue(other, {});
      expect(ran).toEqual(["committed"]);
      expect((await pawl.getJob(job.id))?.status).toBe("SUCCEEDED");

      await client.query("BEGIN");
      await pawl.enqueueMany([{ type, payload: { tag: "rolled-back" } }], { client });
      await client.query("ROLLBACK");
      await client.query("BEGIN");
      await client.query("SAVEPOINT s");
      await pawl.enqueue(type, { tag: "savepoint" }, { client });
      await client.query("ROLLBACK TO SAVEPOINT s");
      await pawl.enqueue(type, { tag: "after-savepoint" }, { client });
      await client.query("COMMIT");
      expect((await mode.flush()).map((r) => r.status)).toEqual(["succeeded"]);
      expect(ran).toEqual(["committed", "after-savepoint"]);
    } finally {
      client.release();
    }
    expect(await rowsOfType(type)).toHaveLength(2);
    await mode.restore();
  });

  it("runs committed transactional jobs when the block ends", async () => {
    const pawl = newPawl();
    const type = uniqueType("tx-block");
    const ran: number[] = [];
    pawl.register(type, (p: { n: number }) => {
      ran.push(p.n);
    });
    const client = await pool.connect();
    try {
      await inline(pawl, async () => {
        await client.query("BEGIN");
        await pawl.enqueue(type, { n: 1 }, { client });
        await client.query("COMMIT");
        expect(ran).toEqual([]);
      });
    } finally {
      client.release();
    }
    expect(ran).toEqual([1]);
  });

  it("runs nothing for a unique duplicate, refuses unregistered types, and runs nested enqueues", async () => {
    const pawl = newPawl();
    const parent = uniqueType("parent");
    const child = uniqueType("child");
    const calls: string[] = [];
    pawl.register(parent, async (p: { n: number }) => {
      calls.push(`parent ${p.n}`);
      const c = await pawl.enqueue(child, { n: p.n });
      return c.status;
    });
    pawl.register(child, (p: { n: number }) => {
      calls.push(`child ${p.n}`);
    });
    const snoozer = uniqueType("snoozer");
    pawl.register(snoozer, () => {
      throw new Snooze(60_000);
    });
    const mode = inline(pawl);
    const first = await pawl.enqueue(parent, { n: 1 });
    expect(first).toMatchObject({ status: "SUCCEEDED", result: "SUCCEEDED" });
    expect(calls).toEqual(["parent 1", "child 1"]);

    const live = await pawl.enqueue(snoozer, {}, { uniqueKey: `u-${snoozer}` });
    const dup = await pawl.enqueue(snoozer, {}, { uniqueKey: `u-${snoozer}` });
    expect(dup).toMatchObject({ id: live.id, inserted: false });
    expect(mode.results.filter((r) => r.type === snoozer)).toHaveLength(1);

    const unknown = uniqueType("unknown");
    await expect(pawl.enqueue(unknown, {})).rejects.toMatchObject({ code: "INVALID_STATE" });
    expect(await rowsOfType(unknown)).toEqual([]);
    await mode.restore();

    const skipping = inline(pawl, { unregistered: "skip" });
    expect(await pawl.enqueue(unknown, {})).toMatchObject({ status: "PENDING", attempts: 0 });
    await skipping.restore();
  });

  it("stops jobs that enqueue themselves at maxDepth", async () => {
    const pawl = newPawl();
    const type = uniqueType("loop");
    let calls = 0;
    pawl.register(
      type,
      async () => {
        calls++;
        await pawl.enqueue(type, {});
      },
      { maxAttempts: 1 },
    );
    await inline(
      pawl,
      async () => {
        const job = await pawl.enqueue(type, {});
        expect(job.status).toBe("SUCCEEDED");
      },
      { maxDepth: 3 },
    );
    expect(calls).toBe(3);
    const rows = await rowsOfType(type);
    expect(rows.map((r) => r.status).sort()).toEqual(["DEAD", "SUCCEEDED", "SUCCEEDED"]);
  });
});

describe("drain", () => {
  it("runs the due jobs once and counts the outcomes", async () => {
    const pawl = newPawl();
    const ok = uniqueType("ok");
    const fails = uniqueType("fails");
    const fatal = uniqueType("fatal");
    const sleepy = uniqueType("sleepy");
    const spawner = uniqueType("spawner");
    const elsewhere = uniqueType("elsewhere");
    const order: string[] = [];
    pawl.register(ok, (p: { n: number }) => {
      order.push(`ok ${p.n}`);
      return p.n;
    });
    pawl.register(
      fails,
      () => {
        throw new Error("nope");
      },
      { retry: { baseMs: 60_000, jitter: 0 } },
    );
    pawl.register(fatal, () => {
      throw new NonRetryableError("bad");
    });
    pawl.register(sleepy, () => {
      throw new Snooze(60_000);
    });
    pawl.register(spawner, async () => {
      await pawl.enqueue(ok, { n: 99 });
    });
    await pawl.enqueue(ok, { n: 1 }, { priority: "low" });
    await pawl.enqueue(ok, { n: 2 }, { priority: "high" });
    await pawl.enqueue(ok, { n: 3 }, { delayMs: 3_600_000 });
    await pawl.enqueue(fails, {});
    await pawl.enqueue(fatal, {});
    await pawl.enqueue(sleepy, {});
    await pawl.enqueue(spawner, {});
    await pawl.enqueue(elsewhere, {}); // no handler: never claimed

    const types = [ok, fails, fatal, sleepy, spawner];
    const first = await drain(pawl, { types });
    expect(first).toMatchObject({ succeeded: 3, failed: 2, retried: 1, dead: 1, snoozed: 1, canceled: 0 });
    expect(first.jobs).toHaveLength(6);
    expect(order).toEqual(["ok 2", "ok 1"]); // priority order; the delayed job and the spawned one wait
    expect(await rowsOfType(elsewhere)).toMatchObject([{ status: "PENDING", attempts: 0 }]);

    const second = await drain(pawl, { types });
    expect(second).toMatchObject({ succeeded: 1, failed: 0 }); // the job the spawner enqueued
    expect(order).toEqual(["ok 2", "ok 1", "ok 99"]);

    // An hour and a bit later: the delayed job, the retry and the snoozed job are due.
    const later = await drain(pawl, { types, now: new Date(Date.now() + 3_700_000) });
    expect(later).toMatchObject({ succeeded: 1, retried: 1, snoozed: 1, dead: 0 });
    expect(later.jobs.find((j) => j.type === fails)).toMatchObject({ attempt: 2, status: "retried" });
    expect(await rowsOfType(fails)).toMatchObject([{ status: "PENDING", attempts: 2 }]);
  });

  it("sends a job with an invalid payload to DEAD without running it", async () => {
    const pawl = newPawl();
    const type = uniqueType("checked");
    let ran = false;
    pawl.register(
      type,
      () => {
        ran = true;
      },
      { validate: (p) => typeof (p as { id?: unknown }).id === "number" || "id must be a number" },
    );
    // Enqueued by a client that does not know the type's validator (another service, an older deploy).
    const client = testPawl(schema);
    await client.enqueue(type, { id: "seven" });
    await client.close();
    const result = await drain(pawl);
    expect(ran).toBe(false);
    expect(result.jobs.find((j) => j.type === type)).toMatchObject({
      status: "dead",
      reason: "invalid-payload",
    });
    expect(await rowsOfType(type)).toMatchObject([{ status: "DEAD" }]);
  });

  it("refuses types without a handler, and does nothing with no types", async () => {
    const pawl = newPawl();
    await expect(drain(pawl, { types: ["never.registered"] })).rejects.toMatchObject({
      code: "INVALID_STATE",
    });
    expect(await drain(pawl)).toMatchObject({ succeeded: 0, failed: 0, jobs: [] });
  });
});
