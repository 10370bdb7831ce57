/**
 * Tests that run jobs for real without a PostgreSQL server: {@link embeddedPawl} gives a migrated pawl on
 * a fresh in-memory embedded database (PGlite in the test's process, docs/embedded.md), the same runtime
 * and SQL as production. Databases boot from a per-process template, so each costs about half a second
 * after the first.
 */
import type { Pawl } from "../api/pawl.js";
import { createPawl } from "../index.js";
import type { PawlConfig } from "../input/config.js";
import { silentLogger } from "../core/logger.js";
import { EmbeddedPool } from "../db/embedded/embedded-pool.js";
import { EMBEDDED_MEMORY_URL } from "../db/embedded/embedded-url.js";
import { embeddedTemplate } from "../db/embedded/embedded-template.js";
import type { EmbeddedDatabase } from "../db/embedded/embedded-database.js";
import type { PawlTasks } from "../input/task-map.js";

/**
 * A fresh in-memory embedded database for a test. Share it between several pawl instances (nodes of one
 * test cluster, a client beside a node) by passing it to {@link embeddedPawl}.
 *
 * @example
 * ```ts
 * const db = await embeddedDatabase();
 * const a = await embeddedPawl({ nodeId: "a" }, db);
 * const b = await embeddedPawl({ nodeId: "b" }, db);
 * // ...
 * await a.close(); await b.close(); await db.close();
 * ```
 */
export async function embeddedDatabase(): Promise<EmbeddedDatabase> {
  const pool = new EmbeddedPool(EMBEDDED_MEMORY_URL, silentLogger, { template: await embeddedTemplate() });
  await pool.ready;
  return { pool, location: pool.location, bootMs: pool.bootMs ?? 0, close: () => pool.end() };
}

/** What {@link embeddedPawl} returns. */
export interface EmbeddedPawl<Tasks extends object = PawlTasks> {
  /** A migrated pawl (not started: register handlers, then `start()`). */
  readonly pawl: Pawl<Tasks>;
  /** Its database: `database.pool` runs your own statements and transactions. */
  readonly database: EmbeddedDatabase;
  /** Closes the pawl (stopping it if started), and the database if this call opened it. */
  close(): Promise<void>;
}

/**
 * A migrated pawl on an embedded database: a fresh one, or `database` when given.
 *
 * @param config createPawl's options, without `connectionString` and `pool`.
 * @example
 * ```ts
 * import { embeddedPawl } from "pawl/testing";
 *
 * const { pawl, close } = await embeddedPawl({ concurrency: 2 });
 * pawl.register("email.send", async (p: { to: string }) => send(p));
 * await pawl.start();
 * const job = await pawl.enqueue("email.send", { to: "a@b.c" });
 * await pawl.events.next("job:succeeded", (e) => e.job.id === job.id);
 * await close();
 * ```
 */
export async function embeddedPawl<Tasks extends object = PawlTasks>(
  config: Omit<PawlConfig, "connectionString" | "pool"> = {},
  database?: EmbeddedDatabase,
): Promise<EmbeddedPawl<Tasks>> {
  const db = database ?? (await embeddedDatabase());
  let pawl: Pawl<Tasks>;
  try {
    pawl = createPawl<Tasks>({ ...config, pool: db.pool });
    await pawl.migrate();
  } catch (error) {
    if (database === undefined) await db.close();
    throw error;
  }
  return {
    pawl,
    database: db,
    async close() {
      try {
        await pawl.close();
      } finally {
        if (database === undefined) await db.close();
      }
    },
  };
}
