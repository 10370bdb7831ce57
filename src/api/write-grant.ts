/**
 * The operator actions a console or a script runs through the client (cancel, dead letter retry and
 * purge, pausing and resuming a job) write rows. Run by a role that may only read (the read-only role of
 * docs/deployment.md#roles), PostgreSQL answers a bare "permission denied for table ...". This turns that
 * into a {@link PrivilegeError} that names the action, the role and the GRANT the schema's owner would run,
 * so the console can say what is missing instead of failing.
 */
import type { Queryable } from "../db/sql.js";
import { asPrivilegeError, isPermissionDenied } from "../db/privilege-error.js";
import { tableGrant } from "../store/migrations/grants-sql.js";

/** Runs a write action; a permission denial becomes INSUFFICIENT_PRIVILEGE naming the grant. */
export type WriteAction = <T>(action: string, fn: () => Promise<T>) => Promise<T>;

/**
 * The {@link WriteAction} of a client on `db` and `schema`.
 *
 * @example
 * ```ts
 * const write = writeAction(pool, "pawl");
 * await write("cancel", () => store.cancel(id)); // as a reader: PrivilegeError, grant "GRANT SELECT, INSERT, ..."
 * ```
 */
export function writeAction(db: Queryable, schema: string): WriteAction {
  return async (action, fn) => {
    try {
      return await fn();
    } catch (error) {
      if (!isPermissionDenied(error)) throw error;
      // Only on the refusal path: which role was refused, so the grant names it.
      const role = await db
        .query<{ role: string }>("SELECT current_user AS role")
        .then((r) => r.rows[0]?.role ?? "<role>")
        .catch(() => "<role>");
      const grant = tableGrant(schema, role, "app");
      throw asPrivilegeError(
        error,
        `${action} writes pawl's rows, which role "${role}" may not: it needs the application role's ` +
          `grants ("pawl grants ${role}" prints them; the schema's owner runs ${grant})`,
        grant,
      );
    }
  };
}
