/**
 * Opening the embedded database yourself, for when your own statements must share it with pawl (a
 * transactional enqueue, your tables beside pawl's). Most applications never need this: createPawl with a
 * `pglite://` connection string opens and closes the database itself.
 */
import { silentLogger, type Logger } from "../../core/logger.js";
import { EmbeddedPool } from "./embedded-pool.js";
import { EMBEDDED_MEMORY_URL, type EmbeddedLocation } from "./embedded-url.js";

/** An open embedded database. */
export interface EmbeddedDatabase {
  /**
   * Its pool: one connection. Pass it to createPawl as `pool`, and use it for your own statements. Hold
   * a client from it only briefly: while you hold it, pawl's statements wait (up to 10 s, then they fail
   * with DatabaseUnavailableError and are retried like any outage).
   */
  readonly pool: EmbeddedPool;
  /** Where its data lives. */
  readonly location: EmbeddedLocation;
  /** How long it took to boot, ms. */
  readonly bootMs: number;
  /** Closes the database (call after closing the pawl instances that use it). Idempotent. */
  close(): Promise<void>;
}

/** Options of {@link openEmbeddedDatabase}. */
export interface EmbeddedDatabaseOptions {
  /** Where it logs its boot. Default: silent. */
  logger?: Logger;
}

/**
 * Boots an embedded PostgreSQL (PGlite) in this process: `pglite://memory` (the default) or
 * `pglite://<directory>`.
 *
 * @throws PawlError `INVALID_CONFIG` for a malformed URL or a directory that another open holds;
 *   DatabaseUnavailableError when PGlite cannot start.
 * @example
 * ```ts
 * const db = await openEmbeddedDatabase("pglite://./.pawl-data");
 * const pawl = createPawl({ pool: db.pool });
 * await pawl.migrate();
 * await db.pool.query("CREATE TABLE IF NOT EXISTS orders (id int PRIMARY KEY)");
 * // An enqueue in your own transaction on a client of db.pool: docs/embedded.md.
 * await pawl.close();
 * await db.close();
 * ```
 */
export async function openEmbeddedDatabase(
  connectionString: string = EMBEDDED_MEMORY_URL,
  options: EmbeddedDatabaseOptions = {},
): Promise<EmbeddedDatabase> {
  const pool = new EmbeddedPool(connectionString, options.logger ?? silentLogger);
  await pool.ready;
  return {
    pool,
    location: pool.location,
    bootMs: pool.bootMs ?? 0,
    close: () => pool.end(),
  };
}
