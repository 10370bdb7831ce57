import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { ValidationError, type PawlClient } from "../../../src/index.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";
import { testPool } from "../../helpers/db.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let pawl: PawlClient;

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("enq"));
  pawl = testPawl(schema, { maxPayloadBytes: 1000 });
});
afterAll(async () => {
  await pawl.close();
  await cleanup();
});

const count = async () =>
  Number((await pool.query(`SELECT count(*) AS n FROM "${schema}".scheduler_job_all`)).rows[0].n);

describe("enqueue", () => {
  it("inserts a job with its options and reads it back", async () => {
    const before = Date.now();
    const job = await pawl.enqueue(
      "email.send",
      { to: "a@b.c" },
      { priority: "high", delayMs: 60_000, timeoutMs: 5000, maxAttempts: 3, queue: "mail" },
    );
    expect(job).toMatchObject({
      type: "email.send",
      status: "PENDING",
      priority: 20,
      attempts: 0,
      inserted: true,
    });
    const read = await pawl.getJob(job.id);
    expect(read).toMatchObject({
      id: job.id,
      payload: { to: "a@b.c" },
      queue: "mail",
      timeoutMs: 5000,
      maxAttempts: 3,
      pickedBy: null,
      lastError: null,
    });
    expect(read!.scheduledTime.getTime()).toBeGreaterThan(before + 50_000);
    expect(await pawl.getJob("999999999")).toBeNull();
  });

  it("returns the job as getJob reads it: its timestamps are Dates, the same to the millisecond", async () => {
    const runAt = new Date("2031-05-06T07:08:09.123Z");
    const [job] = await pawl.enqueueMany([{ type: "ts", runAt }, { type: "ts" }]);
    const read = await pawl.getJob(job!.id);
    for (const k of ["scheduledTime", "createdAt", "updatedAt"] as const) {
      expect(job![k]).toBeInstanceOf(Date);
      expect(job![k].getTime()).toBe(read![k].getTime());
    }
    expect(job!.scheduledTime).toEqual(runAt);
    expect(job!.pickedAt).toBeNull();
    expect(job!.finishedAt).toBeNull();
  });

  it("maps named priorities and accepts runAt", async () => {
    const runAt = new Date("2030-01-01T00:00:00Z");
    const jobs = await pawl.enqueueMany([
      { type: "p", priority: "critical" },
      { type: "p", priority: "low", runAt },
      { type: "p", priority: 77 },
      { type: "p" },
    ]);
    expect(jobs.map((j) => j.priority)).toEqual([30, 0, 77, 10]);
    expect(jobs[1]!.scheduledTime.toISOString()).toBe(runAt.toISOString());
  });

  it("enqueues many in input order with one statement", async () => {
    const items = Array.from({ length: 500 }, (_, i) => ({ type: "bulk", payload: { i } }));
    const jobs = await pawl.enqueueMany(items);
    expect(jobs.map((j) => (j.payload as { i: number }).i)).toEqual(items.map((_, i) => i));
  });

  it("exists only once the caller's transaction commits", async () => {
    const client = await pool.connect();
    try {
      await client.query("BEGIN");
      const job = await pawl.enqueue("tx.commit", { a: 1 }, { client });
      expect(await pawl.getJob(job.id)).toBeNull(); // not visible outside the transaction yet
      await client.query("COMMIT");
      expect((await pawl.getJob(job.id))?.status).toBe("PENDING");

      await client.query("BEGIN");
      const rolled = await pawl.enqueue("tx.rollback", { a: 2 }, { client });
      await client.query("ROLLBACK");
      expect(await pawl.getJob(rolled.id)).toBeNull();
    } finally {
      client.release();
    }
  });

  it("keeps at most one live job per unique key under concurrent enqueues", async () => {
    const pools = Array.from({ length: 4 }, () => testPool(5));
    const pawls = pools.map((p) => testPawl(schema, { pool: p }));
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) => pawls[i % 4]!.enqueue("unique", { i }, { uniqueKey: "k1" })),
    );
    await Promise.all(pools.map((p) => p.end()));
    const ids = new Set(results.map((r) => r.id));
    expect(ids.size).toBe(1);
    expect(results.filter((r) => r.inserted)).toHaveLength(1);
    const rows = await pool.query(
      `SELECT count(*)::int AS n FROM "${schema}".scheduler_job_all WHERE unique_key = 'k1'`,
    );
    expect(rows.rows[0].n).toBe(1);
  });

  it("returns the live job for a duplicate key and allows a new one once it finished", async () => {
    const first = await pawl.enqueue("u2", {}, { uniqueKey: "k2" });
    const again = await pawl.enqueue("u2", {}, { uniqueKey: "k2" });
    expect(again).toMatchObject({ id: first.id, inserted: false });
    const [a, b] = await pawl.enqueueMany([
      { type: "u2", uniqueKey: "k3" },
      { type: "u2", uniqueKey: "k3" },
    ]);
    expect(a!.id).toBe(b!.id);
    expect([a!.inserted, b!.inserted]).toEqual([true, false]);
    await pawl.cancel(first.id);
    const third = await pawl.enqueue("u2", {}, { uniqueKey: "k2" });
    expect(third.inserted).toBe(true);
    expect(third.id).not.toBe(first.id);
  });

  it("cancels a PENDING job and leaves a finished one alone", async () => {
    const job = await pawl.enqueue("c", {});
    const r = await pawl.cancel(job.id, "not needed");
    expect(r).toMatchObject({ outcome: "canceled", previousStatus: "PENDING" });
    expect(r.job).toMatchObject({ status: "CANCELED", cancelReason: "not needed" });
    const again = await pawl.cancel(job.id);
    expect(again.outcome).toBe("already-final");
    await expect(pawl.cancel("987654321")).rejects.toMatchObject({ code: "JOB_NOT_FOUND" });
  });

  describe("bad input is a typed error and writes nothing", () => {
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    const cases: [string, () => Promise<unknown>, string][] = [
      ["empty type", () => pawl.enqueue("", {}), "INVALID_JOB_TYPE"],
      ["over-long type", () => pawl.enqueue("x".repeat(201), {}), "INVALID_JOB_TYPE"],
      ["type with spaces", () => pawl.enqueue("a b", {}), "INVALID_JOB_TYPE"],
      ["non-string type", () => pawl.enqueue(42 as unknown as string, {}), "INVALID_JOB_TYPE"],
      ["function payload", () => pawl.enqueue("t", { f: () => 1 }), "INVALID_PAYLOAD"],
      ["NaN in payload", () => pawl.enqueue("t", { n: NaN }), "INVALID_PAYLOAD"],
      ["Date in payload", () => pawl.enqueue("t", { d: new Date() }), "INVALID_PAYLOAD"],
      ["BigInt payload", () => pawl.enqueue("t", { b: 1n }), "INVALID_PAYLOAD"],
      ["undefined in payload", () => pawl.enqueue("t", { u: undefined }), "INVALID_PAYLOAD"],
      ["circular payload", () => pawl.enqueue("t", circular), "INVALID_PAYLOAD"],
      ["oversized payload", () => pawl.enqueue("t", { s: "x".repeat(2000) }), "PAYLOAD_TOO_LARGE"],
      ["priority too high", () => pawl.enqueue("t", {}, { priority: 101 }), "INVALID_PRIORITY"],
      ["negative priority", () => pawl.enqueue("t", {}, { priority: -1 }), "INVALID_PRIORITY"],
      ["fractional priority", () => pawl.enqueue("t", {}, { priority: 1.5 }), "INVALID_PRIORITY"],
      [
        "unknown priority name",
        () => pawl.enqueue("t", {}, { priority: "urgent" as "high" }),
        "INVALID_PRIORITY",
      ],
      ["negative delay", () => pawl.enqueue("t", {}, { delayMs: -1 }), "INVALID_OPTION"],
      ["infinite delay", () => pawl.enqueue("t", {}, { delayMs: Infinity }), "INVALID_OPTION"],
      [
        "runAt not a date",
        () => pawl.enqueue("t", {}, { runAt: "tomorrow" as unknown as Date }),
        "INVALID_OPTION",
      ],
      ["invalid date", () => pawl.enqueue("t", {}, { runAt: new Date("nope") }), "INVALID_OPTION"],
      ["delay and runAt", () => pawl.enqueue("t", {}, { delayMs: 1, runAt: new Date() }), "INVALID_OPTION"],
      ["unknown option", () => pawl.enqueue("t", {}, { priorty: 1 } as never), "UNKNOWN_OPTION"],
      ["zero maxAttempts", () => pawl.enqueue("t", {}, { maxAttempts: 0 }), "INVALID_OPTION"],
      ["zero timeout", () => pawl.enqueue("t", {}, { timeoutMs: 0 }), "INVALID_OPTION"],
      ["empty unique key", () => pawl.enqueue("t", {}, { uniqueKey: "" }), "INVALID_OPTION"],
      ["bad queue", () => pawl.enqueue("t", {}, { queue: "" }), "INVALID_OPTION"],
      ["bad item in a batch", () => pawl.enqueueMany([{ type: "ok" }, { type: "" }]), "INVALID_JOB_TYPE"],
      ["bad job id", () => pawl.getJob("abc"), "INVALID_OPTION"],
    ];
    it.each(cases)("%s", async (_name, call, code) => {
      const before = await count();
      const error = await call().then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).code).toBe(code);
      expect((error as ValidationError).message.length).toBeGreaterThan(10);
      expect(await count()).toBe(before);
    });
  });
});
