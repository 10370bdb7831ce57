/**
 * What every pool pawl creates shares, whether it reaches a PostgreSQL server or the embedded database
 * (src/embedded/embedded-pool.ts): the settings asked of each new connection, and the listener that keeps
 * an idle client's error from crashing the host.
 */
import type pg from "pg";
import type { Logger } from "../logger.js";
import { reportConnectionFault } from "./held-client.js";

/**
 * The session settings of a new connection, as pg-pool's `onConnect` hook (awaited before the client is
 * handed out).
 *
 * pawl's hot statements are named (prepared once per connection). PostgreSQL's default re-plans a
 * prepared statement on each of its first five runs and then keeps re-planning it whenever the generic
 * plan's estimate looks worse, which for the claim statements it always does: planning then cost more
 * than running (0.7 ms against 0.4 ms for a claim after a wakeup). Their plans do not depend on the
 * values (index range scans by status, priority and time), so the generic plan is the one we want.
 * Set by a query rather than a startup option, which poolers such as PgBouncer refuse by default; a
 * refusal only costs speed. A pool the user brings keeps its own setting.
 */
export function connectHook(logger: Logger): (client: pg.ClientBase) => Promise<void> {
  return async (client) => {
    try {
      await client.query("SET plan_cache_mode = force_generic_plan");
    } catch (error) {
      logger.warn("could not set plan_cache_mode on a new connection", { error: String(error) });
    }
  };
}

/** Listens for an idle client's error (pg crashes the process on one nobody hears) and reports it. */
export function watchIdleErrors(pool: pg.Pool, logger: Logger): void {
  pool.on("error", (error) => {
    logger.warn("idle database connection failed", { error: String(error) });
    reportConnectionFault(pool, { source: "idle", error });
  });
}
