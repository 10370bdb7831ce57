/**
 * The privileges pawl's roles need, as SQL (`pawl grants <role>`, docs/deployment.md#roles). Migrations run
 * as the schema's owner; nodes, the CLI's write commands and the console's actions run as an application
 * role that may read and write pawl's rows but not change the schema; the CLI's read commands and a
 * read-only console can run as a reader. The statements are idempotent, and `ALTER DEFAULT PRIVILEGES`
 * extends them to the tables and functions later migrations create (when run by the owner), so the
 * grants do not have to be repeated after an upgrade.
 */
import { quoteSchema } from "../../db/schema-name.js";

/** What a role may do: `app` (nodes, enqueuers: read and write rows) or `reader` (reads only). */
export type GrantLevel = "app" | "reader";

/** Quotes a role name as an SQL identifier (any text; embedded quotes doubled). */
export function quoteRole(role: string): string {
  return `"${role.replaceAll('"', '""')}"`;
}

/**
 * The GRANT statements for `role` on `schema`, one per line, ending with `;`.
 *
 * @example
 * ```ts
 * grantsSql("pawl", "app_worker", "app");
 * // GRANT USAGE ON SCHEMA "pawl" TO "app_worker"; GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES ...
 * ```
 */
export function grantsSql(schema: string, role: string, level: GrantLevel): string {
  const s = quoteSchema(schema);
  const r = quoteRole(role);
  const tables = level === "app" ? "SELECT, INSERT, UPDATE, DELETE" : "SELECT";
  const lines = [
    `-- pawl: privileges of ${level === "app" ? "an application role (nodes, enqueuers, the console)" : "a read-only role (CLI reads, a read-only console)"} on schema ${s}.`,
    `-- Run as the schema's owner (the role that runs pawl migrate), after migrating. The role cannot change the schema.`,
    `GRANT USAGE ON SCHEMA ${s} TO ${r};`,
    `GRANT ${tables} ON ALL TABLES IN SCHEMA ${s} TO ${r};`,
    `ALTER DEFAULT PRIVILEGES IN SCHEMA ${s} GRANT ${tables} ON TABLES TO ${r};`,
  ];
  if (level === "app") {
    lines.push(
      // Job ids come from a sequence (nextval needs USAGE); the SQL enqueue functions (0007) need EXECUTE.
      `GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA ${s} TO ${r};`,
      `ALTER DEFAULT PRIVILEGES IN SCHEMA ${s} GRANT USAGE, SELECT ON SEQUENCES TO ${r};`,
      `GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA ${s} TO ${r};`,
      `ALTER DEFAULT PRIVILEGES IN SCHEMA ${s} GRANT EXECUTE ON FUNCTIONS TO ${r};`,
    );
  }
  return lines.join("\n") + "\n";
}
