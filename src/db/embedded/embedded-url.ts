/**
 * The `pglite://` connection string: how a user asks for the embedded database wherever pawl takes a
 * PostgreSQL URL (createPawl's `connectionString`, `DATABASE_URL`). Parsed by hand rather than with `URL`,
 * because a relative directory (`pglite://./.pawl-data`) is not a host and `URL` would read it as one.
 */
import { resolve } from "node:path";
import { ValidationError } from "../../core/errors.js";

/** The scheme of an embedded database's connection string. */
export const EMBEDDED_SCHEME = "pglite://";

/** The connection string of an embedded database kept in memory (gone when the process ends). */
export const EMBEDDED_MEMORY_URL = "pglite://memory";

/** Where an embedded database keeps its data. */
export type EmbeddedLocation =
  | { kind: "memory" }
  /** `dataDir` is absolute, so the same directory always gives the same lock. */
  | { kind: "directory"; dataDir: string };

/**
 * Whether `connectionString` names an embedded database (starts with `pglite://`).
 *
 * @example
 * ```ts
 * isEmbeddedUrl("pglite://./.pawl-data"); // true
 * isEmbeddedUrl("postgres://127.0.0.1/app"); // false
 * ```
 */
export function isEmbeddedUrl(connectionString: unknown): connectionString is string {
  return typeof connectionString === "string" && connectionString.toLowerCase().startsWith(EMBEDDED_SCHEME);
}

/**
 * Reads a `pglite://` URL: `pglite://memory` keeps the data in memory; `pglite://<path>` keeps it in a
 * directory, relative to the working directory unless absolute (`pglite:///var/lib/app/pawl`). A
 * directory literally named `memory` is written `pglite://./memory`.
 *
 * @throws ValidationError `INVALID_CONFIG` for a URL with no location, or with a query or fragment (no
 *   option is read from the URL, and silently ignoring one would mislead).
 * @example
 * ```ts
 * parseEmbeddedUrl("pglite://memory"); // { kind: "memory" }
 * parseEmbeddedUrl("pglite://./.pawl-data"); // { kind: "directory", dataDir: "/home/me/app/.pawl-data" }
 * ```
 */
export function parseEmbeddedUrl(connectionString: string): EmbeddedLocation {
  if (!isEmbeddedUrl(connectionString)) {
    throw new ValidationError("INVALID_CONFIG", `not an embedded database URL: use ${EMBEDDED_SCHEME}...`);
  }
  const rest = connectionString.slice(EMBEDDED_SCHEME.length);
  if (rest === "memory") return { kind: "memory" };
  if (rest.length === 0) {
    throw new ValidationError(
      "INVALID_CONFIG",
      `an embedded database URL needs a location: ${EMBEDDED_MEMORY_URL}, or pglite://<directory>`,
    );
  }
  if (/[?#\0]/.test(rest)) {
    throw new ValidationError(
      "INVALID_CONFIG",
      "an embedded database URL takes no options (?, #) and no NUL: write pglite://<directory>",
    );
  }
  return { kind: "directory", dataDir: resolve(rest) };
}
