/**
 * Durable handlers on a real node and database (docs/durable.md): steps recorded once and replayed past a
 * sleep and a retry, the attempt budget untouched by parking, the typed errors of a misused step, named
 * signals kept before the wait, timeouts recorded, children spawned once and awaited, and a parked job
 * canceled.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { ChildJobFailedError, DurableStepError, type Pawl, type SignalDelivery } from "../../../src/index.js";
import { closeAll, setupSchema, startNodes } from "../../helpers/pawl.js";
import { jobEvent } from "../../helpers/events.js";
import { jobDetail } from "../../../src/cli/format.js";
import { describeReason } from "../../../src/logic/explain-text.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let nodes: Pawl[] = [];

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("dhand"));
});
afterAll(() => cleanup());
afterEach(async () => {
  await closeAll(nodes);
  nodes = [];
});

/** Counts how often each step body ran. */
function counter() {
  const runs = new Map<string, number>();
  return {
    runs,
    hit: (name: string) => runs.set(name, (runs.get(name) ?? 0) + 1),
  };
}

async function steps(id: string) {
  const res = await pool.query<{ name: string; kind: string; status: string }>(
    `SELECT name, kind, status FROM "${schema}".scheduler_job_step WHERE job_id = $1 ORDER BY started_at, name`,
    [id],
  );
  return res.rows;
}

describe("durable handlers", () => {
  it("replays recorded steps past a sleep and a failed step's retry; parking does not use up attempts", async () => {
    const c = counter();
    let failOnce = true;
    const [node] = await startNodes(schema, 1, (n) =>
      n.register(
        "drip",
        async (p: { user: string }, ctx) => {
          const welcome = await ctx.step("welcome", (s) => {
            c.hit("welcome");
            return { sent: p.user, key: s.idempotencyKey };
          });
          await ctx.sleep("nap", 300);
          await ctx.step("flaky", () => {
            c.hit("flaky");
            if (failOnce) {
              failOnce = false;
              throw new Error("smtp down");
            }
            return null;
          });
          await ctx.sleep("nap-2", 200);
          return welcome;
        },
        { maxAttempts: 2, retry: { baseMs: 10, factor: 1, maxMs: 10, jitter: 0 } },
      ),
    );
    nodes = [node!];
    const job = await node!.enqueue("drip", { user: "ada" });
    const done = await node!.waitFor(job, { timeoutMs: 20_000 });
    expect(done.status).toBe("SUCCEEDED");
    expect(done.result).toEqual({ sent: "ada", key: `${job.id}:welcome` });
    expect(Object.fromEntries(c.runs)).toEqual({ welcome: 1, flaky: 2 });
    // getJob lists the steps, and `pawl job <id>` prints them.
    const read = await node!.getJob(job.id);
    expect(read?.steps?.map((s) => [s.name, s.kind, s.status, s.resultPreview])).toEqual([
      // jsonb's text form (a space after each colon and comma).
      ["welcome", "step", "succeeded", `{"key": "${job.id}:welcome", "sent": "ada"}`],
      ["nap", "sleep", "succeeded", "{}"],
      ["flaky", "step", "succeeded", "null"],
      ["nap-2", "sleep", "succeeded", "{}"],
    ]);
    expect(read?.steps?.[2]?.attempt).toBe(2);
    const printed = jobDetail(read!);
    expect(printed).toContain("steps (4):");
    expect(printed).toMatch(/flaky\s+step\s+#2 /);
    expect(await steps(job.id)).toEqual([
      { name: "welcome", kind: "step", status: "succeeded" },
      { name: "nap", kind: "sleep", status: "succeeded" },
      { name: "flaky", kind: "step", status: "succeeded" },
      { name: "nap-2", kind: "sleep", status: "succeeded" },
    ]);
  });

  it("a duplicate name, a result that does not round-trip and a bad wait timeout are typed errors, and nothing is recorded", async () => {
    const seen: unknown[] = [];
    const [node] = await startNodes(schema, 1, (n) =>
      n.register(
        "misuse",
        async (p: { what: string }, ctx) => {
          try {
            if (p.what === "dup") {
              await ctx.step("a", () => 1);
              await ctx.step("a", () => 2);
            } else if (p.what === "wait") {
              // A bad timeout on either wait: the first is caught here, the second reached and caught too.
              await ctx.waitForSignal("w1", { timeoutMs: 0 }).catch((e: unknown) => seen.push(e));
              await ctx.waitFor("w2", [], { timeoutMs: Number.NaN });
            } else {
              await ctx.step("when", () => new Date());
            }
          } catch (e) {
            seen.push(e);
          }
          return "ok";
        },
        { maxAttempts: 1 },
      ),
    );
    nodes = [node!];
    const dup = await node!.enqueue("misuse", { what: "dup" });
    const bad = await node!.enqueue("misuse", { what: "date" });
    const wait = await node!.enqueue("misuse", { what: "wait" });
    await node!.waitFor(dup, { timeoutMs: 10_000 });
    await node!.waitFor(bad, { timeoutMs: 10_000 });
    await node!.waitFor(wait, { timeoutMs: 10_000 });
    const codes = seen.map((e) => (e instanceof DurableStepError ? e.code : String(e))).sort();
    expect(codes).toEqual(["DUPLICATE_STEP", "INVALID_STEP", "INVALID_STEP", "STEP_RESULT_INVALID"]);
    expect(await steps(bad.id)).toEqual([]);
    expect(await steps(wait.id)).toEqual([]);
    expect((await steps(dup.id)).map((s) => s.name)).toEqual(["a"]);
  });

  it("keeps a named signal sent before the wait, and records a timeout as the wait's answer", async () => {
    const answers: SignalDelivery[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const [node] = await startNodes(schema, 1, (n) =>
      n.register("approve", async (p: { gate: boolean; timeoutMs?: number }, ctx) => {
        if (p.gate) await ctx.step("before", () => gate.then(() => "ready"));
        const a = await ctx.waitForSignal("approval", p.timeoutMs ? { timeoutMs: p.timeoutMs } : {});
        answers.push(a);
        return a.timedOut ? "timeout" : a.payload;
      }),
    );
    nodes = [node!];
    const early = await node!.enqueue("approve", { gate: true });
    // The job is running its first step: a signal now is early, and kept.
    const started = jobEvent(node!.events, "job:started");
    await started.for(early.id);
    expect(await node!.signal(early.id, { ok: 1 }, { name: "approval" })).toEqual({
      jobId: early.id,
      status: "STORED",
    });
    release();
    expect((await node!.waitFor(early, { timeoutMs: 10_000 })).result).toEqual({ ok: 1 });

    const late = await node!.enqueue("approve", { gate: false, timeoutMs: 200 });
    expect((await node!.waitFor(late, { timeoutMs: 10_000 })).result).toBe("timeout");
    expect(answers.map((a) => a.timedOut)).toEqual([false, true]);
  });

  it("spawns children once and awaits them; a failed child is a typed error with its id and status", async () => {
    const spawns = counter();
    const [node] = await startNodes(schema, 1, (n) => {
      n.register(
        "child",
        async (p: { n: number }) => {
          if (p.n < 0) throw new Error(`bad ${p.n}`);
          return p.n * 10;
        },
        { maxAttempts: 1 },
      );
      n.register("parent", async (p: { ns: number[] }, ctx) => {
        const kids = [];
        for (const k of p.ns) {
          kids.push(await ctx.spawn(`kid-${k}`, "child", { n: k }));
          spawns.hit(`kid-${k}`);
        }
        try {
          return await ctx.waitFor<number>("kids", kids);
        } catch (e) {
          if (e instanceof ChildJobFailedError)
            return { failed: e.childId, status: e.status, error: e.childError };
          throw e;
        }
      });
    });
    nodes = [node!];
    const ok = await node!.enqueue("parent", { ns: [1, 2, 3] });
    expect((await node!.waitFor(ok, { timeoutMs: 20_000 })).result).toEqual([10, 20, 30]);
    const kids = (await steps(ok.id)).filter((s) => s.kind === "spawn");
    expect(kids).toHaveLength(3);
    const children = await pool.query(
      `SELECT count(*)::int AS n FROM "${schema}".scheduler_job_all WHERE type = 'child'`,
    );
    expect(children.rows[0].n).toBe(3);

    const bad = await node!.enqueue("parent", { ns: [4, -1] });
    const result = (await node!.waitFor(bad, { timeoutMs: 20_000 })).result as {
      failed: string;
      status: string;
      error: string;
    };
    expect(result.status).toBe("DEAD");
    expect(result.error).toBe("bad -1");
    const failedChild = await node!.getJob(result.failed);
    expect(failedChild?.payload).toEqual({ n: -1 });
  });

  it("dlq.retry keeps the recorded steps by default, and discards them with { steps: 'discard' }", async () => {
    const c = counter();
    let broken = true;
    const [node] = await startNodes(schema, 1, (n) =>
      n.register(
        "fragile",
        async (_p: unknown, ctx) => {
          await ctx.step("first", () => {
            c.hit("first");
          });
          await ctx.step("second", () => {
            c.hit("second");
            if (broken) throw new Error("broken");
          });
        },
        { maxAttempts: 1 },
      ),
    );
    nodes = [node!];
    const kept = await node!.enqueue("fragile", {});
    const dropped = await node!.enqueue("fragile", {});
    expect((await node!.waitFor(kept, { timeoutMs: 10_000 })).status).toBe("DEAD");
    expect((await node!.waitFor(dropped, { timeoutMs: 10_000 })).status).toBe("DEAD");
    expect(c.runs.get("first")).toBe(2);
    broken = false;
    await node!.dlq.retry(kept.id);
    expect((await node!.waitFor(kept, { timeoutMs: 10_000 })).status).toBe("SUCCEEDED");
    expect(c.runs.get("first")).toBe(2); // kept: not run again
    await node!.dlq.retry(dropped.id, { steps: "discard" });
    expect((await node!.waitFor(dropped, { timeoutMs: 10_000 })).status).toBe("SUCCEEDED");
    expect(c.runs.get("first")).toBe(3); // discarded: run again
    await expect(node!.dlq.retry(kept.id, { steps: "nope" as "keep" })).rejects.toMatchObject({
      code: "INVALID_OPTION",
    });
  });

  it("cancels a parked job", async () => {
    const [node] = await startNodes(schema, 1, (n) =>
      n.register("sleeper", async (_p: unknown, ctx) => {
        await ctx.sleep("long", 3_600_000);
      }),
    );
    nodes = [node!];
    const waiting = jobEvent(node!.events, "job:waiting");
    const job = await node!.enqueue("sleeper", {});
    const parked = await waiting.for(job.id);
    expect(parked.durable).toEqual({ step: "long", reason: "sleep" });
    expect((await node!.getJob(job.id))?.status).toBe("WAITING");
    const why = await node!.explain(job.id);
    const text = why.reasons.map((r) => describeReason(r, new Date())).join("; ");
    expect(text).toMatch(/^sleeping until \d{4}-.*Z \(step 'long'\)/);
    await node!.cancel(job.id);
    expect((await node!.getJob(job.id))?.status).toBe("CANCELED");
  });
});
