/**
 * What the console answers when a page's read fails. Most failures are the console's or the database's
 * (500 with the message), but one is expected in normal use: a schema nobody migrated yet, as when the
 * demo serves its console while an embedded database boots, or an operator points a console at the wrong
 * schema. That answer is 503 with a Retry-After and the fix, not a 500 with PostgreSQL's bare message. A
 * value in the URL that pawl refuses (a ValidationError: a bad status, id or cursor) is a 400.
 */

import { ValidationError } from "../../src/core/errors.js";

/** A failed page's status, headers and plain-text body. */
export interface PageFailure {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** SQLSTATEs that mean pawl's tables are not there: undefined_table, invalid_schema_name. */
const notMigratedCodes = new Set(["42P01", "3F000"]);

/** The answer to a page whose read threw `error`. */
export function pageFailure(error: unknown): PageFailure {
  const message = error instanceof Error ? error.message : String(error);
  // A bad value in the URL (a status, an id, a cursor, text PostgreSQL cannot store): the request's fault.
  if (error instanceof ValidationError) return { status: 400, headers: {}, body: `console: ${message}\n` };
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === "string" && notMigratedCodes.has(code)) {
    return {
      status: 503,
      headers: { "Retry-After": "2" },
      body:
        `console: the schema is not migrated yet (${message}); ` +
        `run pawl.migrate() or "pawl migrate" for it, then reload\n`,
    };
  }
  return { status: 500, headers: {}, body: `console: ${message}\n` };
}
