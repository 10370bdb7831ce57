/**
 * SUCCEEDED history in time partitions (migration 0016) against the real database: where a finished row
 * lands, how the history partitioner makes and drops partitions, that a previous release's writes and
 * pruner statement still work through the parent, and that the migration keeps the rows of an older
 * schema where they were.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { migrate, migrationScript } from "../../../src/store/migrations/migrate.js";
import { migrations } from "../../../src/store/migrations/migrations.generated.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";
import { clusterNode, insertFinished } from "../../helpers/cluster.js";
import { dropSchema, uniqueSchema } from "../../helpers/db.js";
import { HistoryPartitioner } from "../../../src/cluster/history-partitioner.js";
import { systemClock } from "../../../src/core/clock.js";
import { silentLogger } from "../../../src/core/logger.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
const ends: (() => Promise<void>)[] = [];

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("fparts"));
});
afterAll(() => cleanup());
afterEach(async () => {
  for (const end of ends.splice(0).reverse()) await end();
  // Drop every time partition between tests, through the function the nodes use.
  await pool.query(
    `SELECT "${schema}".pawl_finished_partition_drop(range_start) FROM "${schema}".scheduler_job_finished_partition`,
  );
  await pool.query(
    `TRUNCATE "${schema}".scheduler_job_queue, "${schema}".scheduler_job_finished, "${schema}".scheduler_lock`,
  );
});

const hour = 3_600_000;
const day = 24 * hour;

/** The partition each id's row is in. */
async function partitionsOf(ids: string[]): Promise<Record<string, string>> {
  const { rows } = await pool.query<{ id: string; part: string }>(
    `SELECT id::text, tableoid::regclass::text AS part FROM "${schema}".scheduler_job_finished
     WHERE id = ANY($1::bigint[])`,
    [ids],
  );
  return Object.fromEntries(
    rows.map((r) => [r.id, r.part.replace(`"${schema}".`, "").replace(`${schema}.`, "")]),
  );
}

async function partitionNames(): Promise<string[]> {
  const { rows } = await pool.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent = $1::regclass ORDER BY 1`,
    [`"${schema}".scheduler_job_finished_succeeded`],
  );
  return rows.map((r) => r.name);
}

describe("time partitions of SUCCEEDED history", () => {
  it("a node makes them at start; SUCCEEDED rows land in them, DEAD rows in the rows partition", async () => {
    const node = testPawl(schema);
    ends.push(() => node.close());
    node.register("ok", async () => "done");
    node.register(
      "doomed",
      async () => {
        throw new Error("no");
      },
      { maxAttempts: 1 },
    );
    const made = node.events.next("history:done", (e) => e.created > 0, 20_000);
    await node.start();
    expect((await made).failed).toBe(0);

    const ok = await node.enqueue("ok", {});
    const dead = await node.enqueue("doomed", {});
    expect((await node.waitFor(ok, { timeoutMs: 20_000 })).status).toBe("SUCCEEDED");
    expect((await node.waitFor(dead, { timeoutMs: 20_000 })).status).toBe("DEAD");

    const parts = await partitionsOf([ok.id, dead.id]);
    expect(parts[ok.id]).toMatch(/^scheduler_job_finished_\d{8}t\d{6}$/);
    expect(parts[dead.id]).toBe("scheduler_job_finished_rows");
    expect(await node.getJob(ok.id)).toMatchObject({ status: "SUCCEEDED", result: "done" });
    expect((await node.listJobs({ type: "ok" })).map((j) => j.id)).toEqual([ok.id]);
    expect((await node.dlq.list()).map((j) => j.id)).toEqual([dead.id]);
  });

  it("completions under way while partitions are dropped and made again lose nothing and fail nothing", async () => {
    const node = testPawl(schema, { concurrency: 20 });
    ends.push(() => node.close());
    node.register("churn", async () => {});
    const errors: unknown[] = [];
    node.on("error", (e) => void errors.push(e));
    const succeeded: string[] = [];
    node.on("job:succeeded", ({ job }) => void succeeded.push(job.id));
    const made = node.events.next("history:done", (e) => e.created > 0, 20_000);
    await node.start();
    await made;
    const total = 3000;
    await node.enqueueMany(Array.from({ length: total }, () => ({ type: "churn" })));
    const history = node.clusterServices!.history;
    // Two days ahead, every partition is past retention: each pass drops the one the completions are
    // moving rows into and makes it again, the harshest interleaving the partitions can meet (a partition
    // really past retention receives no row at all).
    let passes = 0;
    while (succeeded.length < total) {
      await history.runOnce(new Date(Date.now() + 2 * day));
      passes++;
      if (passes > 5000) throw new Error(`${succeeded.length} of ${total} succeeded`);
    }
    expect(passes).toBeGreaterThan(1);
    expect(new Set(succeeded).size).toBe(total);
    expect(succeeded).toHaveLength(total);
    const live = await pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM "${schema}".scheduler_job_queue`,
    );
    expect(live.rows[0]!.n).toBe(0);
    expect(errors).toEqual([]);
  }, 60_000);

  it("without a partition covering now, a SUCCEEDED row goes to the rows partition", async () => {
    const n = clusterNode(schema, "no-parts");
    ends.push(n.end);
    const { rows } = await pool.query<{ id: string }>(
      `INSERT INTO "${schema}".scheduler_job_queue (type) VALUES ('t') RETURNING id::text`,
    );
    const id = rows[0]!.id;
    const claimed = await n.store.claim({
      nodeId: "n1",
      limit: 1,
      types: ["t"],
      boostIntervalMs: 0,
      withPayload: true,
    });
    expect(claimed.map((j) => j.id)).toEqual([id]);
    expect(await n.store.complete("n1", [{ id, resultJson: "1" }])).toEqual(new Set([id]));
    expect(await partitionsOf([id])).toEqual({ [id]: "scheduler_job_finished_rows" });
  });

  it("drops expired partitions whole, counts their rows, and keeps what the rows partition holds", async () => {
    const n = clusterNode(schema, "dropper");
    ends.push(n.end);
    const first = await n.services.history.runOnce();
    expect(first).toMatchObject({ ran: true, dropped: 0, failed: 0 });
    expect(first.created).toBeGreaterThan(0);
    const before = await partitionNames();
    expect(before).toContain("scheduler_job_finished_succeeded_default");
    expect(before.length).toBe(first.created + 1);

    // 25 SUCCEEDED rows in the partition covering now, as a completion puts them; 5 DEAD rows.
    await insertFinished(pool, schema, "SUCCEEDED", 25, 0, { timePartitioned: true });
    await insertFinished(pool, schema, "DEAD", 5, 0);
    const done = n.events.next("history:done", (e) => e.dropped > 0);

    // Two days later every partition made so far is past the day's retention.
    const later = await n.services.history.runOnce(new Date(Date.now() + 2 * day));
    expect(later).toMatchObject({ ran: true, dropped: first.created, droppedRows: 25, failed: 0 });
    expect(await done).toMatchObject({ dropped: first.created, droppedRows: 25 });
    const { rows } = await pool.query<{ status: string; n: number }>(
      `SELECT status, count(*)::int AS n FROM "${schema}".scheduler_job_finished GROUP BY status`,
    );
    expect(rows).toEqual([{ status: "DEAD", n: 5 }]);
    // The range covering the database's now is made again, empty.
    const { rows: listed } = await pool.query<{ covers: boolean }>(
      `SELECT bool_or(range_start <= now() AND now() < range_end) AS covers
       FROM "${schema}".scheduler_job_finished_partition`,
    );
    expect(listed[0]!.covers).toBe(true);
  });

  it("a make that fails is counted, logged once, and leaves completions on the row-by-row path", async () => {
    const n = clusterNode(schema, "refused");
    ends.push(n.end);
    const warnings: string[] = [];
    const logger = { ...silentLogger, warn: (m: string) => void warnings.push(m) };
    // The store as a role without EXECUTE on the functions sees it: the real list, a refused make.
    const refused = Object.assign(new Error("permission denied for function pawl_finished_partition_add"), {
      code: "42501",
    });
    const partitioner = new HistoryPartitioner({
      store: {
        listHistoryPartitions: () => n.store.listHistoryPartitions(),
        addHistoryPartition: () => Promise.reject(refused),
        dropHistoryPartition: (start) => n.store.dropHistoryPartition(start),
      },
      leases: n.services.leases,
      clock: systemClock,
      events: n.events,
      logger,
      succeededRetentionMs: day,
      intervalMs: 60_000,
    });
    const failed = n.events.next("history:done", (e) => e.failed > 0);
    expect(await partitioner.runOnce()).toMatchObject({ ran: true, created: 0, failed: 1 });
    expect(await failed).toMatchObject({ created: 0, failed: 1 });
    expect(await partitioner.runOnce()).toMatchObject({ ran: true, failed: 1 });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain("pawl grants");

    const { rows } = await pool.query<{ id: string }>(
      `INSERT INTO "${schema}".scheduler_job_queue (type) VALUES ('t') RETURNING id::text`,
    );
    const id = rows[0]!.id;
    await n.store.claim({ nodeId: "n1", limit: 1, types: ["t"], boostIntervalMs: 0, withPayload: true });
    expect(await n.store.complete("n1", [{ id, resultJson: "1" }])).toEqual(new Set([id]));
    expect(await partitionsOf([id])).toEqual({ [id]: "scheduler_job_finished_rows" });
  });

  it("another node holding the lease skips the pass", async () => {
    const a = clusterNode(schema, "a");
    const b = clusterNode(schema, "b");
    ends.push(a.end, b.end);
    const lease = await b.services.leases.acquire("pawl:history");
    expect((await a.services.history.runOnce()).ran).toBe(false);
    await lease!.release();
    expect((await a.services.history.runOnce()).ran).toBe(true);
  });

  it("a previous release's insert and pruner statement work through the parent", async () => {
    const n = clusterNode(schema, "old");
    ends.push(n.end);
    await n.services.history.runOnce();
    const s = `"${schema}"`;
    // The previous release's move names no time_partitioned: its rows go where they always went.
    const { rows: inserted } = await pool.query<{ id: string }>(
      `INSERT INTO ${s}.scheduler_job_finished (id, type, status, attempts, finished_at)
       VALUES (nextval(pg_get_serial_sequence('${s}.scheduler_job_queue', 'id')), 'prev', 'SUCCEEDED', 1, now())
       RETURNING id::text`,
    );
    expect(await partitionsOf([inserted[0]!.id])).toEqual({
      [inserted[0]!.id]: "scheduler_job_finished_rows",
    });
    await insertFinished(pool, schema, "SUCCEEDED", 30, 0, { timePartitioned: true });
    // The previous release's pruner statement (0005's, on the parent), a day and a half later.
    const oldPrune = `
      DELETE FROM ${s}.scheduler_job_finished
      WHERE id = ANY(ARRAY(
        SELECT id FROM ${s}.scheduler_job_finished
        WHERE status = 'SUCCEEDED' AND finished_at < $3::timestamptz - $1::bigint * interval '1 millisecond'
        ORDER BY finished_at LIMIT $2 FOR UPDATE SKIP LOCKED))`;
    const later = new Date(Date.now() + 1.5 * day);
    let deleted = 0;
    for (;;) {
      const r = await pool.query(oldPrune, [day, 20, later]);
      deleted += r.rowCount ?? 0;
      if ((r.rowCount ?? 0) < 20) break;
    }
    expect(deleted).toBe(31);
    const { rows } = await pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${s}.scheduler_job_finished`,
    );
    expect(rows[0]!.n).toBe(0);
  });

  it("the pruner deletes past-retention rows of the default partition too", async () => {
    const n = clusterNode(schema, "pruner", { pruneBatchSize: 10 });
    ends.push(n.end);
    await n.services.history.runOnce();
    // A finished_at moved back by hand leaves the time ranges: the row moves to the default.
    await insertFinished(pool, schema, "SUCCEEDED", 15, 0, { timePartitioned: true });
    await pool.query(
      `UPDATE "${schema}".scheduler_job_finished SET finished_at = now() - interval '3 days' WHERE time_partitioned`,
    );
    const { rows: where } = await pool.query<{ part: string }>(
      `SELECT DISTINCT tableoid::regclass::text AS part FROM "${schema}".scheduler_job_finished`,
    );
    expect(where.map((r) => r.part.split(".").at(-1))).toEqual(["scheduler_job_finished_succeeded_default"]);
    await insertFinished(pool, schema, "SUCCEEDED", 12, 2 * day);
    const r = await n.services.pruner.runOnce();
    expect(r).toMatchObject({ ran: true, succeeded: 27 });
  });
});

describe("migration 0016", () => {
  const old = uniqueSchema("fparts_mig");
  afterAll(() => dropSchema(pool, old));

  it("keeps an older schema's finished rows in place, readable, and pruned row by row", async () => {
    await pool.query(
      migrationScript(
        old,
        migrations.filter((m) => m.version <= 15),
      ),
    );
    const s = `"${old}"`;
    await pool.query(
      `INSERT INTO ${s}.scheduler_job_finished (id, type, status, attempts, finished_at)
       SELECT nextval(pg_get_serial_sequence('${s}.scheduler_job_queue', 'id')), 'kept',
              (ARRAY['SUCCEEDED', 'CANCELED', 'DEAD'])[1 + g % 3], 1, now() - g * interval '1 hour'
       FROM generate_series(1, 60) g`,
    );
    // A trigger a team added (change capture, say) keeps seeing every finished row, time partitions included.
    await pool.query(`
      CREATE TABLE ${s}.captured (job_id bigint);
      CREATE FUNCTION ${s}.capture() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN INSERT INTO ${s}.captured VALUES (NEW.id); RETURN NULL; END $$;
      CREATE TRIGGER capture AFTER INSERT ON ${s}.scheduler_job_finished
        FOR EACH ROW EXECUTE FUNCTION ${s}.capture();`);
    const before = await pool.query(`SELECT * FROM ${s}.scheduler_job_all ORDER BY id`);
    const result = await migrate(pool, old);
    expect(result.applied).toContain(16);
    await pool.query(
      `SELECT ${s}.pawl_finished_partition_add(now() - interval '1 hour', now() + interval '1 hour')`,
    );
    const { rows: added } = await pool.query<{ id: string; part: string }>(
      `INSERT INTO ${s}.scheduler_job_finished (id, type, status, attempts, finished_at, time_partitioned)
       VALUES (nextval(pg_get_serial_sequence('${s}.scheduler_job_queue', 'id')), 'new', 'SUCCEEDED', 1, now(), true)
       RETURNING id::text, tableoid::regclass::text AS part`,
    );
    expect(added[0]!.part).toMatch(/scheduler_job_finished_\d{8}t\d{6}$/);
    const { rows: captured } = await pool.query<{ id: string }>(
      `SELECT job_id::text AS id FROM ${s}.captured WHERE job_id = $1`,
      [added[0]!.id],
    );
    expect(captured).toHaveLength(1);
    await pool.query(`DELETE FROM ${s}.scheduler_job_finished WHERE type = 'new'`);
    const after = await pool.query(`SELECT * FROM ${s}.scheduler_job_all ORDER BY id`);
    expect(after.rows).toEqual(before.rows);
    const { rows } = await pool.query<{ part: string; n: number }>(
      `SELECT tableoid::regclass::text AS part, count(*)::int AS n FROM ${s}.scheduler_job_finished GROUP BY 1`,
    );
    expect(rows.map((r) => [r.part.split(".").at(-1), r.n])).toEqual([["scheduler_job_finished_rows", 60]]);
  });
});
