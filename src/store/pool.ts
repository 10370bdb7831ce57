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
  pool.on("error", (error) => logger.warn("idle database connection failed", { error: String(error) }));
  return pool;
}
