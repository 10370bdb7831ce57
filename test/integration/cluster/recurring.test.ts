/**
 * Recurring jobs against the real database: registration (validation, upsert, list, unschedule), and
 * exactly one child per fire with three competing schedulers on a controlled clock.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { ValidationError, type Pawl } from "../../../src/index.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";
import { clusterNode } from "../../helpers/cluster.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
const ends: (() => Promise<void>)[] = [];
let client: Pawl;

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("rec"));
  client = testPawl(schema);
});
afterAll(async () => {
  await client.close();
  await cleanup();
});
afterEach(async () => {
  for (const end of ends.splice(0).reverse()) await end();
  await pool.query(
    `TRUNCATE "${schema}".scheduler_job_queue, "${schema}".scheduler_job_finished, "${schema}".scheduler_recurring, "${schema}".scheduler_lock`,
  );
});

const minute = 60_000;

async function children(name: string) {
  const { rows } = await pool.query<{
    id: string;
    unique_key: string;
    scheduled_time: Date;
    payload: unknown;
    priority: number;
  }>(
    `SELECT id, unique_key, scheduled_time, payload, priority FROM "${schema}".scheduler_job_all
     WHERE unique_key LIKE $1 ORDER BY scheduled_time`,
    [`recurring:${name}:%`],
  );
  return rows;
}

/** The start of the next whole minute of database time, plus `offsetMs`. */
async function nextMinute(offsetMs = 0): Promise<Date> {
  const { rows } = await pool.query<{ t: Date }>(
    "SELECT date_trunc('minute', now()) + interval '1 minute' AS t",
  );
  return new Date(rows[0]!.t.getTime() + offsetMs);
}

describe("schedule()", () => {
  it.each([
    ["61 * * * *", {}, /minute: 61/],
    ["not a cron", {}, /invalid cron expression/],
    ["0 0 30 2 *", {}, /never fires/],
    ["0 3 * * *", { timezone: "Mars/Olympus" }, /unknown time zone/],
  ])("rejects %s with INVALID_CRON and writes nothing", async (cron, options, message) => {
    const error = await client.schedule("bad", cron, {}, options).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).code).toBe("INVALID_CRON");
    expect((error as Error).message).toMatch(message);
    expect(await client.listSchedules()).toEqual([]);
  });

  it("rejects bad names, options and payloads before writing", async () => {
    await expect(client.schedule("has space", "* * * * *")).rejects.toMatchObject({ code: "INVALID_OPTION" });
    await expect(
      client.schedule("x", "* * * * *", {}, { missedFirePolicy: "all" as never }),
    ).rejects.toMatchObject({
      code: "INVALID_OPTION",
    });
    await expect(client.schedule("x", "* * * * *", {}, { every: 1 } as never)).rejects.toMatchObject({
      code: "UNKNOWN_OPTION",
    });
    await expect(client.schedule("x", "* * * * *", { n: 1n } as never)).rejects.toBeInstanceOf(
      ValidationError,
    );
    expect(await client.listSchedules()).toEqual([]);
  });

  it("registers, updates without moving the next fire, lists and unschedules", async () => {
    const s = await client.schedule(
      "nightly-report",
      "0 3 * * *",
      { format: "pdf" },
      { timezone: "Europe/Paris" },
    );
    expect(s).toMatchObject({
      name: "nightly-report",
      type: "nightly-report",
      cron: "0 3 * * *",
      timezone: "Europe/Paris",
      payload: { format: "pdf" },
      priority: null,
      missedFirePolicy: "catch-up-one",
      enabled: true,
      lastFiredAt: null,
    });
    // 03:00 in Paris is 01:00 or 02:00 UTC.
    expect([1, 2]).toContain(s.nextFireAt.getUTCHours());
    const again = await client.schedule(
      "nightly-report",
      "0 3 * * *",
      { format: "csv" },
      {
        timezone: "Europe/Paris",
        type: "report",
        priority: "high",
        missedFirePolicy: "skip",
      },
    );
    expect(again).toMatchObject({
      type: "report",
      payload: { format: "csv" },
      priority: 20,
      missedFirePolicy: "skip",
    });
    expect(again.nextFireAt).toEqual(s.nextFireAt);
    const moved = await client.schedule("nightly-report", "0 4 * * *", {}, { timezone: "Europe/Paris" });
    // One hour later in the daily cycle. Between 03:00 and 04:00 Paris time the 03:00 fire is tomorrow's
    // and the 04:00 fire today's, so the plain difference is -23 h then: compare modulo a day.
    const day = 86_400_000;
    const gap = moved.nextFireAt.getTime() - s.nextFireAt.getTime();
    expect(((gap % day) + day) % day).toBe(3_600_000);
    expect(moved.nextFireAt.getTime() - Date.now()).toBeGreaterThan(0);
    expect(moved.nextFireAt.getTime() - Date.now()).toBeLessThanOrEqual(day);
    expect((await client.listSchedules()).map((x) => x.name)).toEqual(["nightly-report"]);
    expect(await client.unschedule("nightly-report")).toBe(true);
    expect(await client.unschedule("nightly-report")).toBe(false);
    expect(await client.listSchedules()).toEqual([]);
  });
});

describe("firing", () => {
  it("three competing Pawl nodes create exactly one child per fire (controlled clock)", async () => {
    // Started nodes on pools of their own. Their own loops run on real time; the schedule is daily, so
    // only the controlled passes below (one simulated day apart) find it due.
    const nodes = ["s1", "s2", "s3"].map((nodeId) => testPawl(schema, { nodeId, maxConnections: 3 }));
    ends.push(() => Promise.all(nodes.map((n) => n.close())).then(() => {}));
    await Promise.all(nodes.map((n) => n.start()));
    const s = await client.schedule("daily-report", "30 2 * * *", { report: true }, { priority: "high" });
    const base = s.nextFireAt; // the first fire
    const fired: string[] = [];
    for (const n of nodes) n.on("recurring:fired", (e) => fired.push(`${e.name}@${e.fireAt.toISOString()}`));
    const day = 24 * 60 * minute;
    for (let k = 0; k < 10; k++) {
      // Each simulated day, all three check at (nearly) the same database time.
      const now = base.getTime() + k * day + 50;
      const results = await Promise.all(
        nodes.map((n, i) => n.clusterServices!.recurring.runOnce(new Date(now + i))),
      );
      const total = results.reduce((sum, r) => sum + r.fired.length, 0);
      expect(total, `day ${k}`).toBe(1);
      expect(results.filter((r) => r.ran).length).toBeGreaterThanOrEqual(1);
    }
    const rows = await children("daily-report");
    expect(rows).toHaveLength(10);
    expect(new Set(rows.map((r) => r.unique_key)).size).toBe(10);
    expect(rows.map((r) => r.scheduled_time.getTime() - base.getTime())).toEqual(
      Array.from({ length: 10 }, (_, k) => k * day),
    );
    expect(rows[0]).toMatchObject({ payload: { report: true }, priority: 20 });
    expect(rows[0]!.unique_key).toBe(`recurring:daily-report:${base.toISOString()}`);
    expect(fired).toHaveLength(10);
  });

  it("an every-minute schedule, three schedulers, ten minutes: ten children", async () => {
    const nodes = ["m-1", "m-2", "m-3"].map((id) => clusterNode(schema, id));
    ends.push(...nodes.map((n) => n.end));
    await client.schedule("every-minute", "* * * * *");
    const base = await nextMinute();
    for (let k = 0; k < 10; k++) {
      const now = base.getTime() + k * minute + 50;
      const results = await Promise.all(nodes.map((n, i) => n.services.recurring.runOnce(new Date(now + i))));
      expect(
        results.reduce((sum, r) => sum + r.fired.length, 0),
        `minute ${k}`,
      ).toBe(1);
    }
    expect(await children("every-minute")).toHaveLength(10);
  });

  it("the row locks alone keep fires unique, without the lease", async () => {
    const nodes = ["u1", "u2", "u3"].map((id) => clusterNode(schema, id));
    ends.push(...nodes.map((n) => n.end));
    for (let i = 0; i < 20; i++) await client.schedule(`s-${i}`, "* * * * *");
    const base = await nextMinute();
    for (let k = 0; k < 3; k++) {
      const now = new Date(base.getTime() + k * minute + 10);
      const batches = await Promise.all(nodes.map((n) => n.services.recurring.fireBatch(now)));
      expect(batches.reduce((sum, b) => sum + b.fired.length, 0)).toBe(20);
    }
    const { rows } = await pool.query(
      `SELECT unique_key, count(*)::int AS n FROM "${schema}".scheduler_job_all GROUP BY unique_key HAVING count(*) > 1`,
    );
    expect(rows).toEqual([]);
    const { rows: total } = await pool.query(`SELECT count(*)::int AS n FROM "${schema}".scheduler_job_all`);
    expect(total[0].n).toBe(60);
  });

  it("a pass with nothing due takes no lease (a lease is two writes); a due one takes it and fires", async () => {
    const n = clusterNode(schema, "idle-check");
    ends.push(n.end);
    await client.schedule("quiet", "* * * * *");
    const base = await nextMinute();
    const early = await n.services.recurring.runOnce(new Date(base.getTime() - 20_000));
    expect(early).toMatchObject({ ran: false, fired: [], nextDueInMs: 20_000 });
    const due = await n.services.recurring.runOnce(new Date(base.getTime() + 100));
    expect(due.ran).toBe(true);
    expect(due.fired.map((f) => f.name)).toEqual(["quiet"]);
  });

  it("missed fires: catch-up-one enqueues one child, skip drops them", async () => {
    const n = clusterNode(schema, "m1");
    ends.push(n.end);
    await client.schedule("catch-up", "* * * * *");
    await client.schedule("skipper", "* * * * *", {}, { missedFirePolicy: "skip" });
    const base = await nextMinute();
    // Every node was down for an hour and a half.
    const late = new Date(base.getTime() + 90 * minute + 30_000);
    const r = await n.services.recurring.runOnce(late);
    expect(r.fired.map((f) => f.name)).toEqual(["catch-up"]);
    expect(r.fired[0]!.fireAt).toEqual(base);
    expect(r.skipped.map((s) => s.name)).toEqual(["skipper"]);
    const list = await client.listSchedules();
    for (const s of list) expect(s.nextFireAt).toEqual(new Date(base.getTime() + 91 * minute));
    // Back on time: both fire once at the next minute.
    const next = await n.services.recurring.runOnce(new Date(base.getTime() + 91 * minute + 100));
    expect(next.fired.map((f) => f.name).sort()).toEqual(["catch-up", "skipper"]);
    expect(next.nextDueInMs).toBe(minute - 100);
  });

  it("a started node fires due schedules and runs the children", async () => {
    const node = testPawl(schema, { nodeId: "runner", recurringCheckIntervalMs: 50 });
    ends.push(() => node.close());
    const ran: unknown[] = [];
    node.register("tick", async (payload) => {
      ran.push(payload);
    });
    await node.start();
    // A six-field expression: every second.
    const done = node.events.next("job:succeeded", (e) => e.job.type === "tick", 5000);
    await node.schedule("tick", "* * * * * *", { hello: "world" });
    await done;
    expect(ran[0]).toEqual({ hello: "world" });
    await node.unschedule("tick");
  });
});
