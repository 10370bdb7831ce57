/**
 * What every pool pawl creates shares, whether it reaches a PostgreSQL server or the embedded database
 * (src/db/embedded/embedded-pool.ts): the settings asked of each new connection, and the listener that keeps
 * an idle client's error from crashing the host.
 */
import type pg from "pg";
import type { Logger } from "../core/logger.js";
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
 *
 * JIT compilation is off: pawl's statements are short, and PostgreSQL decides on JIT from the plan's cost
 * estimate alone, so a statement that reads the backlog (orphan recovery since the lease claim, migration
 * 0008, has no index) was compiled on every run: 400-1,000 ms of compiling against 50 ms of reading
 * 200,000 rows.
 *
 * The isolation level is pinned to read committed, whatever the role's or database's
 * `default_transaction_isolation` says. pawl's single statements rely on it: a claim's FOR UPDATE SKIP
 * LOCKED and a key count's UPDATE re-read a row another transaction changed, where repeatable read fails
 * with a serialization error, and the keyed claim (migration 0013) reads a key's count after taking the
 * key's lock, which sees the previous holder's commit only with a snapshot per statement. Transactions
 * pin it themselves (BEGIN ISOLATION LEVEL READ COMMITTED, db/held-client.ts).
 *
 * Set by queries rather than startup options, which poolers such as PgBouncer refuse by default; a
 * refusal only costs speed. A pool the user brings keeps its own settings.
 */
export function connectHook(logger: Logger): (client: pg.ClientBase) => Promise<void> {
  return async (client) => {
    for (const [name, value] of sessionSettings) {
      try {
        await client.query(`SET ${name} = ${value}`);
      } catch (error) {
        logger.warn(`could not set ${name} on a new connection`, { error: String(error) });
      }
    }
  };
}

/** The settings {@link connectHook} asks of each connection. */
const sessionSettings: readonly (readonly [string, string])[] = [
  ["plan_cache_mode", "force_generic_plan"],
  ["jit", "off"],
  ["default_transaction_isolation", "'read committed'"],
];

/** Listens for an idle client's error (pg crashes the process on one nobody hears) and reports it. */
export function watchIdleErrors(pool: pg.Pool, logger: Logger): void {
  pool.on("error", (error) => {
    logger.warn("idle database connection failed", { error: String(error) });
    reportConnectionFault(pool, { source: "idle", error });
  });
}
