/**
 * `pawl nodes`, `pawl stats` and `pawl schedules` through the CLI's main(), as test/integration/cli/cli.test.ts
 * runs it, against a schema whose node rows, leases, jobs and schedules this file writes itself.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import type { Pawl } from "../../../src/index.js";
import type { NodeInfo } from "../../../src/store/cluster/node-sql.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";
import { runCliOn } from "../../helpers/cli.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let pawl: Pawl;

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("clicl"));
  pawl = testPawl(schema);
});
afterAll(async () => {
  await pawl.close();
  await cleanup();
});

const info = (types: string[]): NodeInfo => ({
  version: "test",
  host: "h",
  pid: 1,
  concurrency: 8,
  coordinator: "none",
  instance: "i1",
  registry: {
    types: types.map((type) => ({ type, queue: null, service: null, resource: null, timeoutMs: null })),
    queues: null,
    concurrency: 8,
    busy: 3,
    breakers: [],
    resources: {},
    defaultTimeoutMs: 1_800_000,
  },
});

describe("pawl nodes", () => {
  it("lists each node's state, heartbeat age and types, then the leases", async () => {
    const dbNow = await pawl.store.databaseTime();
    await pawl.store.writeHeartbeat("node-live", info(["mail.send", "report.build"]));
    await pawl.store.writeHeartbeat("node-gone", info(["old.type"]), new Date(dbNow.getTime() - 3_600_000));
    await pawl.store.acquireLock("orphan-sweep", "node-live", 60_000);

    const text = await runCliOn(schema, "nodes");
    expect(text.code).toBe(0);
    const lines = text.stdout.split("\n");
    const live = lines.find((l) => l.startsWith("node-live"));
    const gone = lines.find((l) => l.startsWith("node-gone"));
    expect(live).toMatch(/node-live\s+alive\s+\S+\s+\S+\s+3\/8\s+none\s+mail\.send,report\.build\s+test$/);
    expect(gone).toMatch(/node-gone\s+dead\s+(59m \d\ds|1h 00m)/); // an hour old by the database's clock
    expect(text.stdout).toMatch(/orphan-sweep\s+node-live\s+yes\s+\d+\.\ds/);
    expect(text.stdout).toContain("(2 nodes)");

    const { stdout, code } = await runCliOn(schema, "nodes", "--json");
    expect(code).toBe(0);
    const doc = JSON.parse(stdout) as {
      nodes: { nodeId: string; alive: boolean; heartbeatAgeMs: number; types: string[] }[];
      leases: { name: string; owner: string; held: boolean }[];
    };
    const byId = new Map(doc.nodes.map((n) => [n.nodeId, n]));
    expect(byId.get("node-live")).toMatchObject({ alive: true, types: ["mail.send", "report.build"] });
    expect(byId.get("node-live")!.heartbeatAgeMs).toBeLessThan(60_000);
    expect(byId.get("node-gone")).toMatchObject({ alive: false, types: ["old.type"] });
    expect(byId.get("node-gone")!.heartbeatAgeMs).toBeGreaterThanOrEqual(3_599_000);
    expect(doc.leases).toEqual([
      expect.objectContaining({ name: "orphan-sweep", owner: "node-live", held: true }),
    ]);
  });
});

describe("pawl stats", () => {
  it("counts by status and by status, queue and type, with the oldest due job's wait", async () => {
    const first = await pawl.enqueue("stats.a", {}, { queue: "q1" });
    await pawl.enqueue("stats.a", {}, { queue: "q1" });
    await pawl.enqueue("stats.b", {});
    await pawl.enqueue("stats.later", {}, { delayMs: 3_600_000 }); // PENDING, not due
    const canceled = await pawl.enqueue("stats.b", {});
    await pawl.cancel(canceled.id);
    // The oldest due job has waited a minute: its wait is measured from its scheduled time.
    await pool.query(
      `UPDATE "${schema}".scheduler_job_queue SET scheduled_time = now() - interval '1 minute' WHERE id = $1`,
      [first.id],
    );

    const { stdout, code } = await runCliOn(schema, "stats", "--json");
    expect(code).toBe(0);
    const o = JSON.parse(stdout) as {
      byStatus: Record<string, number>;
      groups: { status: string; queue: string; type: string; count: number }[];
      oldestPendingId: string | null;
      oldestPendingMs: number | null;
      lastHour: { canceled: number };
    };
    expect(o.byStatus.PENDING).toBe(4);
    expect(o.groups).toEqual(
      expect.arrayContaining([
        { status: "PENDING", queue: "q1", type: "stats.a", count: 2 },
        { status: "PENDING", queue: "default", type: "stats.b", count: 1 },
        { status: "PENDING", queue: "default", type: "stats.later", count: 1 },
      ]),
    );
    expect(o.oldestPendingId).toBe(first.id);
    expect(o.oldestPendingMs).toBeGreaterThanOrEqual(59_000);
    expect(o.lastHour.canceled).toBe(1);

    const text = await runCliOn(schema, "stats");
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^STATUS\s+JOBS\nPENDING\s+4$/m);
    expect(text.stdout).toContain(`oldest due PENDING job: ${first.id} (waiting 1m 0`);
    expect(text.stdout).toMatch(/PENDING\s+q1\s+stats\.a\s+2/);
    expect(text.stdout).toContain("last hour: 0 succeeded, 0 dead, 1 canceled");
  });

  it("refuses a bad --groups as a usage error", async () => {
    const r = await runCliOn(schema, "stats", "--groups", "0");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--groups takes an integer from 1 to 1000");
  });
});

describe("pawl schedules", () => {
  it("lists name, cron and next fire by name, a page at a time", async () => {
    await pawl.schedule("nightly-report", "0 3 * * *", { full: true }, { type: "report.build" });
    await pawl.schedule("hourly-sync", "0 * * * *", {}, { timezone: "Europe/Paris" });

    const text = await runCliOn(schema, "schedules");
    expect(text.code).toBe(0);
    const rows = text.stdout.split("\n");
    expect(rows[0]).toMatch(/^NAME\s+CRON\s+TIMEZONE\s+TYPE\s+NEXT FIRE\s+IN\s+LAST FIRED\s+ENABLED$/);
    expect(rows[1]).toMatch(/^hourly-sync\s+0 \* \* \* \*\s+Europe\/Paris\s+hourly-sync\s+\S+:00:00Z\s/);
    expect(rows[2]).toMatch(/^nightly-report\s+0 3 \* \* \*\s+UTC\s+report\.build\s+\S+T03:00:00Z\s/);

    const page = await runCliOn(schema, "schedules", "--limit", "1", "--json");
    const doc = JSON.parse(page.stdout) as { schedules: { name: string; nextFireAt: string }[] };
    expect(doc.schedules.map((s) => s.name)).toEqual(["hourly-sync"]);
    expect(new Date(doc.schedules[0]!.nextFireAt).getUTCMinutes()).toBe(0);
    const next = await runCliOn(schema, "schedules", "--after", "hourly-sync", "--json");
    expect(
      (JSON.parse(next.stdout) as { schedules: { name: string }[] }).schedules.map((s) => s.name),
    ).toEqual(["nightly-report"]);
  });
});
