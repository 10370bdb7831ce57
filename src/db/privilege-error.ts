/**
 * PostgreSQL's `permission denied` (SQLSTATE 42501) as pawl's typed error, saying which role to use or
 * what to grant: a node run with the least-privilege role (docs/deployment.md#roles) that is asked to
 * migrate, or a role that was never granted the schema, should hear what to do, not PostgreSQL's bare
 * "permission denied for table scheduler_job_queue".
 */
import { PawlError } from "../core/errors.js";

/** Whether `error` is PostgreSQL's insufficient_privilege. */
export function isPermissionDenied(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === "42501";
}

/**
 * `error` as a PawlError `INSUFFICIENT_PRIVILEGE` when it is a permission denial, with `advice` (what to
 * run instead) after PostgreSQL's own message; any other error unchanged.
 *
 * @example
 * ```ts
 * try { await migrate(pool, "pawl"); }
 * catch (e) { throw asPrivilegeError(e, 'run "pawl migrate" as the schema\'s owner'); }
 * ```
 */
export function asPrivilegeError(error: unknown, advice: string, grant?: string): unknown {
  if (!isPermissionDenied(error)) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new PrivilegeError(`${message}: ${advice}`, grant, error);
}

/**
 * A permission denial as pawl's `INSUFFICIENT_PRIVILEGE`, with the SQL that would give the role what it
 * lacked when pawl knows it (`grant`), so a console or a CLI can show the statement to run as the owner.
 *
 * @example
 * ```ts
 * try { await pawl.cancel(id); }
 * catch (e) { if (e instanceof PrivilegeError && e.grant) show(`ask the owner to run: ${e.grant}`); }
 * ```
 */
export class PrivilegeError extends PawlError {
  /** The GRANT statement the role needs (run by the schema's owner), when known. */
  readonly grant: string | undefined;

  constructor(message: string, grant: string | undefined, cause: unknown) {
    super("INSUFFICIENT_PRIVILEGE", message, { cause });
    this.name = "PrivilegeError";
    this.grant = grant;
  }
}
