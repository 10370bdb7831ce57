import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { createPawl, ValidationError, type Pawl } from "../../../src/index.js";
import { ClassicClaimer } from "../../../src/store/claim/claimer.js";
import { CursorClaimer } from "../../../src/store/claim/claim-cursor.js";
import { KeyedClaimer } from "../../../src/store/claim/keyed-claimer.js";
import type { Claimer } from "../../../src/store/claim/claimer.js";

/** The node's unkeyed claimer, inside the keyed claim's wrapper (concurrency keys, issue 27). */
const unkeyed = (c: Claimer | undefined): Claimer | undefined => (c instanceof KeyedClaimer ? c.inner : c);
import { setupSchema, testPawl } from "../../helpers/pawl.js";
import { jobEvent } from "../../helpers/events.js";
import { databaseUrl } from "../../helpers/db.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let node: Pawl | undefined;

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("ccrt"));
});
afterAll(() => cleanup());
afterEach(async () => {
  await node?.close();
  node = undefined;
});

describe("claim cursors in the runtime", () => {
  it("are on by default; claimCursors: false restores the classic claimer", async () => {
    node = testPawl(schema, { claimCursorFullDiscoveryMaxMs: 45_000 });
    await node.start();
    expect(unkeyed(node.nodeRuntime?.claimer)).toBeInstanceOf(CursorClaimer);
    // The backoff cap reaches the claimer.
    expect(node.nodeRuntime?.claimer.describe()).toMatchObject({ fullDiscoveryMaxMs: 45_000 });
    await node.close();
    node = testPawl(schema, { claimCursors: false });
    node.register("classic", async () => "ok");
    await node.start();
    expect(unkeyed(node.nodeRuntime?.claimer)).toBeInstanceOf(ClassicClaimer);
    expect(node.nodeRuntime?.claimer.describe()).toMatchObject({ kind: "classic" });
    const jobSucceeded = jobEvent(node.events, "job:succeeded");
    const job = await node.enqueue("classic", {});
    await jobSucceeded.for(job.id);
  });

  it("validates its options (and reads PAWL_CLAIM_CURSORS)", () => {
    const make = (config: Record<string, unknown>) => () =>
      createPawl({ connectionString: databaseUrl, schema, ...config });
    expect(make({ claimCursors: "yes" })).toThrowError(ValidationError);
    expect(make({ claimCursorDiscoveryMs: 0 })).toThrowError(ValidationError);
    expect(make({ claimCursorDiscoveryMs: 2000, claimCursorFullDiscoveryMs: 1000 })).toThrowError(
      /claimCursorFullDiscoveryMs/,
    );
    expect(make({ claimCursorFullDiscoveryMs: 10_000, claimCursorFullDiscoveryMaxMs: 9_999 })).toThrowError(
      /invalid claimCursorFullDiscoveryMaxMs 9999: use an integer from 10000/,
    );
    expect(make({ claimCursorFullDiscoveryMaxMs: 60_000.5 })).toThrowError(/claimCursorFullDiscoveryMaxMs/);
    expect(make({ claimCursorFullDiscoveryMaxMs: "60000" })).toThrowError(ValidationError);
    const ok = createPawl({ connectionString: databaseUrl, schema, claimCursorDiscoveryMs: 20_000 });
    expect([
      ok.config.claimCursors,
      ok.config.claimCursorDiscoveryMs,
      ok.config.claimCursorFullDiscoveryMs,
      ok.config.claimCursorFullDiscoveryMaxMs,
    ]).toEqual([true, 20_000, 20_000, 60_000]);
    void ok.close();
    // The cap's default follows a longer full cadence; an explicit cap equal to it turns the backoff off.
    const long = createPawl({ connectionString: databaseUrl, schema, claimCursorFullDiscoveryMs: 120_000 });
    expect(long.config.claimCursorFullDiscoveryMaxMs).toBe(120_000);
    void long.close();
    const flat = createPawl({
      connectionString: databaseUrl,
      schema,
      claimCursorFullDiscoveryMaxMs: 10_000,
    });
    expect(flat.config.claimCursorFullDiscoveryMaxMs).toBe(10_000);
    void flat.close();
    const saved = process.env.PAWL_CLAIM_CURSORS;
    try {
      process.env.PAWL_CLAIM_CURSORS = "false";
      const off = createPawl({ connectionString: databaseUrl, schema });
      expect(off.config.claimCursors).toBe(false);
      void off.close();
      process.env.PAWL_CLAIM_CURSORS = "maybe";
      expect(make({})).toThrowError(/PAWL_CLAIM_CURSORS/);
    } finally {
      if (saved === undefined) delete process.env.PAWL_CLAIM_CURSORS;
      else process.env.PAWL_CLAIM_CURSORS = saved;
    }
  });

  it("drains a mixed-priority backlog (with retries and arrivals during the drain) exactly once", async () => {
    await pool.query(`TRUNCATE "${schema}".scheduler_job_queue, "${schema}".scheduler_job_finished`);
    const levels = [0, 10, 20, 50, 100];
    const now = Date.now();
    node = testPawl(schema, { concurrency: 8 });
    const runs = new Map<string, number>();
    node.register(
      "mixed",
      async (payload: { n: number }, ctx) => {
        runs.set(ctx.jobId, (runs.get(ctx.jobId) ?? 0) + 1);
        if (payload.n % 10 === 0 && ctx.attempt === 1) throw new Error("fails once");
        return payload.n;
      },
      { retry: { baseMs: 1, factor: 1, maxMs: 1, jitter: 0 } },
    );
    // The backlog: 1,000 jobs over five levels, scheduled over the last minute (some a little in the future).
    await node.enqueueMany(
      Array.from({ length: 1000 }, (_, n) => ({
        type: "mixed",
        payload: { n },
        priority: levels[n % levels.length],
        runAt: new Date(now - 60_000 + ((n * 37) % 61_000)),
      })),
    );
    let succeeded = 0;
    const total = 1200;
    const done = new Promise<void>((resolve) =>
      node!.on("job:succeeded", () => {
        if (++succeeded === total) resolve();
      }),
    );
    await node.start();
    // Arrivals while it drains: local enqueues (wakeups), every level.
    for (let b = 0; b < 4; b++) {
      await node.enqueueMany(
        Array.from({ length: 50 }, (_, i) => ({
          type: "mixed",
          payload: { n: 1000 + b * 50 + i },
          priority: levels[(b + i) % levels.length],
        })),
      );
    }
    await done;
    const counts = await pool.query<{ status: string; n: number }>(
      `SELECT status, count(*)::int AS n FROM "${schema}".scheduler_job_all GROUP BY status`,
    );
    expect(counts.rows).toEqual([{ status: "SUCCEEDED", n: total }]);
    const attempts = await pool.query<{ attempts: number; n: number }>(
      `SELECT attempts, count(*)::int AS n FROM "${schema}".scheduler_job_all GROUP BY attempts ORDER BY attempts`,
    );
    expect(attempts.rows).toEqual([
      { attempts: 1, n: total - total / 10 },
      { attempts: 2, n: total / 10 },
    ]);
    expect(runs.size).toBe(total);
    expect([...runs.values()].filter((r) => r > 2)).toEqual([]);
    const described = node.nodeRuntime?.claimer.describe() as {
      counters: { passes: Record<string, number> };
    };
    expect(described.counters.passes.seek).toBeGreaterThan(0);
  }, 60_000);
});
