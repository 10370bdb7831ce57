/**
 * Transactional enqueue through a client that is not node-postgres: a kysely transaction behind the
 * two-line adapter of docs/sql-enqueue.md. The job commits and rolls back with the builder's own writes;
 * pawl sends such a client text and values only (no named statement), while a pg client keeps getting
 * pawl's named, prepared statement.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { CompiledQuery, Kysely, PostgresDialect, sql, type Transaction } from "kysely";
import type { PawlClient, SqlClient } from "../../../src/index.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let pawl: PawlClient;
let db: Kysely<Record<string, { id: number }>>;

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("anycl"));
  pawl = testPawl(schema);
  db = new Kysely({ dialect: new PostgresDialect({ pool }) });
  await pool.query(`CREATE TABLE "${schema}".orders (id integer PRIMARY KEY)`);
});
afterAll(async () => {
  await pawl.close();
  await cleanup(); // ends the pool kysely runs on
});

/** The adapter: kysely's raw query in the transaction, recording what pawl sent. */
function adapter(trx: Transaction<Record<string, { id: number }>>, sent: unknown[] = []): SqlClient {
  return {
    query: (text, values) => {
      sent.push(text);
      return trx.executeQuery(CompiledQuery.raw(text, values));
    },
  };
}

const orderExists = async (id: number) =>
  (await pool.query(`SELECT 1 FROM "${schema}".orders WHERE id = $1`, [id])).rowCount === 1;

describe("enqueue inside a kysely transaction", () => {
  it("commits with the transaction, sending text only", async () => {
    const sent: unknown[] = [];
    const job = await db.transaction().execute(async (trx) => {
      await trx.insertInto(`${schema}.orders`).values({ id: 1 }).execute();
      const j = await pawl.enqueue("order.confirm", { orderId: 1 }, { client: adapter(trx, sent) });
      const many = await pawl.enqueueMany([{ type: "order.audit", payload: { orderId: 1 } }], {
        client: adapter(trx, sent),
      });
      expect(many[0]?.inserted).toBe(true);
      expect(await pawl.getJob(j.id)).toBeNull(); // not visible outside the transaction yet
      return j;
    });
    expect(await orderExists(1)).toBe(true);
    expect(await pawl.getJob(job.id)).toMatchObject({ status: "PENDING", payload: { orderId: 1 } });
    expect(sent.length).toBeGreaterThanOrEqual(2);
    expect(sent.every((t) => typeof t === "string")).toBe(true); // never a named QueryConfig
  });

  it("rolls back with the transaction: no order, no job", async () => {
    let id: string | undefined;
    await expect(
      db.transaction().execute(async (trx) => {
        await trx.insertInto(`${schema}.orders`).values({ id: 2 }).execute();
        id = (await pawl.enqueue("order.confirm", { orderId: 2 }, { client: adapter(trx) })).id;
        throw new Error("payment refused");
      }),
    ).rejects.toThrow("payment refused");
    expect(await orderExists(2)).toBe(false);
    expect(await pawl.getJob(id!)).toBeNull();
  });

  it("returns the live job for a taken unique key through the adapter too", async () => {
    const first = await pawl.enqueue("order.once", {}, { uniqueKey: "order-3" });
    const again = await db
      .transaction()
      .execute((trx) => pawl.enqueue("order.once", {}, { uniqueKey: "order-3", client: adapter(trx) }));
    expect({ id: again.id, inserted: again.inserted }).toEqual({ id: first.id, inserted: false });
  });
});

describe("the SQL function through kysely (docs/sql-enqueue.md)", () => {
  it("enqueues in the transaction with the sql tag, and rolls back with it", async () => {
    const call = (trx: Transaction<Record<string, { id: number }>>, orderId: number) =>
      sql<{ job_id: string; inserted: boolean }>`
        SELECT job_id::text, inserted
        FROM ${sql.id(schema)}.enqueue(${"order.sql"}, ${JSON.stringify({ orderId })}::jsonb, '{}'::jsonb)
      `.execute(trx);
    const kept = await db.transaction().execute(async (trx) => (await call(trx, 4)).rows[0]!);
    expect(kept.inserted).toBe(true);
    expect(await pawl.getJob(kept.job_id)).toMatchObject({ type: "order.sql", payload: { orderId: 4 } });

    let rolled: string | undefined;
    await expect(
      db.transaction().execute(async (trx) => {
        rolled = (await call(trx, 5)).rows[0]!.job_id;
        throw new Error("abandoned");
      }),
    ).rejects.toThrow("abandoned");
    expect(await pawl.getJob(rolled!)).toBeNull();
  });
});

describe("a pg client", () => {
  it("still gets pawl's named statement, prepared on its connection", async () => {
    const client = await pool.connect();
    try {
      await client.query("BEGIN");
      await pawl.enqueue("pg.named", {}, { client });
      await client.query("COMMIT");
      const { rows } = await client.query<{ name: string }>("SELECT name FROM pg_prepared_statements");
      expect(rows.map((r) => r.name)).toContain(`pawl_${schema}_enqueue`);
    } finally {
      client.release();
    }
  });
});
