/**
 * The console's store reads on a real database: the overview (grouped counts, their cap, the oldest due
 * PENDING job across priority levels, the last hour's outcomes), keyset pages of flows and schedules, and
 * a workflow's graph edges and layout.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { NonRetryableError, type Pawl } from "../../../src/index.js";
import { listFlowPage, readFlowGraph } from "../../../src/store/operator/flow-page-sql.js";
import { readOverview } from "../../../src/store/operator/overview-sql.js";
import { listSchedulePage } from "../../../src/store/operator/schedule-page-sql.js";
import { searchJobs } from "../../../src/store/operator/job-search-sql.js";
import { tablesFor, type Tables } from "../../../src/db/sql.js";
import { layoutFlowGraph } from "../../../observability/console/flow-graph.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";
import { jobEvent } from "../../helpers/events.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let t: Tables;
let client: Pawl;

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("cons"));
  t = tablesFor(schema);
  client = testPawl(schema);
});
afterAll(async () => {
  await client?.close();
  await cleanup?.();
});

describe("readOverview", () => {
  it("counts by status, queue and type, finds the oldest due job across priorities, and counts the last hour", async () => {
    // A node runs one success and one death, so the finished table has an hour's outcomes.
    const node = testPawl(schema);
    node.register("ok.run", async () => ({}));
    node.register("bad.run", async () => {
      throw new NonRetryableError("no");
    });
    await node.start();
    const jobSucceeded = jobEvent(node.events, "job:succeeded");
    const ok = await node.enqueue("ok.run", {});
    const jobDead = jobEvent(node.events, "job:dead");
    const bad = await node.enqueue("bad.run", {});
    await Promise.all([jobSucceeded.for(ok.id), jobDead.for(bad.id)]);
    await node.close();

    // Pending jobs nobody runs: three mail jobs in two queues, and one report at a higher priority.
    await client.enqueue("mail.send", {}, { queue: "a" });
    await client.enqueue("mail.send", {}, { queue: "a" });
    await client.enqueue("mail.send", {}, { queue: "b" });
    const urgent = await client.enqueue("report.build", {}, { priority: 90 });
    const old = await client.enqueue("mail.send", {}, { queue: "b", priority: 1 });
    // The oldest due job is at the lowest priority: a read of only the first level would miss it.
    await pool.query(`UPDATE ${t.jobs} SET scheduled_time = now() - interval '10 minutes' WHERE id = $1`, [
      old.id,
    ]);
    await pool.query(`UPDATE ${t.jobs} SET scheduled_time = now() - interval '1 minute' WHERE id = $1`, [
      urgent.id,
    ]);
    // A job due later is not "waiting": it must not count as the oldest.
    await client.enqueue("mail.send", {}, { queue: "b", runAt: new Date(Date.now() - 3_600_000) });
    await pool.query(
      `UPDATE ${t.jobs} SET scheduled_time = now() + interval '1 day' WHERE scheduled_time < now() - interval '30 minutes'`,
    );

    const o = await readOverview(pool, t);
    expect(o.capped).toEqual([]);
    expect(o.byStatus).toEqual({ PENDING: 6, DEAD: 1 });
    expect(o.groups).toContainEqual({ status: "PENDING", queue: "a", type: "mail.send", count: 2 });
    expect(o.groups).toContainEqual({ status: "PENDING", queue: "b", type: "mail.send", count: 3 });
    expect(o.groups).toContainEqual({ status: "DEAD", queue: "default", type: "bad.run", count: 1 });
    expect(o.groups[0]).toMatchObject({ count: 3 }); // largest first
    expect(o.oldestPendingId).toBe(old.id);
    expect(o.oldestPendingMs).toBeGreaterThanOrEqual(590_000);
    expect(o.oldestPendingMs).toBeLessThan(700_000);
    expect(o.lastHour).toEqual({ succeeded: 1, dead: 1, canceled: 0 });

    // Capped: at most two rows of each status read, so PENDING's count is a lower bound and says so;
    // DEAD (one row) is exact; two groups at most.
    const capped = await readOverview(pool, t, { scanCap: 2, maxGroups: 2 });
    expect(capped.capped).toEqual(["PENDING"]);
    expect(capped.byStatus).toEqual({ PENDING: 2, DEAD: 1 });
    expect(capped.groups.length).toBeLessThanOrEqual(2);
  });
});

describe("flows and schedules", () => {
  it("pages flows by id and reads a workflow's edges, laid out by longest path", async () => {
    await client.chain([{ type: "x.step" }, { type: "x.step" }]);
    await client.batch({ type: "x.child", items: [{}, {}] });
    const wf = await client.workflow({
      jobs: [
        { name: "A", type: "extract" },
        { name: "B", type: "transform", dependsOn: ["A"] },
        { name: "C", type: "enrich", dependsOn: ["A"] },
        { name: "D", type: "load", dependsOn: ["B", "C", "A"] },
      ],
    });
    const first = await listFlowPage(pool, t, { limit: 2 });
    expect(first.map((f) => f.id)).toEqual([wf.flowId, String(Number(wf.flowId) - 1)]);
    const second = await listFlowPage(pool, t, { limit: 2, beforeId: first[1]!.id });
    expect(second.map((f) => f.kind)).toEqual(["chain"]);
    expect((await listFlowPage(pool, t, { kind: "workflow" })).map((f) => f.id)).toEqual([wf.flowId]);

    const graph = await readFlowGraph(pool, t, wf.flowId);
    const byStep = Object.fromEntries(graph.map((m) => [m.step, m]));
    expect(byStep.A?.next.sort()).toEqual([byStep.B!.id, byStep.C!.id, byStep.D!.id].sort());
    expect(byStep.D?.next).toEqual([]);
    expect(byStep.A?.status).toBe("PENDING");
    expect(byStep.D?.status).toBe("WAITING");

    // Waiting members are counted through the flow index: the chain's second step, and B, C and D.
    expect((await readOverview(pool, t)).byStatus.WAITING).toBe(4);

    // Paged after an id, in id order (a batch's members are shown a page at a time).
    const page2 = await readFlowGraph(pool, t, wf.flowId, 2, byStep.B!.id);
    expect(page2.map((m) => m.step)).toEqual(["C", "D"]);

    const layout = layoutFlowGraph(graph);
    const layerOf = Object.fromEntries(layout.placed.map((p) => [p.member.step, p.layer]));
    // D depends on A directly too, but sits after B and C: its longest path, not its shortest.
    expect(layerOf).toEqual({ A: 0, B: 1, C: 1, D: 2 });
    expect(layout.edges).toHaveLength(5);
    expect(layout.rows).toBe(2);
  });

  it("pages schedules by name", async () => {
    for (const name of ["nightly", "hourly", "weekly"]) await client.schedule(name, "0 3 * * *");
    const first = await listSchedulePage(pool, t, { limit: 2 });
    expect(first.map((s) => s.name)).toEqual(["hourly", "nightly"]);
    expect(first[0]!.nextFireAt).toBeInstanceOf(Date);
    expect(first[0]!.nextFireAt.getTime()).toBeGreaterThan(Date.now() - 60_000);
    const next = await listSchedulePage(pool, t, { limit: 2, afterName: "nightly" });
    expect(next.map((s) => s.name)).toEqual(["weekly"]);
  });
});

describe("searchJobs", () => {
  it("finds text in payloads, newest first, within a bounded window that the next page continues", async () => {
    const type = "search.doc";
    // A finished job is found too (the view of both tables).
    const node = testPawl(schema);
    node.register("search.done", async () => ({}));
    await node.start();
    const jobSucceeded = jobEvent(node.events, "job:succeeded");
    const done = await node.enqueue("search.done", { note: "acme, finished" });
    await jobSucceeded.for(done.id);
    await node.close();
    // Ids from 996 on: the 12 cross 999 -> 1000, so an order by the id's text ("999" > "1000") shows.
    await pool.query(`SELECT setval(pg_get_serial_sequence('${t.jobs}', 'id'), 995)`);
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) {
      const payload = i % 3 === 0 ? { note: `Invoice ${i} for ACME` } : { note: `receipt ${i}`, pct: "100%" };
      ids.push((await client.enqueue(type, payload)).id);
    }

    const all = await searchJobs(pool, t, { text: "acme", type });
    expect(all.jobs.map((j) => j.id)).toEqual([ids[9], ids[6], ids[3], ids[0]]);
    expect(all.next).toBeNull();
    expect(all.scanned).toBeGreaterThan(13); // every job of the table, whatever its type
    expect((await searchJobs(pool, t, { text: "ACME", type: "search.done" })).jobs.map((j) => j.id)).toEqual([
      done.id,
    ]);

    // A window of 5 rows reads the newest 5, ids[11]..ids[7]: one hit; the next page goes on below ids[7].
    const first = await searchJobs(pool, t, { text: "acme", type, scan: 5 });
    expect(first).toMatchObject({ scanned: 5, next: ids[7] });
    expect(first.jobs.map((j) => j.id)).toEqual([ids[9]]);
    const second = await searchJobs(pool, t, { text: "acme", type, scan: 5, beforeId: first.next! });
    expect(second.jobs.map((j) => j.id)).toEqual([ids[6], ids[3]]);
    // A full page continues below its last hit.
    const full = await searchJobs(pool, t, { text: "acme", type, limit: 2 });
    expect(full.jobs.map((j) => j.id)).toEqual([ids[9], ids[6]]);
    expect(full.next).toBe(ids[6]);

    // % and _ are plain characters; bad text is refused before any read.
    expect((await searchJobs(pool, t, { text: "0%", type })).jobs).toHaveLength(8);
    expect((await searchJobs(pool, t, { text: "%%", type })).jobs).toHaveLength(0);
    for (const text of ["", "x".repeat(201), "a\0b"]) {
      await expect(searchJobs(pool, t, { text, type })).rejects.toMatchObject({ code: "INVALID_OPTION" });
    }
  });
});
