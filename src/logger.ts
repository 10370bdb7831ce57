/**
 * The logging seam. pawl never writes to the console on its own except through {@link consoleLogger};
 * hosts pass their own logger (pino, winston, ...) by adapting it to this four-method shape.
 */

/** Structured fields attached to a log line. */
export type LogFields = Record<string, unknown>;

/** The logger pawl writes to. */
export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  /** Returns a logger whose lines carry `fields` too. */
  child(fields: LogFields): Logger;
}

type Level = "debug" | "info" | "warn" | "error";
const order: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/**
 * A logger that prints one JSON line per entry to stderr, at `level` and above.
 *
 * @example
 * ```ts
 * const log = consoleLogger("warn").child({ nodeId: "a" });
 * ```
 */
export function consoleLogger(level: Level = "info", bound: LogFields = {}): Logger {
  const write = (l: Level, message: string, fields?: LogFields): void => {
    if (order[l] < order[level]) return;
    process.stderr.write(
      JSON.stringify({ time: new Date().toISOString(), level: l, message, ...bound, ...fields }) + "\n",
    );
  };
  return {
    debug: (m, f) => write("debug", m, f),
    info: (m, f) => write("info", m, f),
    warn: (m, f) => write("warn", m, f),
    error: (m, f) => write("error", m, f),
    child: (fields) => consoleLogger(level, { ...bound, ...fields }),
  };
}

/** A logger that drops everything (the default in tests). */
export const silentLogger: Logger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
  child: () => silentLogger,
};
