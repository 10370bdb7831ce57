/**
 * The options for running behind a transaction pooler (docs/deployment.md#transaction-poolers): where the
 * connections that need a session go. Split from config.ts, which reads and validates everything else.
 */
import type pg from "pg";
import { ValidationError } from "../core/errors.js";
import { describeValue } from "../core/input-text.js";
import { usesEmbeddedDatabase } from "./embedded-config.js";

/** An unset or empty environment variable as undefined. */
export function emptyToUndefined(value: string | undefined): string | undefined {
  return value === undefined || value === "" ? undefined : value;
}

/**
 * Validates `directConnectionString`: a postgres URL, and not beside an embedded database.
 *
 * @throws ValidationError `INVALID_CONFIG` saying what to use instead.
 */
export function resolveDirectConnectionString(
  value: unknown,
  pool: pg.Pool | undefined,
  connectionString: string,
): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "string" || !/^postgres(ql)?:\/\//.test(value)) {
    throw new ValidationError(
      "INVALID_CONFIG",
      // The value is never repeated: it may carry a password.
      `invalid directConnectionString (${typeof value === "string" ? "not a postgres:// URL" : describeValue(value)}): ` +
        "use a postgres:// URL of a direct (session) connection to the same database",
    );
  }
  if (usesEmbeddedDatabase(pool, connectionString)) {
    throw new ValidationError(
      "INVALID_CONFIG",
      "directConnectionString is for a server behind a transaction pooler; an embedded database (pglite://) has no pooler: remove it",
    );
  }
  return value;
}
