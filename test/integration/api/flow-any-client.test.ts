/**
 * Flows (chains, batches, workflows) inside the caller's transaction through a client that is not
 * node-postgres: a kysely transaction behind the same two-line SqlClient adapter enqueue takes
 * (docs/sql-enqueue.md). The flow row and every member commit and roll back with the builder's own writes;
 * a committed flow then runs on a node as any other.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { CompiledQuery, Kysely, PostgresDialect, type Transaction } from "kysely";
import type { Pawl, SqlClient } from "../../../src/index.js";
import { ValidationError } from "../../../src/index.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";

type Db = Record<string, { id: number }>;

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let node: Pawl;
let db: Kysely<Db>;

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("flowcl"));
  db = new Kysely({ dialect: new PostgresDialect({ pool }) });
  await pool.query(`CREATE TABLE "${schema}".orders (id integer PRIMARY KEY)`);
  node = testPawl(schema, { coordinator: "postgres" });
  node.register("fc.step", async (p: { n: number }) => ({ n: p.n + 1 }));
  node.register("fc.add", async (_p: unknown, ctx) => {
    const previous = (await ctx.flow())?.previous as { n: number } | undefined;
    return { n: (previous?.n ?? 0) * 10 };
  });
  node.register("fc.row", async (p: { row: number }) => p.row);
  node.register("fc.done", async () => "done");
  await node.start();
});
afterAll(async () => {
  await node.close();
  await cleanup(); // ends the pool kysely runs on
});

/** The adapter of docs/sql-enqueue.md, recording what pawl sent. */
function adapter(trx: Transaction<Db>, sent: unknown[] = []): SqlClient {
  return {
    query: (text, values) => {
      sent.push(text);
      return trx.executeQuery(CompiledQuery.raw(text, values));
    },
  };
}

const order = (trx: Transaction<Db>, id: number) =>
  trx.insertInto(`${schema}.orders`).values({ id }).execute();
const orderExists = async (id: number) =>
  (await pool.query(`SELECT 1 FROM "${schema}".orders WHERE id = $1`, [id])).rowCount === 1;
/** Jobs of a type in the schema, live or finished. */
const jobsOfType = async (type: string) =>
  Number(
    (await pool.query(`SELECT count(*) AS n FROM "${schema}".scheduler_job_all WHERE type = $1`, [type]))
      .rows[0].n,
  );
const flowCount = async () =>
  Number((await pool.query(`SELECT count(*) AS n FROM "${schema}".scheduler_flow`)).rows[0].n);

describe("flows inside a kysely transaction", () => {
  it("a chain commits with the transaction, sending text only, and then runs", async () => {
    const sent: unknown[] = [];
    const handle = await db.transaction().execute(async (trx) => {
      await order(trx, 1);
      const h = await node.chain([{ type: "fc.step", payload: { n: 1 } }, { type: "fc.add" }], {
        client: adapter(trx, sent),
        onComplete: { type: "fc.done" },
      });
      expect(await node.getFlow(h.flowId)).toBeNull(); // not visible outside the transaction yet
      return h;
    });
    expect(await orderExists(1)).toBe(true);
    expect(sent.length).toBeGreaterThanOrEqual(3);
    expect(sent.every((t) => typeof t === "string")).toBe(true); // never a named QueryConfig
    const last = await node.waitFor(handle.jobIds[1]!, { timeoutMs: 20_000 });
    expect(last).toMatchObject({ status: "SUCCEEDED", result: { n: 20 } });
    const completion = await node.waitFor(handle.completionJobId!, { timeoutMs: 20_000 });
    expect(completion).toMatchObject({ status: "SUCCEEDED", result: "done" });
  });

  it("a batch rolls back with the transaction: no order, no flow, no children", async () => {
    const flowsBefore = await flowCount();
    let flowId: string | undefined;
    await expect(
      db.transaction().execute(async (trx) => {
        await order(trx, 2);
        flowId = (
          await node.batch({
            type: "fc.row",
            items: [{ row: 1 }, { row: 2 }, { row: 3 }],
            onComplete: { type: "fc.done" },
            client: adapter(trx),
          })
        ).flowId;
        throw new Error("import abandoned");
      }),
    ).rejects.toThrow("import abandoned");
    expect(flowId).toBeDefined();
    expect(await orderExists(2)).toBe(false);
    expect(await node.getFlow(flowId!)).toBeNull();
    expect(await flowCount()).toBe(flowsBefore);
    expect(await jobsOfType("fc.row")).toBe(0);
  });

  it("a batch commits with the transaction and its children run", async () => {
    const handle = await db.transaction().execute((trx) =>
      node.batch({
        type: "fc.row",
        items: [{ row: 7 }, { row: 8 }],
        onComplete: { type: "fc.done" },
        client: adapter(trx),
      }),
    );
    expect(await node.waitFor(handle.completionJobId!, { timeoutMs: 20_000 })).toMatchObject({
      status: "SUCCEEDED",
    });
    expect(await node.getFlow(handle.flowId)).toMatchObject({ total: 2, succeeded: 2, state: "succeeded" });
  });

  it("a workflow commits with the transaction and rolls back with it", async () => {
    const wf = (trx: Transaction<Db>) =>
      node.workflow({
        jobs: [
          { name: "a", type: "fc.step", payload: { n: 4 } },
          { name: "b", type: "fc.step", payload: { n: 5 }, dependsOn: ["a"] },
        ],
        client: adapter(trx),
      });
    const kept = await db.transaction().execute(wf);
    expect(await node.waitFor(kept.jobIds[1]!, { timeoutMs: 20_000 })).toMatchObject({
      status: "SUCCEEDED",
      result: { n: 6 },
    });

    let rolled: string[] = [];
    await expect(
      db.transaction().execute(async (trx) => {
        rolled = (await wf(trx)).jobIds;
        throw new Error("abandoned");
      }),
    ).rejects.toThrow("abandoned");
    expect(rolled).toHaveLength(2);
    for (const id of rolled) expect(await node.getJob(id)).toBeNull();
  });

  it("refuses a client without query() before writing anything", async () => {
    const flowsBefore = await flowCount();
    const bad = { execute: () => Promise.resolve({ rows: [] }) } as unknown as SqlClient;
    await expect(node.chain([{ type: "fc.step", payload: { n: 0 } }], { client: bad })).rejects.toThrow(
      ValidationError,
    );
    await expect(node.batch({ type: "fc.row", items: [{ row: 0 }], client: bad })).rejects.toMatchObject({
      code: "INVALID_OPTION",
    });
    await expect(
      node.workflow({ jobs: [{ name: "a", type: "fc.step", payload: { n: 0 } }], client: bad }),
    ).rejects.toMatchObject({ code: "INVALID_OPTION" });
    expect(await flowCount()).toBe(flowsBefore);
  });
});

describe("a flow with a pg client", () => {
  it("still commits in the caller's transaction", async () => {
    const client = await pool.connect();
    try {
      await client.query("BEGIN");
      const h = await node.chain([{ type: "fc.step", payload: { n: 9 } }], { client });
      await client.query("COMMIT");
      expect(await node.waitFor(h.jobIds[0]!, { timeoutMs: 20_000 })).toMatchObject({
        status: "SUCCEEDED",
        result: { n: 10 },
      });
    } finally {
      client.release();
    }
  });
});
