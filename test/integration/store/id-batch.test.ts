/**
 * Batch outcome writes find their rows by primary key and read each row's values by its id's position
 * (src/store/jobs/id-batch-sql.ts): every row gets its own values whatever order the batch comes in, and
 * the plan does not depend on the statistics of the lease columns.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type pg from "pg";
import { JobStore } from "../../../src/store/postgres-job-store.js";
import { completeJobs } from "../../../src/store/outcomes/finish-jobs.js";
import { tablesFor, type Queryable } from "../../../src/db/sql.js";
import { setupSchema } from "../../helpers/pawl.js";
import { leasedJobs } from "../../helpers/leased-jobs.js";
import { newJob } from "../../helpers/new-job.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let store: JobStore;

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("idb"));
  store = new JobStore(pool, schema);
});
afterAll(async () => {
  await cleanup();
});
beforeEach(async () => {
  await pool.query(`TRUNCATE "${schema}".scheduler_job_queue, "${schema}".scheduler_job_finished`);
});

/** `n` jobs of `type` leased to node n1. */
const leased = (type: string, n: number): Promise<string[]> => leasedJobs(store, type, n, "n1");

/** A fixed shuffle that puts ids of different digit counts out of order both ways. */
const shuffled = (ids: readonly string[]): string[] =>
  [...ids]
    .map((id, i) => ({ id, k: (i * 7) % ids.length }))
    .sort((a, b) => a.k - b.k)
    .map((x) => x.id);

describe("batch outcome writes", () => {
  it("give every row its own values when the batch is out of id order", async () => {
    // Ids from 95 to 124: two and three digits, so a sort by text would misplace them.
    await pool.query(`SELECT setval(pg_get_serial_sequence('"${schema}".scheduler_job_queue', 'id'), 94)`);
    const ids = await leased("mixed", 30);
    expect(ids.some((id) => id.length === 2) && ids.some((id) => id.length === 3)).toBe(true);
    // Every sixth id per kind, so each batch holds both digit counts, in a shuffled order.
    const [done, retried, dead, snoozed, progressed, parked] = [0, 1, 2, 3, 4, 5].map((k) =>
      shuffled(ids.filter((_, i) => i % 6 === k)),
    ) as [string[], string[], string[], string[], string[], string[]];
    const error = (id: string) => ({ attempt: 1, name: "Error", message: `failed ${id}` });
    const minutes = (id: string) => Number(id) * 60_000;

    // In this order: progress leaves its rows leased, the others end or hand back theirs.
    const writes: [string, () => Promise<Set<string>>][] = [
      [
        "progress",
        () =>
          store.writeProgress!(
            "n1",
            progressed.map((id) => ({ id, progressJson: id })),
          ),
      ],
      [
        "complete",
        () =>
          store.complete(
            "n1",
            done.map((id) => ({ id, resultJson: JSON.stringify({ id }) })),
          ),
      ],
      [
        "retry",
        () =>
          store.retry(
            "n1",
            retried.map((id) => ({ id, delayMs: minutes(id), error: error(id) })),
          ),
      ],
      [
        "kill",
        () =>
          store.kill(
            "n1",
            dead.map((id) => ({ id, error: error(id) })),
          ),
      ],
      [
        "reschedule",
        () =>
          store.reschedule(
            "n1",
            snoozed.map((id) => ({ id, delayMs: minutes(id) })),
          ),
      ],
      [
        "park",
        () =>
          store.park(
            "n1",
            parked.map((id) => ({ id, timeoutMs: minutes(id) })),
          ),
      ],
    ];
    for (const [kind, write] of writes) expect((await write()).size, kind).toBe(5);

    const finished = await pool.query<{
      id: string;
      result: { id: string } | null;
      errors: { message: string }[];
    }>(`SELECT id::text, result, errors FROM "${schema}".scheduler_job_finished`);
    for (const id of done) expect(finished.rows.find((r) => r.id === id)?.result).toEqual({ id });
    for (const id of dead)
      expect(finished.rows.find((r) => r.id === id)?.errors.at(-1)?.message).toBe(`failed ${id}`);

    // A delay of id minutes puts each row's time id minutes after the statement's now().
    const live = await pool.query<{
      id: string;
      minutes: number | null;
      deadline_minutes: number | null;
      errors: { message: string }[];
      progress: unknown;
    }>(
      `SELECT id::text, round(extract(epoch FROM scheduled_time - updated_at) / 60)::int AS minutes,
              round(extract(epoch FROM signal_deadline - updated_at) / 60)::int AS deadline_minutes,
              errors, progress
       FROM "${schema}".scheduler_job_queue`,
    );
    const row = (id: string) => live.rows.find((r) => r.id === id)!;
    for (const id of retried) {
      expect(row(id).minutes).toBe(Number(id));
      expect(row(id).errors.at(-1)?.message).toBe(`failed ${id}`);
    }
    for (const id of snoozed) expect(row(id).minutes).toBe(Number(id));
    for (const id of parked) expect(row(id).deadline_minutes).toBe(Number(id));
    for (const id of progressed) expect(row(id).progress).toBe(Number(id));
  });

  it("find their rows by primary key when the statistics saw no leased row", async () => {
    // ANALYZE while no row is leased: picked_by is all NULL, so the planner expects `picked_by = node` to
    // match about one row. A join with the unnested batch was then planned as a nested loop that read
    // the whole batch once per leased row (seconds for a batch of 500 among 20,000 leased rows).
    await store.enqueue(Array.from({ length: 3_000 }, () => newJob({ type: "other" })));
    await pool.query(`ANALYZE "${schema}".scheduler_job_queue`);
    const ids = await leased("many", 20_000);
    const batch = shuffled(ids.slice(0, 500)).map((id) => ({ id, resultJson: null }));

    const seen: { text: string; values: unknown[] }[] = [];
    const recorder: Queryable = {
      query: (config) => {
        const c = config as { text: string; values?: unknown[] };
        seen.push({ text: c.text, values: c.values ?? [] });
        return Promise.resolve({ rows: [] } as never);
      },
    };
    await completeJobs(recorder, tablesFor(schema, true), "n1", batch);
    const [statement] = seen;
    const client = await pool.connect();
    try {
      await client.query("BEGIN");
      const plan = await client.query<{ "QUERY PLAN": string }>(
        `EXPLAIN (ANALYZE, FORMAT TEXT) ${statement!.text}`,
        statement!.values,
      );
      await client.query("ROLLBACK");
      const text = plan.rows.map((r) => r["QUERY PLAN"]).join("\n");
      if (process.env.PAWL_PRINT_PLANS) console.log(text);
      expect(text).toMatch(/Index Scan using scheduler_job_queue_\w+ on scheduler_job_queue/);
      expect(text).not.toMatch(/Nested Loop|Function Scan|Seq Scan on scheduler_job_queue/);
      const deleted = /Delete on scheduler_job_queue.*rows=(\d+) loops/.exec(text);
      expect(Number(deleted?.[1])).toBe(500);
    } finally {
      client.release();
    }
  }, 60_000);
});
