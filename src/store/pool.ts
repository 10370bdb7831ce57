/**
 * pawl's own connection pool, configured against pg's traps: a bounded connect timeout (pg waits forever
 * by default), TCP keep-alive, and an error listener so an idle client's error never crashes the host.
 * A client pawl has checked out is covered by store/held-client.ts instead; both report their faults on
 * the pool's CONNECTION_FAULT channel, which the runtime counts.
 */
import pg from "pg";
import type { Logger } from "../logger.js";
import { reportConnectionFault } from "./held-client.js";

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

/** Creates a pool for pawl. */
export function createPool(connectionString: string, max: number, logger: Logger, name = "pawl"): pg.Pool {
  const pool = new pg.Pool({
    connectionString,
    max,
    connectionTimeoutMillis: connectTimeoutOf(connectionString),
    idleTimeoutMillis: 30_000,
    keepAlive: true,
    application_name: name,
    // pawl's hot statements are named (prepared once per connection). PostgreSQL's default re-plans a
    // prepared statement on each of its first five runs and then keeps re-planning it whenever the generic
    // plan's estimate looks worse, which for the claim statements it always does: planning then cost more
    // than running (0.7 ms against 0.4 ms for a claim after a wakeup). Their plans do not depend on the
    // values (index range scans by status, priority and time), so the generic plan is the one we want.
    // Set by a query in pg-pool's connect hook (awaited before the client is handed out) rather than a
    // startup option, which poolers such as PgBouncer refuse by default; a refusal only costs speed. A
    // pool the user brings keeps its own setting.
    onConnect: async (client) => {
      try {
        await client.query("SET plan_cache_mode = force_generic_plan");
      } catch (error) {
        logger.warn("could not set plan_cache_mode on a new connection", { error: String(error) });
      }
    },
  });
  pool.on("error", (error) => {
    logger.warn("idle database connection failed", { error: String(error) });
    reportConnectionFault(pool, { source: "idle", error });
  });
  return pool;
}
