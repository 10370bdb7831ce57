/**
 * Concurrency keys on recurring schedules (issue 27, migration 0014): a schedule stores its key and limit,
 * its fired children carry them (the limit of the children's type on the firing node as the default),
 * re-registering without them clears them, and bad keys and limits are refused before anything is written.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { ValidationError, type Pawl } from "../../../src/index.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";
import { badConcurrency } from "../../helpers/concurrency.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let node: Pawl;

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("reckey"));
  // A started node fires through its own scheduler (runOnce below, at the schedule's next fire, a
  // simulated database time), with the type defaults of its registry: "rk.typed" has a default limit. The
  // children are scheduled at that fire time, in the future, so the node does not run them before the
  // test reads their rows.
  node = testPawl(schema, { nodeId: "rk-node" });
  node.register("rk.typed", async () => {}, { concurrencyLimit: 3 });
  await node.start();
});
afterAll(async () => {
  await node.close();
  await cleanup();
});
afterEach(async () => {
  await pool.query(
    `TRUNCATE "${schema}".scheduler_job_queue, "${schema}".scheduler_job_finished, "${schema}".scheduler_recurring, "${schema}".scheduler_lock`,
  );
});

/** The children of schedule `name` as stored: key and limit, oldest fire first. */
async function children(name: string): Promise<{ key: string | null; limit: number | null }[]> {
  const { rows } = await pool.query<{ key: string | null; limit: number | null }>(
    `SELECT concurrency_key AS key, concurrency_limit AS limit FROM "${schema}".scheduler_job_all
     WHERE unique_key LIKE $1 ORDER BY scheduled_time`,
    [`recurring:${name}:%`],
  );
  return rows;
}

/**
 * Fires schedule `name` once, at its stored next fire. Through fireBatch, without the lease: the node's own
 * loop, woken by schedule(), may hold the lease at that moment (it finds nothing due in real time).
 */
async function fire(name: string): Promise<void> {
  const s = (await node.listSchedules()).find((x) => x.name === name)!;
  const r = await node.clusterServices!.recurring.fireBatch(new Date(s.nextFireAt.getTime() + 50));
  expect(r.failed).toEqual([]);
  expect(r.fired.map((f) => f.name)).toContain(name);
}

describe("schedules carry a concurrency key", () => {
  it("stores the key and limit, lists them, and the fired child carries them", async () => {
    const s = await node.schedule(
      "rk-own",
      "0 3 * * *",
      { report: 1 },
      { type: "rk.plain", concurrencyKey: "tenant-7", concurrencyLimit: 2 },
    );
    expect(s).toMatchObject({ concurrencyKey: "tenant-7", concurrencyLimit: 2 });
    expect((await node.listSchedules())[0]).toMatchObject({
      concurrencyKey: "tenant-7",
      concurrencyLimit: 2,
    });
    // The console and CLI read a page of schedules through the operator reads: the same columns.
    expect((await node.store.operator.schedules())[0]).toMatchObject({
      concurrencyKey: "tenant-7",
      concurrencyLimit: 2,
    });
    await fire("rk-own");
    expect(await children("rk-own")).toEqual([{ key: "tenant-7", limit: 2 }]);
  });

  it("a key without a limit: the child takes its type's limit on the node that fires, stored as none", async () => {
    const s = await node.schedule("rk-default", "0 3 * * *", {}, { type: "rk.typed", concurrencyKey: "t-8" });
    // The schedule keeps no limit of its own, so a later registration of the type decides at each fire.
    expect(s).toMatchObject({ concurrencyKey: "t-8", concurrencyLimit: null });
    await fire("rk-default");
    expect(await children("rk-default")).toEqual([{ key: "t-8", limit: 3 }]);
  });

  it("no key: children without one; re-registering without the key clears it", async () => {
    await node.schedule("rk-none", "0 3 * * *", {}, { type: "rk.typed" });
    await fire("rk-none");
    await node.schedule("rk-cleared", "0 3 * * *", {}, { concurrencyKey: "t-9", concurrencyLimit: 4 });
    const cleared = await node.schedule("rk-cleared", "0 3 * * *", {}, {});
    expect(cleared).toMatchObject({ concurrencyKey: null, concurrencyLimit: null });
    await fire("rk-cleared");
    expect(await children("rk-none")).toEqual([{ key: null, limit: null }]);
    expect(await children("rk-cleared")).toEqual([{ key: null, limit: null }]);
  });

  it.each(badConcurrency)(
    "refuses $name with INVALID_OPTION and writes nothing",
    async ({ options, message }) => {
      const error = await node
        .schedule("rk-bad", "* * * * *", {}, options as { concurrencyKey?: string })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).code).toBe("INVALID_OPTION");
      expect((error as Error).message).toMatch(message);
      expect(await node.listSchedules()).toEqual([]);
    },
  );

  it("a bad key replacing a good schedule leaves the stored one as it was", async () => {
    await node.schedule("rk-keep", "0 3 * * *", {}, { concurrencyKey: "t-1", concurrencyLimit: 2 });
    await expect(
      node.schedule("rk-keep", "0 3 * * *", {}, { concurrencyKey: "t-1", concurrencyLimit: 0 }),
    ).rejects.toMatchObject({ code: "INVALID_OPTION" });
    expect(await node.listSchedules()).toMatchObject([
      { name: "rk-keep", concurrencyKey: "t-1", concurrencyLimit: 2 },
    ]);
  });

  it("the table refuses a hand-written limit without a key", async () => {
    await node.schedule("rk-sql", "0 3 * * *");
    await expect(
      pool.query(`UPDATE "${schema}".scheduler_recurring SET concurrency_limit = 2 WHERE name = 'rk-sql'`),
    ).rejects.toThrow(/scheduler_recurring_limit_needs_key/);
  });
});
