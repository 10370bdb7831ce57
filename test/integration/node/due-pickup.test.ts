/**
 * Work this node knows the due time of starts on time. A retry's backoff and an enqueue with `delayMs`
 * on this node tell the node when the row comes due; with default settings (polls 2-30 s apart when
 * idle, the floored pass at most every second), it looks at that moment instead of at its next poll or
 * discovery pass. Start is measured by the database's own clock against the row's `scheduled_time`, from
 * inside the handler (so the figure includes the claim, the hand-off to a slot and that one query).
 */
import { randomBytes } from "node:crypto";
import type pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { Pawl } from "../../../src/index.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
const nodes: Pawl[] = [];

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("dp"));
});
afterAll(() => cleanup());
afterEach(async () => {
  for (const n of nodes.splice(0)) await n.close();
});

/** A node with every default (the postgres coordinator by auto, claim cursors on, adaptive polling from 2 s). */
async function idleNode(register: (n: Pawl) => void): Promise<Pawl> {
  const n = testPawl(schema, {}, { pawlDefaults: true });
  nodes.push(n);
  register(n);
  const firstPoll = n.events.next("poll");
  await n.start();
  await firstPoll;
  return n;
}

/** How late the job started: the database's clock_timestamp() minus its scheduled_time, in ms. */
async function lateness(id: string): Promise<number> {
  const { rows } = await pool.query<{ ms: number }>(
    `SELECT (extract(epoch FROM clock_timestamp() - scheduled_time) * 1000)::float8 AS ms
       FROM "${schema}".scheduler_job_all WHERE id = $1`,
    [id],
  );
  return rows[0]!.ms;
}

/** The budget: 100 ms after the due time, as the issue asks; no slack added. */
const budgetMs = 100;

/**
 * Samples per test, one after the other; the median is held to the budget. One sample read 143 ms under
 * the full suite's load (28-88 ms alone, at this session's start and after it), so a single reading
 * failed on load alone. The median still tells the mechanism apart: without it a job would wait for the
 * next discovery pass (up to 1 s, so a sample under 100 ms about one time in ten) or poll (2-30 s), and
 * two of three samples under 100 ms would then happen about three times in a hundred.
 */
const samples = 3;
const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

/**
 * One sample: a fresh idle node (a node that has just run a job polls fast for a while, which would hide
 * the mechanism), `run` on it, then the node closed so that the next sample's node is the only one.
 */
async function onFreshNode(register: (n: Pawl) => void, run: (n: Pawl) => Promise<void>): Promise<void> {
  const n = await idleNode(register);
  await run(n);
  nodes.splice(nodes.indexOf(n), 1);
  await n.close();
}

describe("due pickup on an idle node with default settings", () => {
  it("starts retries with a 1 s backoff within 100 ms of their due times (median of three)", async () => {
    const type = `retry-${randomBytes(3).toString("hex")}`;
    const late: number[] = [];
    const register = (p: Pawl) =>
      p.register(
        type,
        async (_payload, ctx) => {
          if (ctx.attempt === 1) throw new Error("first attempt fails");
          late.push(await lateness(ctx.jobId));
          return "ok";
        },
        { retry: () => 1000, maxAttempts: 2 },
      );
    for (let i = 0; i < samples; i++) {
      await onFreshNode(register, async (n) => {
        const retried = n.events.next("job:retried", (e) => e.job.type === type, 10_000);
        const done = n.events.next("job:succeeded", (e) => e.job.type === type, 10_000);
        await n.enqueue(type, {});
        expect((await retried).delayMs).toBe(1000);
        await done;
      });
    }
    console.log(`retries started ${late.map((x) => x.toFixed(1)).join(", ")} ms after their due times`);
    expect(late).toHaveLength(samples);
    expect(Math.min(...late)).toBeGreaterThanOrEqual(0);
    expect(median(late)).toBeLessThan(budgetMs);
  });

  it("starts jobs enqueued with delayMs 1000 within 100 ms of their due times (median of three)", async () => {
    const type = `delayed-${randomBytes(3).toString("hex")}`;
    const late: number[] = [];
    const register = (p: Pawl) =>
      p.register(type, async (_payload, ctx) => {
        late.push(await lateness(ctx.jobId));
        return "ok";
      });
    for (let i = 0; i < samples; i++) {
      await onFreshNode(register, async (n) => {
        const done = n.events.next("job:succeeded", (e) => e.job.type === type, 10_000);
        await n.enqueue(type, {}, { delayMs: 1000 });
        await done;
      });
    }
    console.log(`delayed jobs started ${late.map((x) => x.toFixed(1)).join(", ")} ms after their due times`);
    expect(late).toHaveLength(samples);
    expect(Math.min(...late)).toBeGreaterThanOrEqual(0);
    expect(median(late)).toBeLessThan(budgetMs);
  });
});
