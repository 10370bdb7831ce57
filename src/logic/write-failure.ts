/**
 * Why a batched write failed, and so what to do about it. A statement PostgreSQL refuses because of the
 * values it carries fails the same way every time it is sent again: retrying it would stall every
 * outcome behind it for good, so the batch is split to find the bad value instead. Anything else (a
 * dropped connection, a restarting server, a timeout, a deadlock) may pass next time and is retried with
 * backoff.
 */

/**
 * SQLSTATE classes that blame the statement's values: 22 data exception (a NUL or lone surrogate in
 * jsonb, a number out of range), 23 integrity constraint violation, 54 program limit exceeded (JSON
 * nested too deep, a value too large).
 */
const dataClasses = new Set(["22", "23", "54"]);

/** How a failed write is handled: split to isolate a bad value (`data`), or retried later (`transient`). */
export type WriteFailure = "data" | "transient";

/**
 * Classifies a write's error by its SQLSTATE (`error.code`, as node-postgres reports it). An error
 * without one (a socket error, a client-side timeout) is transient.
 *
 * @example
 * ```ts
 * writeFailure({ code: "22P05" }); // "data": unsupported Unicode escape sequence
 * writeFailure({ code: "57P01" }); // "transient": terminating connection due to administrator command
 * writeFailure(new Error("Connection terminated unexpectedly")); // "transient"
 * ```
 */
export function writeFailure(error: unknown): WriteFailure {
  let code: unknown;
  try {
    code = (error as { code?: unknown } | null)?.code;
  } catch {
    return "transient";
  }
  return typeof code === "string" && /^[0-9A-Z]{5}$/.test(code) && dataClasses.has(code.slice(0, 2))
    ? "data"
    : "transient";
}
