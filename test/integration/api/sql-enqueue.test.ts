/**
 * The SQL door (migration 0007, `<schema>.enqueue(type, payload, options)`) against pawl.enqueue: one table
 * of bad inputs goes through both, and each must be refused the same way (same code, same message) with
 * nothing written; good input makes the same row; the caller's transaction decides; unique keys return
 * the live job either way.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { ValidationError, type PawlClient } from "../../../src/index.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let pawl: PawlClient;

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("sqlenq"));
  pawl = testPawl(schema); // the default maxPayloadBytes, the limit the SQL function applies
});
afterAll(async () => {
  await pawl.close();
  await cleanup();
});

const count = async () =>
  Number((await pool.query(`SELECT count(*) AS n FROM "${schema}".scheduler_job_all`)).rows[0].n);

/** Calls the SQL function with JSON text, as psql or a query builder would. */
function sqlEnqueue(db: pg.Pool | pg.PoolClient, type: unknown, payload: unknown, options: unknown) {
  return db.query<{ job_id: string; inserted: boolean }>(
    `SELECT job_id::text, inserted FROM "${schema}".enqueue($1, $2::jsonb, $3::jsonb)`,
    [type, payload === undefined ? null : JSON.stringify(payload), JSON.stringify(options)],
  );
}

interface BadCase {
  name: string;
  type?: unknown;
  payload?: unknown;
  options?: Record<string, unknown> | unknown[];
  /** The SQL call's options where JSON cannot say what TypeScript passes (a Date). */
  sqlOptions?: unknown;
  /**
   * How much of the refusal must match: `message` (the default) the code and the whole message; `code`
   * only the code, where the message cannot be the same (said why in each case).
   */
  same?: "message" | "code";
}

const deep = (levels: number): unknown => {
  let v: unknown = 1;
  for (let i = 0; i < levels; i++) v = [v];
  return v;
};

const badInputs: BadCase[] = [
  { name: "a type with a space", type: "a b" },
  { name: "an empty type", type: "" },
  { name: "a type of 201 characters", type: "t".repeat(201) },
  { name: "a type with a tab", type: "a\tb" },
  { name: "a type with a no-break space", type: "a\u00a0b" },
  { name: "a type with a line separator", type: "a\u2028b" },
  { name: "a type with a DEL", type: "a\u007fb" },
  // 202 UTF-16 units but 101 code points: both count JavaScript's length.
  { name: "a type of 101 astral characters", type: "\u{1F600}".repeat(101) },
  { name: "options that are not an object", options: [] },
  {
    name: "both delayMs and runAt",
    options: { delayMs: 1, runAt: new Date() },
    sqlOptions: { delayMs: 1, runAt: "2030-01-01T00:00:00Z" },
  },
  { name: "a negative delayMs", options: { delayMs: -1 } },
  { name: "a delayMs that is a string", options: { delayMs: "5" } },
  { name: "a delayMs that is a boolean", options: { delayMs: true } },
  { name: "an empty uniqueKey", options: { uniqueKey: "" } },
  { name: "a uniqueKey of 501 characters", options: { uniqueKey: "k".repeat(501) } },
  { name: "a uniqueKey that is a number", options: { uniqueKey: 5 } },
  { name: "a uniqueKey that is null", options: { uniqueKey: null } },
  { name: "a queue with a space", options: { queue: "a b" } },
  { name: "an empty queue", options: { queue: "" } },
  { name: "a queue of 101 characters", options: { queue: "q".repeat(101) } },
  { name: "a queue that is a number", options: { queue: 5 } },
  { name: "priority 101", options: { priority: 101 } },
  { name: "priority -1", options: { priority: -1 } },
  { name: "priority 1.5", options: { priority: 1.5 } },
  { name: "an unknown priority name", options: { priority: "urgent" } },
  { name: "an inherited property as priority name", options: { priority: "toString" } },
  { name: "timeoutMs 0", options: { timeoutMs: 0 } },
  { name: "timeoutMs past int32", options: { timeoutMs: 2_147_483_648 } },
  { name: "a fractional timeoutMs", options: { timeoutMs: 1.5 } },
  { name: "a timeoutMs that is a string", options: { timeoutMs: "5" } },
  { name: "maxAttempts 0", options: { maxAttempts: 0 } },
  { name: "maxAttempts 1001", options: { maxAttempts: 1001 } },
  { name: "a fractional maxAttempts", options: { maxAttempts: 2.5 } },
  { name: "two bad options: the first in pawl's order is named", options: { maxAttempts: 0, priority: 101 } },
  // TypeScript names the path to the too-deep value; jsonpath cannot say where it is.
  { name: "a payload nested 101 deep", payload: deep(101), same: "code" },
  // TypeScript counts JSON.stringify's bytes; SQL the jsonb's text, with a space after each ':' and ','.
  { name: "a payload over 256 KiB", payload: { s: "x".repeat(300_000) }, same: "code" },
  // TypeScript also lists `client`, an option SQL has no use for.
  { name: "an unknown option", options: { foo: 1 }, same: "code" },
];

describe("the SQL enqueue refuses what pawl.enqueue refuses, the same way", () => {
  it.each(badInputs)("$name", async (c) => {
    const type = "type" in c ? c.type : "ok.type";
    let ts: unknown;
    try {
      await pawl.enqueue(type as string, c.payload, c.options as never);
    } catch (error) {
      ts = error;
    }
    expect(ts).toBeInstanceOf(ValidationError);
    const tsError = ts as ValidationError;

    const before = await count();
    const sql = await sqlEnqueue(pool, type, c.payload, c.sqlOptions ?? c.options ?? {}).then(
      () => null,
      (error: pg.DatabaseError) => error,
    );
    expect(sql, "the SQL function accepted it").not.toBeNull();
    expect(sql!.code).toBe("22023");
    expect(sql!.detail).toBe(tsError.code);
    if ((c.same ?? "message") === "message") expect(sql!.message).toBe(tsError.message);
    expect(await count()).toBe(before);
  });

  it("names the same known options, less client", async () => {
    const sql = await sqlEnqueue(pool, "ok.type", {}, { foo: 1 }).catch((e: Error) => e.message);
    const ts = await pawl.enqueue("ok.type", {}, { foo: 1 } as never).catch((e: Error) => e.message);
    expect(sql).toBe(String(ts).replace(", client", ""));
  });
});

describe("the SQL enqueue writes what pawl.enqueue writes", () => {
  it("makes the same row from the same options", async () => {
    const options = { priority: "high", timeoutMs: 5000, maxAttempts: 3, queue: "mail", delayMs: 60_000 };
    const viaTs = await pawl.enqueue("same.row", { to: "a@b.c" }, options as never);
    const [row] = (await sqlEnqueue(pool, "same.row", { to: "a@b.c" }, options)).rows;
    expect(row?.inserted).toBe(true);
    const viaSql = await pawl.getJob(row!.job_id);
    const pick = (j: typeof viaSql) => ({
      type: j?.type,
      queue: j?.queue,
      payload: j?.payload,
      priority: j?.priority,
      status: j?.status,
      timeoutMs: j?.timeoutMs,
      maxAttempts: j?.maxAttempts,
      attempts: j?.attempts,
    });
    expect(pick(viaSql)).toEqual(pick(await pawl.getJob(viaTs.id)));
    expect(viaSql!.scheduledTime.getTime() - viaSql!.createdAt.getTime()).toBeGreaterThanOrEqual(59_000);
  });

  it("takes runAt as an ISO 8601 time, a null option as left out, and no payload as {}", async () => {
    const [row] = (
      await sqlEnqueue(pool, "run.at", undefined, {
        runAt: "2030-01-01T09:00:00Z",
        priority: null,
        queue: null,
        timeoutMs: null,
        maxAttempts: null,
      })
    ).rows;
    const job = await pawl.getJob(row!.job_id);
    expect(job).toMatchObject({
      payload: {},
      priority: 10,
      queue: "default",
      timeoutMs: null,
      maxAttempts: 25,
    });
    expect(job!.scheduledTime.toISOString()).toBe("2030-01-01T09:00:00.000Z");
  });

  it("accepts a type of 100 astral characters (200 UTF-16 units), as TypeScript does", async () => {
    const type = "\u{1F600}".repeat(100);
    const [row] = (await sqlEnqueue(pool, type, {}, {})).rows;
    expect((await pawl.getJob(row!.job_id))?.type).toBe(type);
    expect((await pawl.enqueue(type, {})).inserted).toBe(true);
  });
});

describe("the caller's transaction", () => {
  it("exists once the transaction commits, and a rollback leaves nothing", async () => {
    const client = await pool.connect();
    try {
      await client.query("BEGIN");
      const [rolled] = (await sqlEnqueue(client, "tx.rolled", {}, {})).rows;
      await client.query("ROLLBACK");
      expect(await pawl.getJob(rolled!.job_id)).toBeNull();

      await client.query("BEGIN");
      const [kept] = (await sqlEnqueue(client, "tx.kept", { a: 1 }, {})).rows;
      expect(await pawl.getJob(kept!.job_id)).toBeNull(); // not visible outside the transaction yet
      await client.query("COMMIT");
      expect(await pawl.getJob(kept!.job_id)).toMatchObject({ status: "PENDING", payload: { a: 1 } });
    } finally {
      client.release();
    }
  });
});

describe("unique keys", () => {
  it("returns the live job, whichever door took the key first, and frees it once that job ends", async () => {
    const [first] = (await sqlEnqueue(pool, "uniq", { n: 1 }, { uniqueKey: "sql-k" })).rows;
    expect(first?.inserted).toBe(true);
    const [again] = (await sqlEnqueue(pool, "uniq", { n: 2 }, { uniqueKey: "sql-k" })).rows;
    expect(again).toEqual({ job_id: first!.job_id, inserted: false });
    const viaTs = await pawl.enqueue("uniq", { n: 3 }, { uniqueKey: "sql-k" });
    expect({ id: viaTs.id, inserted: viaTs.inserted }).toEqual({ id: first!.job_id, inserted: false });

    const tsFirst = await pawl.enqueue("uniq", {}, { uniqueKey: "ts-k" });
    const [fromSql] = (await sqlEnqueue(pool, "uniq", {}, { uniqueKey: "ts-k" })).rows;
    expect(fromSql).toEqual({ job_id: tsFirst.id, inserted: false });

    await pawl.cancel(first!.job_id);
    const [fresh] = (await sqlEnqueue(pool, "uniq", {}, { uniqueKey: "sql-k" })).rows;
    expect(fresh?.inserted).toBe(true);
    expect(fresh?.job_id).not.toBe(first!.job_id);
  });
});
