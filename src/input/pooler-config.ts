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

/**
 * The coordinator a server database gets when none is chosen: `auto` (LISTEN/NOTIFY when `pg-listen` is
 * installed), so a job enqueued by another process starts within milliseconds instead of at the next poll
 * (up to 60 s on an idle node). `none` only when pawl cannot tell where LISTEN should go: a user's pool
 * whose settings cannot be written as a URL, with neither `connectionString` nor `directConnectionString`
 * (a LISTEN on `DATABASE_URL` or the default database would hear nothing of the pool's jobs).
 *
 * @example
 * ```ts
 * defaultServerCoordinator({ pool: undefined, poolUrl: undefined, connectionString: undefined, direct: undefined }); // "auto"
 * ```
 */
export function defaultServerCoordinator(known: {
  pool: pg.Pool | undefined;
  poolUrl: string | undefined;
  connectionString: string | undefined;
  direct: string | undefined;
}): "auto" | "none" {
  if (known.pool === undefined) return "auto";
  return known.poolUrl !== undefined || known.connectionString !== undefined || known.direct !== undefined
    ? "auto"
    : "none";
}
