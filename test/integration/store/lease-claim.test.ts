/**
 * The lease claim (migration 0008): a claim writes only the lease (picked_by, picked_at, attempts), which no
 * index covers, so on a table with room on its pages every claimed row is a HOT update; the row keeps
 * status PENDING in scheduler_job_queue, and every reader shows it RUNNING.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { JobStore, type PostgresJobStore } from "../../../src/store/postgres-job-store.js";
import { buildNewJob } from "../../../src/input/enqueue-input.js";
import { claimJobs } from "../../../src/store/claim/claim-jobs.js";
import { readExplainFacts } from "../../../src/store/operator/explain-sql.js";
import { explainJob } from "../../../src/logic/explain.js";
import { PostgresOperatorReads } from "../../../src/store/operator/operator-reads.js";
import { tablesFor } from "../../../src/db/sql.js";
import { main } from "../../../src/cli/main.js";
import { databaseUrl } from "../../helpers/db.js";
import { setupSchema } from "../../helpers/pawl.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let store: PostgresJobStore;

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("lease"));
  store = new JobStore(pool, schema);
});
afterAll(() => cleanup());

interface UpdateCounts {
  upd: number;
  hot: number;
}

async function updateCounts(): Promise<UpdateCounts> {
  const c = await pool.connect();
  try {
    // The statistics snapshot of this backend would otherwise keep the first values it read.
    await c.query("SELECT pg_stat_clear_snapshot()");
    const { rows } = await c.query<{ upd: string; hot: string }>(
      `SELECT n_tup_upd AS upd, n_tup_hot_upd AS hot FROM pg_stat_user_tables WHERE relid = $1::regclass`,
      [`"${schema}".scheduler_job_queue`],
    );
    return { upd: Number(rows[0]?.upd ?? 0), hot: Number(rows[0]?.hot ?? 0) };
  } finally {
    c.release();
  }
}

/** Waits until the table's update counter reaches `upd` (the claiming backend flushes its counters). */
async function countsOnceFlushed(upd: number): Promise<UpdateCounts> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const c = await updateCounts();
    if (c.upd >= upd || Date.now() > deadline) return c;
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("lease claim", () => {
  it("is a HOT update for every claimed row, and every reader shows the rows RUNNING", async () => {
    const n = 40;
    const { rows: ff } = await pool.query<{ reloptions: string[] | null }>(
      `SELECT reloptions FROM pg_class WHERE oid = $1::regclass`,
      [`"${schema}".scheduler_job_queue`],
    );
    expect(ff[0]?.reloptions).toContain("fillfactor=45");
    const jobs = await store.enqueue(
      Array.from({ length: n }, (_, i) => buildNewJob("lease", { i }, {}, undefined, 1024)),
    );
    const before = await updateCounts();

    // One transaction that asks its backend to flush its statistics when it goes idle after the commit.
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    let claimed;
    try {
      await client.query("BEGIN");
      await client.query("SELECT pg_stat_force_next_flush()");
      claimed = await claimJobs(client, tablesFor(schema), {
        nodeId: "lease-node",
        limit: n,
        types: ["lease"],
        boostIntervalMs: 0,
        withPayload: false,
      });
      await client.query("COMMIT");
    } finally {
      await client.end();
    }
    expect(claimed).toHaveLength(n);
    const after = await countsOnceFlushed(before.upd + n);
    expect(after.upd - before.upd).toBe(n);
    expect(after.hot - before.hot).toBe(n);

    // The table keeps PENDING with the lease; the view, getJob, listJobs, counts, the overview, explain
    // and the CLI say RUNNING.
    const id = jobs[0]!.id;
    const { rows: raw } = await pool.query(
      `SELECT status, picked_by FROM "${schema}".scheduler_job_queue WHERE id = $1`,
      [id],
    );
    expect(raw[0]).toEqual({ status: "PENDING", picked_by: "lease-node" });
    const { rows: view } = await pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM "${schema}".scheduler_job_all WHERE status = 'RUNNING'`,
    );
    expect(view[0]?.n).toBe(n);
    expect(await store.get(id)).toMatchObject({ status: "RUNNING", pickedBy: "lease-node", attempts: 1 });
    expect(await store.list({ status: "RUNNING", limit: 1000 })).toHaveLength(n);
    expect(await store.list({ status: "PENDING" })).toEqual([]);
    expect(await store.counts()).toEqual([{ status: "RUNNING", type: "lease", count: n }]);
    const overview = await new PostgresOperatorReads(pool, tablesFor(schema)).overview();
    expect(overview.byStatus).toEqual({ RUNNING: n });
    expect(overview.oldestPendingId).toBeNull();
    const facts = await readExplainFacts(store, id, {
      deadNodeThresholdMs: 15_000,
      orphanSweepIntervalMs: 2_000,
    });
    expect(facts && explainJob(facts).verdict).not.toBe("runnable");
    let out = "";
    const code = await main(["job", id, "--json", "--schema", schema, "--database-url", databaseUrl], {
      stdout: (s) => void (out += s),
      stderr: () => undefined,
      env: {},
    });
    expect(code).toBe(0);
    expect(JSON.parse(out)).toMatchObject({ id, status: "RUNNING" });

    // Leased rows are not claimed again, and a cancel sees a running job.
    expect(
      await store.claim({
        nodeId: "other",
        limit: n,
        types: ["lease"],
        boostIntervalMs: 0,
        withPayload: false,
      }),
    ).toEqual([]);
    expect(await store.cancel(id, "stop")).toMatchObject({
      outcome: "running-canceled",
      previousStatus: "RUNNING",
    });
  });

  it("a pause's triggers leave running jobs alone: a claim or a progress write under a pause stays RUNNING", async () => {
    const [held, other] = await store.enqueue([
      buildNewJob("held", {}, {}, undefined, 1024),
      buildNewJob("other", {}, { queue: "q2" }, undefined, 1024),
    ]);
    const [claimed] = await store.claim({
      nodeId: "n1",
      limit: 1,
      types: ["held"],
      boostIntervalMs: 0,
      withPayload: false,
    });
    expect(claimed?.id).toBe(held!.id);
    // A pause of the running job's type: its triggers now see every write to the live table.
    await store.pauseRule("type", "held", "test");
    await store.pauseRule("type", "other-paused", "test");
    expect(await store.writeProgress("n1", [{ id: held!.id, progressJson: "50" }])).toEqual(
      new Set([held!.id]),
    );
    expect((await store.get(held!.id))?.status).toBe("RUNNING");
    // A claim of another type under the pause is not undone by the triggers either.
    const [second] = await store.claim({
      nodeId: "n1",
      limit: 1,
      types: ["other"],
      boostIntervalMs: 0,
      withPayload: false,
    });
    expect(second?.id).toBe(other!.id);
    expect((await store.get(other!.id))?.status).toBe("RUNNING");
    expect(await store.complete("n1", [{ id: held!.id, resultJson: null }])).toEqual(new Set([held!.id]));
    expect((await store.get(held!.id))?.status).toBe("SUCCEEDED");
  });
});
