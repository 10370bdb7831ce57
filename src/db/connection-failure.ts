/**
 * Tells a failure of the connection (server down or restarting, backend terminated, socket reset, the
 * pool's connect timeout) from a failure of the statement (a constraint, a syntax error), and turns the
 * former into a {@link DatabaseUnavailableError}, so callers get one typed error for "the database is not
 * there right now" whichever layer of pg noticed it.
 */
import { DatabaseUnavailableError } from "../core/errors.js";

/** SQLSTATEs that mean the connection, not the statement, failed. */
const connectionStates = new Set([
  "57P01", // admin_shutdown (pg_terminate_backend, fast shutdown)
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now (starting up, shutting down, recovering)
]);

/**
 * SQLSTATEs of a server that cannot take writes now: a standby still in recovery, or a primary being
 * demoted, reached through an endpoint that has not moved yet (a failover). The statement wrote nothing.
 */
const notWritableStates = new Set([
  "25006", // read_only_sql_transaction (a hot standby, default_transaction_read_only)
  "57P03", // cannot_connect_now (starting up, shutting down, recovering)
]);

/** Socket errors of a connection attempt: the statement was never sent. */
const connectCodes = new Set(["ECONNREFUSED", "ENOTFOUND", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN"]);

/** Socket errors of an established connection. */
const socketCodes = new Set(["ECONNRESET", "EPIPE", "ETIMEDOUT", "ECONNABORTED"]);

/** pg's and pg-pool's own messages for a connection that never came or went away. */
const connectMessages = [/timeout exceeded when trying to connect/i, /connection timeout/i];
const lostMessages = [/Connection terminated/i, /not queryable/i];

/**
 * What kind of connection failure `error` is: `connect` (nothing was sent), `lost` (the connection broke
 * after a statement may have been sent), or null when it is not a connection failure at all.
 */
export function connectionFailureKind(error: unknown): "connect" | "lost" | null {
  if (error instanceof DatabaseUnavailableError) return error.maybeWritten ? "lost" : "connect";
  if (!(error instanceof Error)) return null;
  const { code } = error as { code?: unknown };
  if (typeof code === "string") {
    if (notWritableStates.has(code) || connectCodes.has(code)) return "connect";
    // Class 08 is "connection exception" (08001 cannot establish, 08006 failure, ...).
    if (connectionStates.has(code) || socketCodes.has(code) || code.startsWith("08")) return "lost";
  }
  if (connectMessages.some((m) => m.test(error.message))) return "connect";
  if (lostMessages.some((m) => m.test(error.message))) return "lost";
  return null;
}

/**
 * Whether a connection that returned `error` must be dropped rather than used again: its connection
 * failed, or its server is read-only or recovering (25006, 57P03). After a failover such a server stays
 * read-only for good, and a pool that kept the connection would hand out the old server for as long as the
 * connection lived; a new connection goes wherever the endpoint points now.
 */
export function poisonsConnection(error: unknown): boolean {
  return connectionFailureKind(error) !== null;
}

/** `error` as a {@link DatabaseUnavailableError} when it is a connection failure, else `error` itself. */
export function asDatabaseUnavailable(error: unknown): unknown {
  if (error instanceof DatabaseUnavailableError) return error;
  const kind = connectionFailureKind(error);
  if (kind === null) return error;
  const reason = error instanceof Error ? error.message : String(error);
  return new DatabaseUnavailableError(
    kind === "connect"
      ? `pawl: the database is unreachable (${reason}); nothing was written`
      : `pawl: the database connection failed during the operation (${reason}); it may or may not have been written`,
    kind === "lost",
    { cause: error },
  );
}
