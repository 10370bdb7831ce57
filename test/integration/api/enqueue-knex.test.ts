/**
 * The knex snippets of docs/sql-enqueue.md against the real database: the SQL function through
 * `trx.raw`, and `pawl.enqueue` / a flow through the SqlClient adapter that turns pawl's `$n` parameters
 * into knex's `?` bindings. Each commits with the knex transaction and rolls back with it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import knexFactory, { type Knex } from "knex";
import type { PawlClient, SqlClient } from "../../../src/index.js";
import { databaseUrl } from "../../helpers/db.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";
import { describeSqlClientAdapter } from "./sql-client-adapter-tests.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let pawl: PawlClient;
let knex: Knex;

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("knexcl"));
  pawl = testPawl(schema);
  knex = knexFactory({ client: "pg", connection: databaseUrl, pool: { min: 0, max: 2 } });
  await pool.query(`CREATE TABLE "${schema}".orders (id integer PRIMARY KEY)`);
});
afterAll(async () => {
  await knex.destroy();
  await pawl.close();
  await cleanup();
});

/**
 * The adapter of docs/sql-enqueue.md, as written there: knex's raw takes `?` bindings, so each `$n` becomes
 * a `?` bound to the n-th value (in order of appearance: a parameter used twice is bound twice), and a
 * literal `?` is escaped.
 */
function knexClient(trx: Knex.Transaction): SqlClient {
  return {
    query: (text, values = []) => {
      const bound: unknown[] = [];
      const q = text
        .replace(/\?/g, "\\?")
        .replace(/\$(\d+)/g, (_, n: string) => (bound.push(values[Number(n) - 1]), "?"));
      return trx.raw(q, bound as Knex.RawBinding[]);
    },
  };
}

const orderExists = async (id: number) =>
  (await pool.query(`SELECT 1 FROM "${schema}".orders WHERE id = $1`, [id])).rowCount === 1;

describe("the SQL function through knex.raw", () => {
  const call = (trx: Knex.Transaction, orderId: number) =>
    trx.raw<{ rows: { job_id: string; inserted: boolean }[] }>(
      `SELECT * FROM "${schema}".enqueue(?, CAST(? AS jsonb), CAST(? AS jsonb))`,
      ["order.knex", JSON.stringify({ orderId }), JSON.stringify({ priority: "high" })],
    );

  it("commits with the transaction", async () => {
    const row = await knex.transaction(async (trx) => {
      await trx(`${schema}.orders`).insert({ id: 1 });
      const { rows } = await call(trx, 1);
      return rows[0]!;
    });
    expect(row.inserted).toBe(true);
    expect(await orderExists(1)).toBe(true);
    expect(await pawl.getJob(row.job_id)).toMatchObject({
      type: "order.knex",
      payload: { orderId: 1 },
      priority: 20, // "high"
    });
  });

  it("rolls back with the transaction", async () => {
    let id: string | undefined;
    await expect(
      knex.transaction(async (trx) => {
        await trx(`${schema}.orders`).insert({ id: 2 });
        id = (await call(trx, 2)).rows[0]!.job_id;
        throw new Error("payment refused");
      }),
    ).rejects.toThrow("payment refused");
    expect(id).toBeDefined();
    expect(await orderExists(2)).toBe(false);
    expect(await pawl.getJob(id!)).toBeNull();
  });
});

describeSqlClientAdapter("knex", () => ({
  pawl,
  orderExists,
  inTransaction: (orderId, fn) =>
    knex.transaction(async (trx) => {
      await trx(`${schema}.orders`).insert({ id: orderId });
      return fn(knexClient(trx));
    }),
}));
