/**
 * pawl's own connection pool, configured against pg's traps: a bounded connect timeout (pg waits forever
 * by default), TCP keep-alive, and an error listener so an idle client's error never crashes the host.
 */
import pg from "pg";
import type { Logger } from "../logger.js";

/** Creates a pool for pawl. */
export function createPool(connectionString: string, max: number, logger: Logger, name = "pawl"): pg.Pool {
  const pool = new pg.Pool({
    connectionString,
    max,
    connectionTimeoutMillis: 10_000,
    idleTimeoutMillis: 30_000,
    keepAlive: true,
    application_name: name,
  });
  pool.on("error", (error) => logger.warn("idle database connection failed", { error: String(error) }));
  return pool;
}
