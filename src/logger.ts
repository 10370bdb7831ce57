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
    const entry = { time: new Date().toISOString(), level: l, message, ...bound, ...fields };
    let line: string;
    try {
      line = JSON.stringify(entry);
    } catch {
      // A field JSON cannot write (a BigInt, a cycle) must not turn a log line into a throw.
      line = JSON.stringify({ time: entry.time, level: l, message, fields: "[unserialisable]" });
    }
    process.stderr.write(line + "\n");
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

/**
 * Wraps a host's logger so that pawl's logging can never throw into pawl: a logger method that throws
 * (a broken transport, a field it cannot serialise) drops that line, and a `child` that throws or returns
 * something that is not a logger falls back to the parent with the fields merged into each line.
 *
 * @example
 * ```ts
 * const log = guardLogger(hostLogger);
 * log.warn("never throws"); // even if hostLogger.warn does
 * ```
 */
export function guardLogger(logger: Logger, bound: LogFields = {}): Logger {
  const hasBound = Object.keys(bound).length > 0;
  const call =
    (level: Level) =>
    (message: string, fields?: LogFields): void => {
      try {
        logger[level](message, hasBound ? { ...bound, ...fields } : fields);
      } catch {
        // Logging is best effort: the host's logger failing is not pawl's error to raise.
      }
    };
  return {
    debug: call("debug"),
    info: call("info"),
    warn: call("warn"),
    error: call("error"),
    child: (fields) => {
      try {
        const child = logger.child(fields);
        if (isLogger(child)) return guardLogger(child, bound);
      } catch {
        // fall through: the parent with the fields bound
      }
      return guardLogger(logger, { ...bound, ...fields });
    },
  };
}

function isLogger(value: unknown): value is Logger {
  if (typeof value !== "object" || value === null) return false;
  const v = value as Record<string, unknown>;
  return ["debug", "info", "warn", "error", "child"].every((k) => typeof v[k] === "function");
}
