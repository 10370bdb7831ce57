/**
 * Concurrency keys in pawl/testing (issue 27): fake() and inline() take `concurrencyKey` and
 * `concurrencyLimit` and refuse bad ones as enqueue does (nothing recorded, nothing written); inline() runs
 * a job whose key is full only once a job of its key has ended (a handler enqueueing its own key, parallel
 * enqueues, a lease held by another node); drain() runs keyed jobs through the keyed claim, at most a key's
 * limit of them per drain.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { ValidationError, createPawl, type EnqueueOptions, type Pawl } from "../../../src/index.js";
import { drain, fake, inline } from "../../../src/testing/index.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";
import { badConcurrency } from "../../helpers/concurrency.js";
import { gate } from "../../helpers/gate.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
const opened: Pawl[] = [];

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("ttkey"));
});
afterAll(() => cleanup());
afterEach(async () => {
  for (const p of opened.splice(0)) await p.close();
  await pool.query(`TRUNCATE "${schema}".scheduler_job_queue, "${schema}".scheduler_job_finished`);
});

function newPawl(): Pawl {
  const pawl = testPawl(schema);
  opened.push(pawl);
  return pawl;
}

/** Every row of `type`: status, key and limit, in id order. */
async function rowsOf(type: string): Promise<{ status: string; key: string | null; limit: number | null }[]> {
  const r = await pool.query<{ status: string; key: string | null; limit: number | null }>(
    `SELECT status, concurrency_key AS key, concurrency_limit AS limit FROM "${schema}".scheduler_job_all
     WHERE type = $1 ORDER BY id`,
    [type],
  );
  return r.rows;
}

/** Handlers in flight, the most at once, and the order of starts and ends. */
function tracker() {
  let now = 0;
  const seen = { most: 0, log: [] as string[] };
  return {
    seen,
    async run<T>(label: string, body: () => Promise<T>): Promise<T> {
      now++;
      seen.most = Math.max(seen.most, now);
      seen.log.push(`start ${label}`);
      try {
        return await body();
      } finally {
        now--;
        seen.log.push(`end ${label}`);
      }
    },
  };
}

// The doors pawl/testing replaces: enqueue and enqueueMany.
const doors: [string, (pawl: Pawl, type: string, bad: object) => Promise<unknown>][] = [
  ["enqueue", (pawl, type, bad) => pawl.enqueue(type, {}, bad as EnqueueOptions)],
  [
    "enqueueMany",
    (pawl, type, bad) =>
      pawl.enqueueMany([
        { type, payload: {} },
        { type, payload: {}, ...bad },
      ]),
  ],
];
const cases = doors.flatMap(([door, call]) => badConcurrency.map((bad) => ({ door, call, ...bad })));

describe("fake", () => {
  it("records the key and limit as given", async () => {
    // A pawl whose database does not exist: fake never touches it.
    const offline = createPawl({ connectionString: "postgres://postgres@127.0.0.1:1/none", schema });
    opened.push(offline);
    await fake(offline, async (recorder) => {
      await offline.enqueue("report", { id: 1 }, { concurrencyKey: "tenant-1", concurrencyLimit: 2 });
      await offline.enqueueMany([{ type: "report", payload: { id: 2 }, concurrencyKey: "tenant-2" }]);
      expect(recorder.enqueued.map((r) => r.options)).toEqual([
        { concurrencyKey: "tenant-1", concurrencyLimit: 2 },
        { concurrencyKey: "tenant-2" },
      ]);
    });
  });

  it.each(cases)("$door with $name: INVALID_OPTION, nothing recorded", async ({ call, options, message }) => {
    const pawl = newPawl();
    await fake(pawl, async (recorder) => {
      const error = await call(pawl, "report", options).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).code).toBe("INVALID_OPTION");
      expect((error as Error).message).toMatch(message);
      expect(recorder.enqueued).toEqual([]);
    });
  });
});

describe("inline", () => {
  it("stores the key with the job's own limit, or the type's", async () => {
    const pawl = newPawl();
    pawl.register("ik.run", async () => "ok", { concurrencyLimit: 3 });
    await inline(pawl, async () => {
      const own = await pawl.enqueue("ik.run", {}, { concurrencyKey: "t1", concurrencyLimit: 1 });
      const [byType, none] = await pawl.enqueueMany([
        { type: "ik.run", payload: {}, concurrencyKey: "t2" },
        { type: "ik.run", payload: {} },
      ]);
      expect([own.status, byType?.status, none?.status]).toEqual(["SUCCEEDED", "SUCCEEDED", "SUCCEEDED"]);
    });
    expect(await rowsOf("ik.run")).toEqual([
      { status: "SUCCEEDED", key: "t1", limit: 1 },
      { status: "SUCCEEDED", key: "t2", limit: 3 },
      { status: "SUCCEEDED", key: null, limit: null },
    ]);
  });

  it.each(cases)("$door with $name: INVALID_OPTION, nothing written", async ({ call, options, message }) => {
    const pawl = newPawl();
    pawl.register("ik.bad", async () => {});
    const mode = inline(pawl);
    try {
      const error = await call(pawl, "ik.bad", options).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).code).toBe("INVALID_OPTION");
      expect((error as Error).message).toMatch(message);
      expect(mode.results).toEqual([]);
    } finally {
      await mode.restore();
    }
    expect(await rowsOf("ik.bad")).toEqual([]);
  });

  it("a job enqueued by a running job of its own key (limit 1) runs after it, not inside it", async () => {
    const pawl = newPawl();
    const t = tracker();
    const childSeen: string[] = [];
    pawl.register(
      "ik.nest",
      (p: { label: string }) =>
        t.run(p.label, async () => {
          if (p.label === "parent") {
            const child = await pawl.enqueue("ik.nest", { label: "child" }, { concurrencyKey: "solo" });
            childSeen.push(child.status);
          }
        }),
      { concurrencyLimit: 1 },
    );
    const mode = inline(pawl);
    const parent = await pawl.enqueue("ik.nest", { label: "parent" }, { concurrencyKey: "solo" });
    await mode.restore();
    // The child's enqueue, inside the parent, returned it PENDING: its key was full.
    expect(childSeen).toEqual(["PENDING"]);
    expect(parent.status).toBe("SUCCEEDED");
    expect(t.seen.log).toEqual(["start parent", "end parent", "start child", "end child"]);
    expect(t.seen.most).toBe(1);
    expect((await rowsOf("ik.nest")).map((r) => r.status)).toEqual(["SUCCEEDED", "SUCCEEDED"]);
    expect(mode.results.map((r) => r.status)).toEqual(["succeeded", "succeeded"]);
  });

  it("three enqueues in parallel, limit 2: two run at once, the third once one has ended", async () => {
    const pawl = newPawl();
    const t = tracker();
    // The running jobs end only once an enqueue has come back PENDING (its key was full), so the third
    // is always tried while two run; a third start opens it too, so a broken limit fails, not hangs.
    const release = gate();
    let started = 0;
    pawl.register("ik.par", (p: { n: number }) =>
      t.run(String(p.n), async () => {
        if (++started === 3) release.open();
        await release.promise;
      }),
    );
    const jobs = await inline(pawl, () =>
      Promise.all(
        [1, 2, 3].map((n) =>
          pawl.enqueue("ik.par", { n }, { concurrencyKey: "pair", concurrencyLimit: 2 }).then((job) => {
            if (job.status === "PENDING") release.open();
            return job;
          }),
        ),
      ),
    );
    expect(t.seen.most).toBe(2);
    // One enqueue found the key full and returned its job PENDING; it ran later all the same.
    expect(jobs.map((j) => j.status).sort()).toEqual(["PENDING", "SUCCEEDED", "SUCCEEDED"]);
    expect((await rowsOf("ik.par")).map((r) => r.status)).toEqual(["SUCCEEDED", "SUCCEEDED", "SUCCEEDED"]);
  });

  it("counts another node's lease: the job waits, and a flush runs it once that lease ends", async () => {
    const pawl = newPawl();
    pawl.register("ik.lease", async () => "ran");
    const foreign = await pawl.enqueue("ik.lease", {}, { concurrencyKey: "shared", concurrencyLimit: 1 });
    expect(await pawl.store.claimById(foreign.id, "other-node")).not.toBeNull();
    const mode = inline(pawl);
    try {
      const job = await pawl.enqueue("ik.lease", {}, { concurrencyKey: "shared", concurrencyLimit: 1 });
      expect(job.status).toBe("PENDING");
      expect(await mode.flush()).toEqual([]); // still full
      await pawl.store.complete("other-node", [{ id: foreign.id, resultJson: null }]);
      expect((await mode.flush()).map((r) => [r.jobId, r.status])).toEqual([[job.id, "succeeded"]]);
    } finally {
      await mode.restore();
    }
  });

  it("a job still held at restore() stays PENDING", async () => {
    const pawl = newPawl();
    pawl.register("ik.left", async () => {});
    const foreign = await pawl.enqueue("ik.left", {}, { concurrencyKey: "busy", concurrencyLimit: 1 });
    expect(await pawl.store.claimById(foreign.id, "other-node")).not.toBeNull();
    const mode = inline(pawl);
    const job = await pawl.enqueue("ik.left", {}, { concurrencyKey: "busy", concurrencyLimit: 1 });
    await mode.restore();
    expect(job.status).toBe("PENDING");
    expect(mode.results).toEqual([]);
    expect(await rowsOf("ik.left")).toEqual([
      { status: "RUNNING", key: "busy", limit: 1 },
      { status: "PENDING", key: "busy", limit: 1 },
    ]);
  });
});

describe("drain", () => {
  it("runs keyed jobs through the keyed claim: at most a key's limit per drain, every unlimited one", async () => {
    const pawl = newPawl();
    const t = tracker();
    pawl.register("dk.job", (p: { key: string | null; n: number }) =>
      t.run(`${p.key}:${p.n}`, async () => {}),
    );
    await pawl.enqueueMany([
      ...Array.from({ length: 6 }, (_, n) => ({
        type: "dk.job",
        payload: { key: "limited", n },
        concurrencyKey: "limited",
        concurrencyLimit: 2,
      })),
      ...Array.from({ length: 3 }, (_, n) => ({
        type: "dk.job",
        payload: { key: "free", n },
        concurrencyKey: "free",
      })),
      ...Array.from({ length: 2 }, (_, n) => ({ type: "dk.job", payload: { key: null, n } })),
    ]);
    const limitedRun = () => t.seen.log.filter((l) => l.startsWith("start limited")).length;
    expect(await drain(pawl)).toMatchObject({ succeeded: 2 + 3 + 2, failed: 0 });
    expect(limitedRun()).toBe(2);
    expect(await drain(pawl)).toMatchObject({ succeeded: 2 });
    expect(await drain(pawl)).toMatchObject({ succeeded: 2 });
    expect(await drain(pawl)).toMatchObject({ succeeded: 0 });
    expect(limitedRun()).toBe(6);
    // The drain runs one job at a time.
    expect(t.seen.most).toBe(1);
    expect((await rowsOf("dk.job")).every((r) => r.status === "SUCCEEDED")).toBe(true);
  });

  it("goes round every key, past the keyed claim's window of keys", async () => {
    const pawl = newPawl();
    pawl.register("dk.many", async () => {});
    // 100 keys, two jobs each, limit 1: one job of every key per drain.
    await pawl.enqueueMany(
      Array.from({ length: 200 }, (_, i) => ({
        type: "dk.many",
        payload: { i },
        concurrencyKey: `key-${String(i % 100).padStart(3, "0")}`,
        concurrencyLimit: 1,
      })),
    );
    expect(await drain(pawl)).toMatchObject({ succeeded: 100 });
    expect(await drain(pawl)).toMatchObject({ succeeded: 100 });
    expect(await drain(pawl)).toMatchObject({ succeeded: 0 });
  });
});
