/**
 * Heartbeats, clock skew and the cluster view against the real database.
 */
import { readFileSync } from "node:fs";
import { loadMigrations } from "../../../src/store/migrations/migrate.js";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { hostname } from "node:os";
import type pg from "pg";
import { ManualClock } from "../../../src/core/clock.js";
import type { Logger } from "../../../src/core/logger.js";
import type { Pawl } from "../../../src/index.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";
import { clusterNode, fixedLag } from "../../helpers/cluster.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
const ends: (() => Promise<void>)[] = [];

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("hb"));
});
afterAll(() => cleanup());
afterEach(async () => {
  for (const end of ends.splice(0).reverse()) await end();
});

async function nodeRow(nodeId: string) {
  const { rows } = await pool.query(
    `SELECT node_id, heartbeat_ts, started_at, node_info, now() AS db_now FROM "${schema}".scheduler_node WHERE node_id = $1`,
    [nodeId],
  );
  return rows[0] as
    { heartbeat_ts: Date; started_at: Date; node_info: Record<string, unknown>; db_now: Date } | undefined;
}

describe("heartbeat", () => {
  it("upserts the node row with database time and node info, keeping started_at across beats", async () => {
    const n = clusterNode(schema, "hb-a");
    ends.push(n.end);
    const first = await n.services.heartbeat.runOnce();
    const row1 = await nodeRow("hb-a");
    expect(row1?.node_info).toMatchObject({
      // The package's real version and the newest migration this release knows (issue 25).
      version: JSON.parse(readFileSync(new URL("../../../package.json", import.meta.url), "utf8")).version,
      schemaVersion: Math.max(...loadMigrations().map((m) => m.version)),
      host: hostname(),
      pid: process.pid,
      concurrency: 4,
      coordinator: "none",
      instance: n.services.info.instance,
    });
    expect(Math.abs(row1!.db_now.getTime() - row1!.heartbeat_ts.getTime())).toBeLessThan(5000);
    expect(first.heartbeatAt.getTime()).toBe(row1!.heartbeat_ts.getTime());

    const future = new Date(row1!.heartbeat_ts.getTime() + 60_000);
    const second = await n.services.heartbeat.runOnce(future);
    const row2 = await nodeRow("hb-a");
    expect(row2!.heartbeat_ts.getTime()).toBe(future.getTime());
    expect(row2!.started_at.getTime()).toBe(row1!.started_at.getTime());
    expect(second.startedAt.getTime()).toBe(first.startedAt.getTime());

    // A new run of the same node id (a new instance) starts afresh.
    const again = clusterNode(schema, "hb-a");
    ends.push(again.end);
    await again.services.heartbeat.runOnce(new Date(future.getTime() + 1000));
    const row3 = await nodeRow("hb-a");
    expect(row3!.started_at.getTime()).toBe(future.getTime() + 1000);
    expect(row3!.node_info.instance).toBe(again.services.info.instance);
  });

  it("beats sooner when the event loop lags", async () => {
    const lag = fixedLag(0);
    const n = clusterNode(schema, "hb-lag", { heartbeatIntervalMs: 5000 }, { lag });
    ends.push(n.end);
    const calm = await n.services.heartbeat.runOnce();
    lag.value = 4000;
    const busy = await n.services.heartbeat.runOnce();
    expect(calm.nextDelayMs).toBeGreaterThan(4000);
    expect(busy.lagMs).toBe(4000);
    expect(busy.nextDelayMs).toBeLessThanOrEqual(1000);
    expect(busy.nextDelayMs).toBeGreaterThanOrEqual(500);
  });

  it("tells a node it had been declared dead, and beating again revives it", async () => {
    const n = clusterNode(schema, "hb-zombie");
    ends.push(n.end);
    await n.services.heartbeat.runOnce();
    await pool.query(
      `UPDATE "${schema}".scheduler_node SET node_info = node_info || '{"deadAt": "2020-01-01T00:00:00Z"}' WHERE node_id = 'hb-zombie'`,
    );
    const beat = await n.services.heartbeat.runOnce();
    expect(beat.wasDeclaredDead).toBe(true);
    expect((await nodeRow("hb-zombie"))?.node_info.deadAt).toBeUndefined();
    expect((await n.services.heartbeat.runOnce()).wasDeclaredDead).toBe(false);
  });

  it("the loop keeps beating on its interval and tracks since when beats succeed", async () => {
    const node = testPawl(schema, { nodeId: "hb-loop", deadNodeThresholdMs: 600, heartbeatIntervalMs: 100 });
    ends.push(() => node.close());
    let beats = 0;
    const three = new Promise<void>((resolve) =>
      node.on("cluster:heartbeat", () => {
        if (++beats === 3) resolve();
      }),
    );
    await node.start();
    await three;
    const services = node.clusterServices!;
    expect(services.heartbeat.healthySince).not.toBeNull();
    const view = await node.cluster();
    expect(view.nodes.find((x) => x.nodeId === "hb-loop")).toMatchObject({ alive: true });
  });
});

describe("clock skew", () => {
  it("measures the local clock against the database's and warns above the limit", async () => {
    const warnings: string[] = [];
    const logger: Logger = {
      debug: () => {},
      info: () => {},
      warn: (m) => warnings.push(m),
      error: () => {},
      child: () => logger,
    };
    const clock = new ManualClock(Date.now() - 5000); // 5 s behind the database
    const n = clusterNode(schema, "skewed", {}, { clock, logger });
    ends.push(n.end);
    const event = n.events.next("cluster:clock-skew");
    const reading = await n.services.skew.runOnce();
    expect(reading.skewMs).toBeGreaterThan(4000);
    expect(reading.skewMs).toBeLessThan(6500);
    expect(reading.exceeded).toBe(true);
    expect(await event).toMatchObject({ exceeded: true });
    expect(warnings).toEqual([expect.stringContaining("clock")]);
    expect(n.services.skew.reading).toBe(reading);
  });

  it("reports no skew for a synchronised clock, and exposes it in cluster()", async () => {
    const node: Pawl = testPawl(schema, { nodeId: "in-sync" });
    ends.push(() => node.close());
    await node.start();
    const view = await node.cluster();
    expect(view.clockSkew).not.toBeNull();
    expect(Math.abs(view.clockSkew!.skewMs)).toBeLessThan(1000);
    expect(view.clockSkew!.exceeded).toBe(false);
    expect(view.nodeId).toBe("in-sync");
    expect(Array.isArray(view.leases)).toBe(true);
  });
});

describe("cluster()", () => {
  it("lists nodes with their heartbeat age and liveness by the database's clock, and lease holders", async () => {
    const a = clusterNode(schema, "view-a", { deadNodeThresholdMs: 3000 });
    ends.push(a.end);
    await a.services.heartbeat.runOnce();
    await pool.query(
      `INSERT INTO "${schema}".scheduler_node (node_id, heartbeat_ts, node_info) VALUES ('view-old', now() - interval '1 minute', '{}')`,
    );
    const lease = await a.services.leases.acquire("test:view");
    const view = await a.services.view();
    expect(view.nodes.find((x) => x.nodeId === "view-a")).toMatchObject({ alive: true });
    const old = view.nodes.find((x) => x.nodeId === "view-old");
    expect(old).toMatchObject({ alive: false });
    expect(old!.ageMs).toBeGreaterThanOrEqual(59_000);
    expect(view.leases.find((l) => l.name === "test:view")).toMatchObject({ owner: "view-a", held: true });
    await lease!.release();
  });
});
