/**
 * A connection whose server refuses writes (25006 read_only_sql_transaction: a hot standby behind an
 * endpoint that has not moved yet, or a demoted primary) is dropped, never handed out again: after a
 * failover that server stays read-only, and a pool that kept the connection would keep sending work to it.
 * pg-pool drops the client of a failed `pool.query` by itself; a client pawl holds (src/db/held-client.ts)
 * must be released as broken. The read-only server is made here with the session's default transaction
 * mode, which answers the same SQLSTATE as a standby does.
 */
import { afterAll, describe, expect, it } from "vitest";
import { createPool } from "../../../src/db/pool.js";
import { inHeldTransaction, withHeldClient } from "../../../src/db/held-client.js";
import { connectionFailureKind, poisonsConnection } from "../../../src/db/connection-failure.js";
import { silentLogger } from "../../../src/core/logger.js";
import { databaseUrl } from "../../helpers/db.js";

const pool = createPool(databaseUrl, 1, silentLogger, "pawl-read-only-test");
afterAll(() => pool.end());

const backend = (db: { query: (s: string) => Promise<{ rows: unknown[] }> }) =>
  db.query("SELECT pg_backend_pid() AS pid").then((r) => (r.rows[0] as { pid: number }).pid);

describe("a read-only server", () => {
  it("answers 25006, which counts as nothing written and drops the held connection", async () => {
    let refused: unknown;
    const first = await withHeldClient(pool, async (db) => {
      const pid = await backend(db);
      await db.query("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY");
      return pid;
    });
    // The same connection comes back while nothing failed (a pool of one).
    const failed = inHeldTransaction(pool, async (db) => {
      expect(await backend(db)).toBe(first);
      await db.query("CREATE TABLE pawl_read_only_probe (a int)");
    });
    await failed.catch((error: unknown) => (refused = error));
    expect((refused as { code?: string }).code).toBe("25006");
    expect(connectionFailureKind(refused)).toBe("connect");
    expect(poisonsConnection(refused)).toBe(true);
    // The refused connection is gone: the next one is a new backend, and it can write.
    const next = await withHeldClient(pool, async (db) => {
      await db.query("CREATE TEMP TABLE pawl_read_only_probe (a int)");
      return backend(db);
    });
    expect(next).not.toBe(first);
  });

  it("keeps a connection whose statement failed for its own reasons", async () => {
    const first = await withHeldClient(pool, backend);
    await withHeldClient(pool, (db) => db.query("SELECT 1/0")).catch(() => {});
    expect(await withHeldClient(pool, backend)).toBe(first);
  });
});
