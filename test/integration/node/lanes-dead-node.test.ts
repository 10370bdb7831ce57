import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import type { Pawl, PawlConfig } from "../../../src/index.js";
import { closeAll, setupSchema, startNodes } from "../../helpers/pawl.js";
import { onAny } from "../../helpers/events.js";
import { tablesFor } from "../../../src/db/sql.js";

// A node the cluster declared dead hands its buffered jobs back, through the one path every lane shares
// (regression: a node with `queues` once handed back only its plain buffer, so its lane jobs ran twice).

let schema: string;
let cleanup: () => Promise<void>;
let pool: pg.Pool;
let nodes: Pawl[] = [];

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("lanedead"));
});
afterAll(() => cleanup());
afterEach(async () => {
  await closeAll(nodes);
  nodes = [];
});

const configs: [string, PawlConfig][] = [
  ["without queues (one catch-all lane)", { concurrency: 1, prefetch: 4 }],
  ["with queues (one lane per queue)", { queues: { hold: 1 }, prefetch: 4, concurrency: undefined }],
];

describe.each(configs)("a node declared dead, %s", (_name, config) => {
  it("hands every buffered job back once, and each then runs once", async () => {
    const t = tablesFor(schema);
    let unblock: () => void = () => {};
    const blocked = new Promise<void>((resolve) => {
      unblock = resolve;
    });
    const runs = new Map<string, number>();
    let first = true;
    nodes = await startNodes(
      schema,
      1,
      (node) =>
        node.register(
          "dead.hold",
          async (_p, ctx) => {
            runs.set(ctx.jobId, (runs.get(ctx.jobId) ?? 0) + 1);
            // The first job holds the only slot, so the others wait in the buffer.
            if (first) {
              first = false;
              await blocked;
            }
          },
          { queue: "hold" },
        ),
      config,
    );
    const [n] = nodes as [Pawl];
    const started = onAny(nodes, "job:started", () => true);
    const claimedMore = onAny(nodes, "claim", (e) => e.jobs.length > 1);
    const ids = (
      await n.enqueueMany(Array.from({ length: 5 }, () => ({ type: "dead.hold", queue: "hold" })))
    ).map((j) => j.id);
    try {
      await Promise.all([started, claimedMore]);
      const buffered = n.nodeRuntime?.buffered ?? 0;
      expect(buffered).toBeGreaterThan(0);
      const running = (
        await pool.query<{ id: string }>(`SELECT id FROM ${t.all} WHERE status = 'RUNNING' ORDER BY id`)
      ).rows.map((r) => r.id);
      const waiting = running.filter((id) => !runs.has(id));
      expect(waiting).toHaveLength(buffered);

      // What the cluster's heartbeat reports when the others declared this node dead.
      n.events.emit("cluster:heartbeat", {
        nodeId: n.nodeId,
        heartbeatAt: new Date(),
        startedAt: new Date(),
        lagMs: 0,
        durationMs: 0,
        nextDelayMs: 1000,
        wasDeclaredDead: true,
      });
      expect(n.nodeRuntime?.buffered).toBe(0);
      // Nothing is left to hand back a second time.
      expect(n.nodeRuntime?.dropBuffered("again")).toBe(0);

      // Once the slot frees, every job runs exactly once: the handed-back ones after being claimed again.
      const allDone = Promise.all(ids.map((id) => n.events.next("job:succeeded", (e) => e.job.id === id)));
      unblock();
      await allDone;
      expect(ids.map((id) => runs.get(id))).toEqual(ids.map(() => 1));
      const rows = await pool.query<{ id: string; status: string; attempts: number }>(
        `SELECT id, status, attempts FROM ${t.all} WHERE id = ANY($1::bigint[]) ORDER BY id`,
        [ids],
      );
      // A hand-back does not count the attempt: each job used exactly one.
      expect(rows.rows.map((r) => [r.status, r.attempts])).toEqual(ids.map(() => ["SUCCEEDED", 1]));
    } finally {
      unblock();
      await pool.query(`DELETE FROM ${t.jobs} WHERE id = ANY($1::bigint[])`, [ids]);
      await pool.query(`DELETE FROM ${t.finished} WHERE id = ANY($1::bigint[])`, [ids]);
    }
  });
});
