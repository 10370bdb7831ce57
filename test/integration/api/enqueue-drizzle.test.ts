/**
 * The drizzle snippets of docs/sql-enqueue.md against the real database (drizzle on node-postgres): the
 * SQL function through `tx.execute(sql...)`, and `pawl.enqueue` / a flow through the SqlClient adapter that
 * rebuilds pawl's `$n` statement as a drizzle `sql` object with a param per `$n`. Each commits with the
 * drizzle transaction and rolls back with it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { sql } from "drizzle-orm";
import { drizzle, type NodePgDatabase } from "drizzle-orm/node-postgres";
import { integer, pgSchema } from "drizzle-orm/pg-core";
import type { PawlClient, SqlClient } from "../../../src/index.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";
import { describeSqlClientAdapter } from "./sql-client-adapter-tests.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let pawl: PawlClient;
let db: NodePgDatabase;
let orders: ReturnType<typeof ordersTable>;

const ordersTable = (name: string) => pgSchema(name).table("orders", { id: integer("id").primaryKey() });
type Tx = Parameters<Parameters<NodePgDatabase["transaction"]>[0]>[0];

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("drzcl"));
  pawl = testPawl(schema);
  db = drizzle(pool);
  orders = ordersTable(schema);
  await pool.query(`CREATE TABLE "${schema}".orders (id integer PRIMARY KEY)`);
});
afterAll(async () => {
  await pawl.close();
  await cleanup(); // ends the pool drizzle runs on
});

/**
 * The adapter of docs/sql-enqueue.md, as written there: the text split at each `$n`, every `$n` replaced
 * by a drizzle param holding the n-th value (drizzle numbers them again in order).
 */
function drizzleClient(tx: Tx): SqlClient {
  return {
    query: (text, values = []) =>
      tx.execute(
        sql.join(
          text
            .split(/\$(\d+)/)
            .map((part, i) => (i % 2 ? sql.param(values[Number(part) - 1]) : sql.raw(part))),
        ),
      ),
  };
}

const orderExists = async (id: number) =>
  (await pool.query(`SELECT 1 FROM "${schema}".orders WHERE id = $1`, [id])).rowCount === 1;

describe("the SQL function through drizzle's execute", () => {
  const call = (tx: Tx, orderId: number) =>
    tx.execute<{ job_id: string; inserted: boolean }>(
      sql`SELECT * FROM ${sql.identifier(schema)}.enqueue(${"order.drizzle"}, ${JSON.stringify({ orderId })}::jsonb, '{}'::jsonb)`,
    );

  it("commits with the transaction", async () => {
    const row = await db.transaction(async (tx) => {
      await tx.insert(orders).values({ id: 1 });
      return (await call(tx, 1)).rows[0]!;
    });
    expect(row.inserted).toBe(true);
    expect(await orderExists(1)).toBe(true);
    expect(await pawl.getJob(row.job_id)).toMatchObject({ type: "order.drizzle", payload: { orderId: 1 } });
  });

  it("rolls back with the transaction", async () => {
    let id: string | undefined;
    await expect(
      db.transaction(async (tx) => {
        await tx.insert(orders).values({ id: 2 });
        id = (await call(tx, 2)).rows[0]!.job_id;
        throw new Error("payment refused");
      }),
    ).rejects.toThrow("payment refused");
    expect(id).toBeDefined();
    expect(await orderExists(2)).toBe(false);
    expect(await pawl.getJob(id!)).toBeNull();
  });
});

describeSqlClientAdapter("drizzle", () => ({
  pawl,
  orderExists,
  inTransaction: (orderId, fn) =>
    db.transaction(async (tx) => {
      await tx.insert(orders).values({ id: orderId });
      return fn(drizzleClient(tx));
    }),
}));
