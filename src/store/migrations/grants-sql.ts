/**
 * The privileges pawl's roles need, as SQL (`pawl grants <role>`, docs/deployment.md#roles). Migrations run
 * as the schema's owner; nodes, the CLI's write commands and the console's actions run as an application
 * role that may read and write pawl's rows but not change the schema (nor its migration record); the CLI's
 * read commands and a read-only console can run as a reader; a service that only enqueues gets an
 * enqueue-only role. The statements are idempotent, and `ALTER DEFAULT PRIVILEGES` extends the app and
 * reader grants to the tables and functions later migrations create (when run by the owner), so the grants
 * do not have to be repeated after an upgrade. Every function a role calls is granted by name or by
 * schema, so the roles work where a DBA revoked EXECUTE from PUBLIC.
 */
import { quoteSchema } from "../../db/schema-name.js";

/**
 * What a role may do: `app` (nodes, the CLI's writes, the console's actions: read and write rows), `reader`
 * (reads only) or `enqueue` (enqueue jobs, through the API or the SQL `enqueue()` function, and nothing
 * else).
 */
export type GrantLevel = "app" | "reader" | "enqueue";

/** Quotes a role name as an SQL identifier (any text; embedded quotes doubled). */
export function quoteRole(role: string): string {
  return `"${role.replaceAll('"', '""')}"`;
}

/**
 * The functions pawl's reads call (explain and the key counts read a key's running jobs; a job's pause
 * rule): what a reader needs beside SELECT when EXECUTE is revoked from PUBLIC.
 */
const readFunctions = ["pawl_key_running(text)", "pawl_pause_rule(text, text)"];

/** The functions an enqueue calls: the SQL `enqueue()` and its checks, and the pause rule its trigger reads. */
const enqueueFunctions = [
  "enqueue(text, jsonb, jsonb)",
  "pawl_utf16_length(text)",
  "pawl_wakeup_channel(text)",
  "pawl_refuse(text, text)",
  "pawl_describe(jsonb)",
  "pawl_pause_rule(text, text)",
];

const header: Record<GrantLevel, string> = {
  app: "an application role (nodes, the CLI's writes, the console's actions)",
  reader: "a read-only role (CLI reads, a read-only console)",
  enqueue: "an enqueue-only role (enqueue jobs, and nothing else)",
};

/**
 * The grant on pawl's tables of an `app` or `reader` role: the line of {@link grantsSql} a write refused
 * for want of privileges names (src/api/write-grant.ts).
 *
 * @example
 * ```ts
 * tableGrant("pawl", "ops", "app"); // GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "pawl" TO "ops";
 * ```
 */
export function tableGrant(schema: string, role: string, level: "app" | "reader"): string {
  const tables = level === "app" ? "SELECT, INSERT, UPDATE, DELETE" : "SELECT";
  return `GRANT ${tables} ON ALL TABLES IN SCHEMA ${quoteSchema(schema)} TO ${quoteRole(role)};`;
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
  const lines = [
    `-- pawl: privileges of ${header[level]} on schema ${s}.`,
    `-- Run as the schema's owner (the role that runs pawl migrate), after migrating. The role cannot change the schema.`,
    `GRANT USAGE ON SCHEMA ${s} TO ${r};`,
  ];
  if (level === "enqueue") {
    lines.push(
      // The insert, and SELECT for its RETURNING and for the live row a unique key returns instead. A paused
      // queue's trigger (0004) turns the new row PAUSED in the inserting statement: these three columns.
      `GRANT SELECT, INSERT ON ${s}.scheduler_job_queue TO ${r};`,
      `GRANT UPDATE (status, paused_by, updated_at) ON ${s}.scheduler_job_queue TO ${r};`,
      `GRANT SELECT ON ${s}.scheduler_pause TO ${r};`,
      // Job ids come from the queue's sequence; a client checks the schema's version before its first write.
      `GRANT USAGE ON SEQUENCE ${s}.scheduler_job_queue_id_seq TO ${r};`,
      `GRANT SELECT ON ${s}.pawl_migrations TO ${r};`,
      `GRANT EXECUTE ON FUNCTION ${enqueueFunctions.map((f) => `${s}.${f}`).join(", ")} TO ${r};`,
    );
    return lines.join("\n") + "\n";
  }
  const tables = level === "app" ? "SELECT, INSERT, UPDATE, DELETE" : "SELECT";
  lines.push(
    tableGrant(schema, role, level),
    `ALTER DEFAULT PRIVILEGES IN SCHEMA ${s} GRANT ${tables} ON TABLES TO ${r};`,
  );
  if (level === "app") {
    lines.push(
      // The migration record is the owner's: a role that could write it could make pawl skip a migration.
      `REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON ${s}.pawl_migrations FROM ${r};`,
      // Job ids come from a sequence (nextval needs USAGE); the SQL enqueue functions (0007) need EXECUTE.
      `GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA ${s} TO ${r};`,
      `ALTER DEFAULT PRIVILEGES IN SCHEMA ${s} GRANT USAGE, SELECT ON SEQUENCES TO ${r};`,
      `GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA ${s} TO ${r};`,
      `ALTER DEFAULT PRIVILEGES IN SCHEMA ${s} GRANT EXECUTE ON FUNCTIONS TO ${r};`,
    );
  } else {
    lines.push(`GRANT EXECUTE ON FUNCTION ${readFunctions.map((f) => `${s}.${f}`).join(", ")} TO ${r};`);
  }
  return lines.join("\n") + "\n";
}
