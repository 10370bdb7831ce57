/**
 * The database URL the CLI connects with, checked before any connection is tried. pg reads a string it
 * cannot parse as a URL relative to `postgres://base`, so `--database-url "not a url"` used to end in
 * `getaddrinfo ENOTFOUND base`, which names neither the option nor the problem. The message names where
 * the URL came from and never repeats it, since it may carry a password.
 */
import { UsageError } from "./args.js";

/** Where the URL came from, for the message. */
export type DatabaseUrlSource = "--database-url" | "DATABASE_URL";

const protocols = new Set(["postgres:", "postgresql:", "socket:"]);

/**
 * Checks a PostgreSQL connection URL: `postgres://` or `postgresql://` with a host (or a `host` query
 * parameter), a `socket:` URL, or a Unix socket directory (a path starting with `/`).
 *
 * @throws UsageError naming `source` when it is none of these.
 * @example
 * ```ts
 * checkDatabaseUrl("postgres://app@db:5432/jobs", "--database-url"); // fine
 * checkDatabaseUrl("not a url", "DATABASE_URL"); // UsageError: DATABASE_URL is not a PostgreSQL URL ...
 * ```
 */
export function checkDatabaseUrl(raw: string, source: DatabaseUrlSource): string {
  if (raw.startsWith("/")) return raw;
  const why = urlProblem(raw);
  if (why !== null) {
    throw new UsageError(
      `${source} is not a PostgreSQL URL (${why}); use postgres://user:password@host:5432/database`,
    );
  }
  return raw;
}

function urlProblem(raw: string): string | null {
  if (raw.trim() === "") return "it is empty";
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return "it does not parse as a URL";
  }
  if (!protocols.has(url.protocol)) return `its scheme is ${url.protocol} instead of postgres:`;
  if (url.protocol !== "socket:" && url.hostname === "" && !url.searchParams.has("host")) {
    return "it names no host";
  }
  return null;
}
