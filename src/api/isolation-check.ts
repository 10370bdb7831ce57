/**
 * The isolation check a node makes at `start()` (docs/deployment.md#isolation-level). pawl's transactions
 * pin `read committed` themselves, and its own pool pins it for single statements too; a pool that carries
 * no session settings (`preparedStatements: false`, behind a transaction pooler) or the user's own pool
 * runs single statements at the role's or database's default. Under `repeatable read` or `serializable`
 * the keyed claim would read a key's count in a snapshot older than the key's lock and start more jobs
 * than the key's limit, and claims would fail with serialization errors: the node refuses to start,
 * saying what to set, rather than run so.
 */
import { PawlError } from "../core/errors.js";
import type { Queryable } from "../db/sql.js";

/**
 * Checks that a single statement on `db` runs at `read committed`.
 *
 * @throws PawlError `INVALID_CONFIG` naming the level found and the setting to change.
 */
export async function checkIsolation(db: Queryable): Promise<void> {
  const res = await db.query<{ level: string; role: string }>(
    "SELECT current_setting('transaction_isolation') AS level, current_user AS role",
  );
  const row = res.rows[0];
  if (!row || row.level === "read committed") return;
  throw new PawlError(
    "INVALID_CONFIG",
    `this connection runs statements at "${row.level}" (default_transaction_isolation), where pawl's ` +
      `claims and concurrency limits are not exact; pawl pins "read committed" only on a pool of its own ` +
      `with session settings: set it for the role (ALTER ROLE "${row.role.replaceAll('"', '""')}" SET ` +
      `default_transaction_isolation = 'read committed') or on your pool (docs/deployment.md#isolation-level)`,
  );
}
