/**
 * pawl's own connection pool, configured against pg's traps: a bounded connect timeout (pg waits forever
 * by default), TCP keep-alive, and an error listener so an idle client's error never crashes the host.
 * A client pawl has checked out is covered by store/held-client.ts instead; both report their faults on
 * the pool's CONNECTION_FAULT channel, which the runtime counts. A `pglite://` URL is the embedded
 * database (src/db/embedded/), reached through the same pg driver.
 */
import pg from "pg";
import type { Logger } from "../core/logger.js";
import { EmbeddedPool } from "./embedded/embedded-pool.js";
import { isEmbeddedUrl } from "./embedded/embedded-url.js";
import { connectHook, watchIdleErrors } from "./pool-hooks.js";

/** The connect timeout when the connection string sets none, ms. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;

/**
 * The connect timeout of a connection string: libpq's `connect_timeout` parameter (seconds, as psql reads
 * it), else {@link DEFAULT_CONNECT_TIMEOUT_MS}. It bounds both opening a connection and waiting for a free
 * one in the pool, so it is how long an enqueue can wait before it fails with DatabaseUnavailableError.
 *
 * @example
 * ```ts
 * connectTimeoutOf("postgres://db/app?connect_timeout=3"); // 3000
 * ```
 */
export function connectTimeoutOf(connectionString: string): number {
  let value: string | null = null;
  try {
    value = new URL(connectionString).searchParams.get("connect_timeout");
  } catch {
    // Not a URL (a socket path, key=value form): the default applies.
  }
  const seconds = value === null ? NaN : Number(value);
  // libpq treats 0 (and negative values) as "wait forever", the trap this pool exists to avoid.
  return Number.isFinite(seconds) && seconds > 0
    ? Math.max(1, Math.round(seconds * 1000))
    : DEFAULT_CONNECT_TIMEOUT_MS;
}

/** How {@link createPool} sets up its connections. */
export interface CreatePoolOptions {
  /**
   * Whether each new connection gets pawl's session settings (see connectHook). Default true. False for
   * a transaction pooler (`preparedStatements: false`): a `SET` there lands on whichever server connection
   * the pooler hands out, stays on it for other clients, and is not on the next one pawl gets.
   */
  sessionSettings?: boolean;
}

/**
 * Creates a pool for pawl. A `pglite://` URL gives the embedded database instead (docs/embedded.md): a
 * pool of one connection to PGlite in this process, whatever `max` says.
 *
 * @throws PawlError `INVALID_CONFIG` when the embedded URL is malformed or its directory is in use.
 */
export function createPool(
  connectionString: string,
  max: number,
  logger: Logger,
  name = "pawl",
  options: CreatePoolOptions = {},
): pg.Pool {
  if (isEmbeddedUrl(connectionString)) return new EmbeddedPool(connectionString, logger);
  const pool = new pg.Pool({
    connectionString,
    max,
    connectionTimeoutMillis: connectTimeoutOf(connectionString),
    idleTimeoutMillis: 30_000,
    keepAlive: true,
    application_name: name,
    ...(options.sessionSettings === false ? {} : { onConnect: connectHook(logger) }),
  });
  watchIdleErrors(pool, logger);
  return pool;
}
