/**
 * Connection faults on a connection pawl holds, made deterministic: the backend of a client checked out by
 * pawl is terminated between two statements of a transaction, and the test waits for the client to see its
 * socket close (its `end` event) before pawl's next statement. pg reports that as an `error` event on the
 * client; before src/db/held-client.ts existed nobody listened to it while the client was checked out, and it
 * escaped as an uncaughtException (the host's process died). It must fail the operation instead, drop the
 * connection from the pool and be reported as a connection fault.
 *
 * Also here: an enqueue while the database cannot be reached fails fast with a DatabaseUnavailableError
 * (within the connect timeout), and the caller's retry writes the job once.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type pg from "pg";
import { acquirePermit } from "../../../src/store/cluster/permits.js";
import { createPool } from "../../../src/db/pool.js";
import { inHeldTransaction, onConnectionFault, type ConnectionFault } from "../../../src/db/held-client.js";
import { tablesFor } from "../../../src/db/sql.js";
import { silentLogger } from "../../../src/core/logger.js";
import { createPawl, DatabaseUnavailableError } from "../../../src/index.js";
import { databaseUrl } from "../../helpers/db.js";
import { setupSchema } from "../../helpers/pawl.js";

let schema: string;
let admin: pg.Pool;
let cleanup: () => Promise<void>;

/** Uncaught exceptions and unhandled rejections seen while a test ran: each one would kill a host. */
const escaped: unknown[] = [];
const record = (error: unknown) => escaped.push(error);

beforeAll(async () => {
  ({ schema, pool: admin, cleanup } = await setupSchema("fheld"));
});
afterAll(async () => cleanup());
beforeEach(() => {
  escaped.length = 0;
  process.on("uncaughtException", record);
  process.on("unhandledRejection", record);
});
afterEach(() => {
  process.off("uncaughtException", record);
  process.off("unhandledRejection", record);
});

/** Terminates `pid`, waiting (up to 5 s) until the backend has exited, and checks it existed. */
async function terminate(pid: number): Promise<void> {
  const { rows } = await admin.query<{ ok: boolean }>("SELECT pg_terminate_backend($1, 5000) AS ok", [pid]);
  expect(rows[0]!.ok).toBe(true);
}

/**
 * The raw pg client of the next checkout from `pool`, to wait on its `end` event (the test observes the
 * socket closing; it never listens for `error`, which would hide the bug).
 */
function nextCheckout(pool: pg.Pool): Promise<pg.PoolClient> {
  return new Promise((resolve) => pool.once("acquire", (client: pg.PoolClient) => resolve(client)));
}

/** The client's `end` event (not events.once, which listens for `error` too and so would hide the bug). */
function ended(client: pg.PoolClient): Promise<void> {
  return new Promise((resolve) => client.once("end", () => resolve()));
}

describe("a FATAL on a connection pawl holds, with no query in flight", () => {
  it("fails the transaction, drops the connection and reports the fault; nothing escapes", async () => {
    const pool = createPool(databaseUrl, 2, silentLogger, "fault-held-test");
    const faults: ConnectionFault[] = [];
    onConnectionFault(pool, (f) => faults.push(f));
    try {
      const checkedOut = nextCheckout(pool);
      const run = inHeldTransaction(pool, async (db) => {
        const { rows } = await db.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
        const raw = await checkedOut;
        const closed = ended(raw);
        await terminate(rows[0]!.pid);
        await closed; // the FATAL and the socket's close reached the client between two statements
        await db.query(`SELECT 1 FROM "${schema}".scheduler_job_all LIMIT 1`);
      });
      const error = await run.then(
        () => null,
        (e: unknown) => e as Error & { code?: string },
      );
      expect(error).not.toBeNull();
      expect(`${error!.code} ${error!.message}`).toMatch(/57P01|terminat/);
      expect(escaped).toEqual([]);
      expect(faults.map((f) => f.source)).toEqual(["held"]);
      // The dead connection left the pool; the next checkout gets a fresh one that works.
      expect(pool.totalCount).toBe(0);
      const { rows } = await pool.query<{ n: number }>("SELECT 1 AS n");
      expect(rows[0]!.n).toBe(1);
    } finally {
      await pool.end();
    }
  });

  it("a permit acquisition whose backend dies under its lock fails, and nothing escapes", async () => {
    const pool = createPool(databaseUrl, 2, silentLogger, "fault-held-test");
    try {
      const checkedOut = nextCheckout(pool);
      // Holding the same advisory lock keeps acquirePermit parked inside its transaction, query in flight.
      const blocker = await admin.connect();
      try {
        await blocker.query("BEGIN");
        await blocker.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`pawl.permit.${schema}.smtp`]);
        // Settled into a value at once: its rejection arrives while the test awaits something else.
        const acquiring = acquirePermit(pool, tablesFor(schema), "smtp", "1", "node-a", 5).then(
          () => null,
          (e: unknown) => e as Error,
        );
        const raw = await checkedOut;
        const { rows } = await admin.query<{ pid: number }>(
          "SELECT pid FROM pg_stat_activity WHERE application_name = 'fault-held-test' AND wait_event_type = 'Lock'",
        );
        expect(rows).toHaveLength(1);
        const closed = ended(raw);
        await terminate(rows[0]!.pid);
        await closed;
        expect((await acquiring)?.message).toMatch(/terminat/);
      } finally {
        await blocker.query("ROLLBACK");
        blocker.release();
      }
      expect(escaped).toEqual([]);
      expect(pool.totalCount).toBe(0);
    } finally {
      await pool.end();
    }
  });
});

describe("enqueue while the database is unreachable", () => {
  it("fails at once with DatabaseUnavailableError when nothing listens on the port", async () => {
    const pawl = createPawl({ connectionString: "postgres://postgres@127.0.0.1:1/test", schema });
    try {
      const started = Date.now();
      const error = await pawl.enqueue("fault.job", {}).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(DatabaseUnavailableError);
      expect(error).toMatchObject({ code: "DATABASE_UNAVAILABLE", maybeWritten: false });
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      await pawl.close();
    }
  });

  it("fails within the connect timeout when no connection is free, and the retry writes the job once", async () => {
    const pawl = createPawl({
      connectionString: `${databaseUrl}?connect_timeout=1`,
      schema,
      maxConnections: 2,
    });
    try {
      // Every connection of pawl's pool is taken: the enqueue can only wait, and must stop waiting.
      const held = await Promise.all([pawl.store.pool.connect(), pawl.store.pool.connect()]);
      const started = Date.now();
      const error = await pawl
        .enqueue("fault.job", { n: 1 }, { uniqueKey: "fault-1" })
        .catch((e: unknown) => e);
      const waitedMs = Date.now() - started;
      for (const c of held) c.release();
      expect(error).toBeInstanceOf(DatabaseUnavailableError);
      expect(error).toMatchObject({ maybeWritten: false });
      expect(waitedMs).toBeGreaterThanOrEqual(900);
      expect(waitedMs).toBeLessThan(3_000);

      const retried = await pawl.enqueue("fault.job", { n: 1 }, { uniqueKey: "fault-1" });
      const again = await pawl.enqueue("fault.job", { n: 1 }, { uniqueKey: "fault-1" });
      expect(again.id).toBe(retried.id);
      const { rows } = await admin.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM "${schema}".scheduler_job_all WHERE unique_key = 'fault-1'`,
      );
      expect(rows[0]!.n).toBe(1);
    } finally {
      await pawl.close();
    }
  });
});
