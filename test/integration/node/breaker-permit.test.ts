import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import type { Pawl } from "../../../src/index.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";
import { jobEvent } from "../../helpers/events.js";
import { gate } from "../../helpers/gate.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let n: Pawl;

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("bp"));
});
afterAll(() => cleanup());
afterEach(async () => {
  await n?.close();
});

describe("circuit breaker", () => {
  it("opens, reschedules without using an attempt, half-opens and closes on a good trial", async () => {
    n = testPawl(schema, {
      concurrency: 1,
      breakers: { svc: { failureThreshold: 2, minimumCalls: 100, openMs: 400, halfOpenTrials: 1 } },
    });
    let failing = true;
    n.register(
      "call-svc",
      async () => {
        if (failing) throw new Error("503");
        return "ok";
      },
      { service: "svc", maxAttempts: 10, retry: { baseMs: 5000, factor: 1, maxMs: 5000, jitter: 0 } },
    );
    const changes: string[] = [];
    n.on("breaker:change", (e) => changes.push(`${e.from}->${e.to}`));
    await n.start();
    const opened = n.events.next("breaker:change", (e) => e.to === "OPEN");
    const jobRetried = jobEvent(n.events, "job:retried");
    const [a, b] = await n.enqueueMany([{ type: "call-svc" }, { type: "call-svc" }]);
    await Promise.all([opened, jobRetried.forAll([a!.id, b!.id])]);
    expect(await n.getJob(a!.id)).toMatchObject({ status: "PENDING", attempts: 1 });
    expect(await n.getJob(b!.id)).toMatchObject({ status: "PENDING", attempts: 1 });

    const jobRescheduled = jobEvent(n.events, "job:rescheduled");
    const jobSucceeded = jobEvent(n.events, "job:succeeded", undefined, 15_000);
    const c = await n.enqueue("call-svc", {});
    const rescheduled = await jobRescheduled.for(c.id);
    expect(rescheduled.reason).toBe("breaker");
    expect(rescheduled.delayMs).toBeGreaterThan(0);
    expect(rescheduled.delayMs).toBeLessThanOrEqual(400);
    expect(await n.getJob(c.id)).toMatchObject({ status: "PENDING", attempts: 0 });

    failing = false;
    const closed = n.events.next("breaker:change", (e) => e.to === "CLOSED", 15_000);
    await n.events.next("breaker:change", (e) => e.to === "HALF_OPEN", 15_000);
    await jobSucceeded.for(c.id);
    await closed;
    expect(changes).toEqual(["CLOSED->OPEN", "OPEN->HALF_OPEN", "HALF_OPEN->CLOSED"]);
    expect((await n.getJob(c.id))?.attempts).toBe(1);
    expect(n.inspect()?.children.find((a) => a.id === "breaker-svc")?.context.state).toBe("CLOSED");
  });
});

describe("resource permits", () => {
  it("reschedules a job whose resource is saturated, without using an attempt, and frees permits", async () => {
    n = testPawl(schema, { concurrency: 2, resources: { "smtp-pool": 1 }, permitRetryDelayMs: 150 });
    const release = gate();
    n.register(
      "mail",
      async (p: { first: boolean }) => {
        if (p.first) await release.promise;
        return "sent";
      },
      { resource: "smtp-pool" },
    );
    await n.start();
    const jobStarted = jobEvent(n.events, "job:started");
    const first = await n.enqueue("mail", { first: true });
    await jobStarted.for(first.id);
    const held = await pool.query(`SELECT resource, job_id FROM "${schema}".scheduler_resource_permit`);
    expect(held.rows).toEqual([{ resource: "smtp-pool", job_id: first.id }]);

    const jobRescheduled = jobEvent(n.events, "job:rescheduled");
    const second = await n.enqueue("mail", { first: false });
    const r = await jobRescheduled.for(second.id);
    expect(r).toMatchObject({ reason: "permit", delayMs: 150 });
    expect(await n.getJob(second.id)).toMatchObject({ status: "PENDING", attempts: 0 });

    release.open();
    await n.events.next("job:succeeded", (e) => e.job.id === second.id, 15_000);
    expect((await n.getJob(second.id))?.attempts).toBe(1);
    await n.stop({ graceMs: 1000 });
    const left = await pool.query(`SELECT count(*)::int AS n FROM "${schema}".scheduler_resource_permit`);
    expect(left.rows[0].n).toBe(0);
  });
});

describe("payload validation at run time", () => {
  it("sends a job whose payload the type rejects straight to DEAD without running it", async () => {
    n = testPawl(schema);
    let ran = 0;
    n.register("validated", async () => ran++, {
      validate: (p) => (typeof (p as { n?: unknown }).n === "number" ? true : "n must be a number"),
    });
    await n.start();
    // Inserted behind pawl's back (as an older deploy might have), so enqueue's check did not run.
    const jobDead = jobEvent(n.events, "job:dead");
    const row = await pool.query(
      `INSERT INTO "${schema}".scheduler_job_queue (type, payload) VALUES ('validated', '{"n":"x"}') RETURNING id`,
    );
    const id = String(row.rows[0].id);
    n.nodeRuntime?.wake("local");
    const dead = await jobDead.for(id);
    expect(dead.reason).toBe("invalid-payload");
    expect(dead.error.message).toContain("n must be a number");
    expect(ran).toBe(0);
    await expect(n.enqueue("validated", { n: "y" })).rejects.toMatchObject({ code: "VALIDATION_FAILED" });
  });
});
