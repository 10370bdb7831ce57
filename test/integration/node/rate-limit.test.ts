/**
 * Rate limits on real PostgreSQL: the sliding log admits at most `limit` starts in any window (checked on
 * a copy of every recorded start, kept by a trigger, so the check is on the database's own times), a
 * refused job waits without using an attempt, unlimited work flows past limited work, payload keys get a
 * window each, a bad key costs its job alone, and queue limits apply to every type of the queue.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import type { Pawl } from "../../../src/index.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";
import { jobEvent } from "../../helpers/events.js";
import { actorsView } from "../../../observability/actor-view.js";
import { PostgresJobStore } from "../../../src/store/postgres-job-store.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let n: Pawl | undefined;

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("rl"));
  // Every start the log records, kept after the log prunes it: the check reads the database's times.
  await pool.query(`
    CREATE TABLE "${schema}".rate_audit (key text, started_at timestamptz, job_id bigint);
    CREATE FUNCTION "${schema}".rate_audit_fn() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN INSERT INTO "${schema}".rate_audit VALUES (NEW.key, NEW.started_at, NEW.job_id); RETURN NEW; END $$;
    CREATE TRIGGER rate_audit AFTER INSERT ON "${schema}".scheduler_rate_limit_start
      FOR EACH ROW EXECUTE FUNCTION "${schema}".rate_audit_fn();`);
});
afterAll(() => cleanup());
afterEach(async () => {
  await n?.close();
  n = undefined;
});

/** The recorded starts of `key` (ms since the epoch, database time), in order. */
async function starts(key: string): Promise<number[]> {
  const res = await pool.query<{ t: number }>(
    `SELECT (extract(epoch FROM started_at) * 1000)::float8 AS t FROM "${schema}".rate_audit
     WHERE key = $1 ORDER BY started_at`,
    [key],
  );
  return res.rows.map((r) => r.t);
}

/** The most starts in any window (t - perMs, t] (a sliding window ending at each start). */
function busiestWindow(times: readonly number[], perMs: number): number {
  let most = 0;
  for (let i = 0; i < times.length; i++) {
    let count = 0;
    for (let j = i; j >= 0 && (times[j] as number) > (times[i] as number) - perMs; j--) count++;
    most = Math.max(most, count);
  }
  return most;
}

describe("rate limits", () => {
  it("starts at most `limit` attempts per window; refused jobs wait without using an attempt", async () => {
    n = testPawl(schema, { concurrency: 8 });
    const ran: string[] = [];
    n.register("limited", async (p: { i: number }) => void ran.push(String(p.i)), {
      rateLimit: { limit: 5, perMs: 500 },
    });
    n.register("free", async () => "ok");
    const refusals = { local: 0, store: 0 };
    n.on("job:rate-limited", (e) => {
      refusals[e.local ? "local" : "store"]++;
      expect(e.keys).toEqual(["type:limited"]);
    });
    const rescheduled: string[] = [];
    n.on("job:rescheduled", (e) => rescheduled.push(e.reason));
    await n.start();
    const t0 = Date.now();
    const limited = await n.enqueueMany(
      Array.from({ length: 20 }, (_, i) => ({ type: "limited", payload: { i } })),
    );
    const free = await n.enqueueMany(Array.from({ length: 50 }, () => ({ type: "free" })));
    const freeDone = Promise.all(free.map((j) => n!.waitFor(j.id, { timeoutMs: 20_000 })));
    const limitedDone = Promise.all(limited.map((j) => n!.waitFor(j.id, { timeoutMs: 30_000 })));
    await freeDone;
    const freeMs = Date.now() - t0;
    // The inspector shows the key this node remembers as closed (the backlog is still being refused).
    const remembered = actorsView(n, false).rateLimits;
    expect(remembered.map((k) => k.key)).toEqual(["type:limited"]);
    expect(remembered[0]?.refused).toBeGreaterThan(0);
    await limitedDone;
    const limitedMs = Date.now() - t0;
    // 20 starts at 5 per 500 ms need at least three full windows after the first.
    expect(limitedMs).toBeGreaterThanOrEqual(1500);
    // Unlimited work is not held up behind the limited backlog.
    expect(freeMs).toBeLessThan(limitedMs);
    const log = await starts("type:limited");
    expect(log).toHaveLength(20);
    expect(busiestWindow(log, 500)).toBeLessThanOrEqual(5);
    for (const j of limited) expect(await n.getJob(j.id)).toMatchObject({ status: "SUCCEEDED", attempts: 1 });
    expect(ran).toHaveLength(20);
    expect(refusals.store).toBeGreaterThan(0);
    // The node refused most of the backlog from its memory of the opening, without asking the store.
    expect(refusals.local).toBeGreaterThan(0);
    expect(rescheduled.every((r) => r === "rate-limit")).toBe(true);
    expect(rescheduled).toHaveLength(refusals.local + refusals.store);
  });

  it("a key function gives each value its own window; a bad key costs its job alone", async () => {
    n = testPawl(schema, { concurrency: 4 });
    n.register("per-tenant", async (p: { tenant: unknown }) => p.tenant, {
      rateLimit: {
        limit: 2,
        perMs: 60_000,
        key: (p: { tenant: unknown }) => {
          if (p.tenant === "boom") throw new Error("no tenant");
          // Keys PostgreSQL cannot store (a payload cannot hold them, a key function can make them): a NUL,
          // and a cut through an emoji's surrogate pair.
          if (p.tenant === "nul") return "nul\u0000";
          if (p.tenant === "cut:😀") return p.tenant.slice(0, 5);
          return p.tenant as string;
        },
      },
      maxAttempts: 5,
    });
    await n.start();
    const rescheduled = new Map<string, number>();
    n.on("job:rescheduled", (e) => rescheduled.set(e.job.id, e.delayMs));
    const tenants = ["a", "a", "b", "b", "a", "boom", 42, "nul", "cut:😀"];
    const jobRescheduled = jobEvent(n.events, "job:rescheduled", undefined, 15_000);
    const jobs = await n.enqueueMany(tenants.map((tenant) => ({ type: "per-tenant", payload: { tenant } })));
    const ids = (tenant: unknown) => jobs.filter((_, i) => tenants[i] === tenant).map((j) => j.id);
    // Tenant a has three jobs for two starts a minute: which one waits is the admissions' race.
    const refusedA = jobRescheduled.forAny(ids("a"));
    const done = (id: string) => n!.waitFor(id, { timeoutMs: 15_000 });
    await Promise.all([...ids("b"), ...ids("boom"), ...ids(42), ...ids("nul"), ...ids("cut:😀")].map(done));
    await refusedA.catch(() => undefined);
    const waiting = ids("a").filter((id) => rescheduled.has(id));
    expect(waiting).toHaveLength(1);
    await Promise.all(
      ids("a")
        .filter((id) => !waiting.includes(id))
        .map(done),
    );
    // It waits for its window (a minute) without using an attempt; tenant b was not held up by it.
    expect(rescheduled.get(waiting[0] as string)).toBeGreaterThan(50_000);
    expect(await n.getJob(waiting[0] as string)).toMatchObject({ status: "PENDING", attempts: 0 });
    for (const id of ids("b")) expect((await n.getJob(id))?.status).toBe("SUCCEEDED");
    const dead = await n.getJob(ids("boom")[0] as string);
    expect(dead).toMatchObject({ status: "DEAD", attempts: 1 });
    expect(dead?.lastError).toMatch(/the rateLimit key of per-tenant threw: no tenant/);
    expect((await n.getJob(ids(42)[0] as string))?.lastError).toMatch(
      /returned 42: it must return a string of 1 to 200 characters/,
    );
    for (const [tenant, what] of [
      ["nul", /returned "nul\\u0000": it contains U\+0000 \(NUL\) at index 3/],
      ["cut:😀", /returned "cut:\\ud83d": it contains U\+D83D \(a lone high surrogate\) at index 4/],
    ] as const) {
      const job = await n.getJob(ids(tenant)[0] as string);
      expect(job).toMatchObject({ status: "DEAD", attempts: 1 });
      expect(job?.lastError).toMatch(what);
    }
    expect(await starts("key:a")).toHaveLength(2);
    expect(await starts("key:b")).toHaveLength(2);
  });

  it("a queue's limit counts the jobs of every type in the queue", async () => {
    n = testPawl(schema, { concurrency: 4, queueRateLimits: { slow: { limit: 3, perMs: 60_000 } } });
    n.register("x", async () => "x", { queue: "slow" });
    n.register("y", async () => "y", { queue: "slow" });
    await n.start();
    const back = new Map<string, string>();
    n.on("job:rescheduled", (e) => back.set(e.job.id, e.reason));
    const refusedOne = n.events.next("job:rate-limited", () => true, 15_000);
    const handedBack = n.events.next("job:rescheduled", () => true, 15_000);
    const jobs = await n.enqueueMany([{ type: "x" }, { type: "y" }, { type: "x" }, { type: "y" }]);
    const refused = await refusedOne;
    await handedBack;
    expect(refused.keys).toEqual(["queue:slow"]);
    for (const j of jobs) if (j.id !== refused.job.id) await n.waitFor(j.id, { timeoutMs: 15_000 });
    expect(await starts("queue:slow")).toHaveLength(3);
    expect([...back]).toEqual([[refused.job.id, "rate-limit"]]);
    expect(await n.getJob(refused.job.id)).toMatchObject({ status: "PENDING", attempts: 0 });
  });

  it("bad configuration is a clear error at register() and createPawl", () => {
    const node = testPawl(schema);
    expect(() => node.register("t", async () => 1, { rateLimit: { limit: 0, perMs: 1000 } })).toThrow(
      "rateLimit of t: limit must be an integer from 1 to 100000, got 0",
    );
    expect(() =>
      node.register("t", async () => 1, { rateLimit: { limit: 1, perMs: 1000, key: "k" as never } }),
    ).toThrow("rateLimit of t: key must be a function of the payload");
    expect(() => testPawl(schema, { queueRateLimits: { mail: { limit: 5, perMs: 0 } } })).toThrow(
      "queueRateLimits.mail: perMs must be an integer from 1 to 2147483647, got 0",
    );
    void node.close();
  });
});

describe("pruning the log", () => {
  it("drops starts out of their window and keys idle for a window; keeps what a window still holds", async () => {
    const store = new PostgresJobStore(pool, schema);
    const longAgo = new Date(Date.now() - 600_000);
    await store.admitRate([{ key: "key:gone-tenant", limit: 5, perMs: 1000 }], "1", longAgo);
    await store.admitRate([{ key: "key:live-tenant", limit: 5, perMs: 3_600_000 }], "2");
    expect(await store.pruneRateLimits()).toBeGreaterThanOrEqual(1);
    const keys = (await store.rateWindows()).map((w) => w.key);
    expect(keys).not.toContain("key:gone-tenant");
    expect((await store.rateWindows(["key:live-tenant"]))[0]?.used).toBe(1);
  });
});
