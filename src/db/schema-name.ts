/**
 * The one place a schema name enters SQL. Names are validated against a conservative pattern and then
 * double-quoted, so a bad name is a clear error instead of an injection or a confusing syntax error.
 */
import { ValidationError } from "../core/errors.js";

const pattern = /^[a-z_][a-z0-9_]{0,62}$/;

/** The default schema, also read from `PAWL_SCHEMA`. */
export const defaultSchema = "pawl";

/**
 * Validates a schema name: lower-case letters, digits and underscores, starting with a letter or
 * underscore, at most 63 characters (PostgreSQL's identifier limit), and not a `pg_` system name.
 *
 * @throws ValidationError with code `INVALID_SCHEMA_NAME`.
 */
export function validateSchemaName(name: unknown): string {
  if (typeof name !== "string" || !pattern.test(name) || name.startsWith("pg_")) {
    throw new ValidationError(
      "INVALID_SCHEMA_NAME",
      `invalid schema name ${JSON.stringify(name)}: use 1-63 lower-case letters, digits or underscores, ` +
        `starting with a letter or underscore and not with pg_`,
    );
  }
  return name;
}

/** Returns the schema name as a quoted SQL identifier (validated first). */
export function quoteSchema(name: string): string {
  return `"${validateSchemaName(name)}"`;
}
