/**
 * The PostgreSQL URL a user's own pool connects with. pawl needs it for the connections it cannot take
 * from the pool: the postgres coordinator's LISTEN connection is held for the node's lifetime, so it
 * opens its own. Without this, a node given `{ pool }` and no `connectionString` would LISTEN on the
 * default database while its jobs live in the pool's, and no wakeup would ever arrive, with no error.
 */
import type pg from "pg";

/**
 * The pool's URL: its `connectionString` when it was built from one, else one made from its host, port,
 * user, password and database fields. `undefined` when the pool's settings cannot be written as a URL
 * (a password given as a function, a database name with ? or #), so the caller falls back to `DATABASE_URL` or asks for
 * `connectionString`.
 *
 * @example
 * poolConnectionString(new pg.Pool({ host: "db", database: "app" })); // "postgres://db/app"
 */
export function poolConnectionString(pool: pg.Pool): string | undefined {
  const o = (pool as { options?: pg.PoolConfig }).options;
  if (o === undefined || o === null || typeof o !== "object") return undefined;
  if (typeof o.connectionString === "string" && o.connectionString.length > 0) return o.connectionString;
  const text = (v: unknown): v is string => typeof v === "string" && v.length > 0;
  if (o.password !== undefined && !text(o.password)) return undefined;
  if (o.host !== undefined && !text(o.host)) return undefined;
  if (![o.host, o.user, o.database, o.port].some((v) => v !== undefined)) return undefined;
  // A socket directory (a host starting with /) goes in the query, as libpq and pg read it.
  const socket = text(o.host) && o.host.startsWith("/");
  const host = text(o.host) && !socket ? o.host : "";
  const auth = text(o.user)
    ? encodeURIComponent(o.user) + (text(o.password) ? `:${encodeURIComponent(o.password)}` : "") + "@"
    : "";
  const port = o.port !== undefined && o.port !== null ? `:${String(o.port)}` : "";
  // pg reads the path with decodeURI, which leaves %3F and %23 as they are: such a name has no URL.
  if (text(o.database) && /[?#]/.test(o.database)) return undefined;
  const database = text(o.database) ? `/${encodeURI(o.database)}` : "";
  const query = socket ? `?host=${encodeURIComponent(o.host as string)}` : "";
  return `postgres://${auth}${host}${port}${database}${query}`;
}
