/**
/**
 * The logging seam. pawl writes to the console only through {@link consoleLogger}, which is also the
 * default at `warn` level: a failing claim or a lost connection must be visible without any setup, and
 * info lines are not a library's to print. Hosts pass their own logger, or `false` for silence (see
 * {@link resolveLogger}). pawl calls `level(message, fields)`: `console` and winston take that shape as
 * they are (see {@link HostLogger}; a missing `child` is made up by {@link guardLogger}), and pino, which
 * takes `(fields, message)`, is recognised and adapted by {@link pinoLogger}. Every line pawl logs has
 * connection URLs' passwords removed first (redact.ts): by {@link consoleLogger} on the line it writes, and
 * by {@link guardLogger} on the message and fields it hands to the host's logger.
 */
import { ValidationError } from "./errors.js";
import { redactText } from "./redact.js";

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

/**
 * What `logger` in the config accepts: a {@link Logger} whose `child` may be missing (`console` has none;
 * pawl then binds the fields itself, see {@link guardLogger}).
 *
 * @example
 * ```ts
 * const pawl = createPawl({ logger: console });
 * ```
 */
export type HostLogger = Omit<Logger, "child"> & { child?: (fields: LogFields) => unknown };

/** The part of a pino logger {@link pinoLogger} uses: `(fields, message)` methods and `child`. */
export interface PinoLike {
  debug(fields: LogFields, message: string): void;
  info(fields: LogFields, message: string): void;
  warn(fields: LogFields, message: string): void;
  error(fields: LogFields, message: string): void;
  child(fields: LogFields): PinoLike;
}

/**
 * Adapts a pino logger: pawl's `(message, fields)` becomes pino's `(fields, message)` (given to pino as
 * they are, pino would read the fields as format arguments and drop them), and `child` is pino's own, so
 * bound fields are serialised once by pino.
 *
 * @example
 * ```ts
 * import pino from "pino";
 * const pawl = createPawl({ logger: pinoLogger(pino()) });
 * ```
 */
export function pinoLogger(pino: PinoLike): Logger {
  return {
    debug: (m, f) => pino.debug(f ?? {}, m),
    info: (m, f) => pino.info(f ?? {}, m),
    warn: (m, f) => pino.warn(f ?? {}, m),
    error: (m, f) => pino.error(f ?? {}, m),
    child: (fields) => pinoLogger(pino.child(fields)),
  };
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
    const entry = {
      time: new Date().toISOString(),
      level: l,
      message: redactText(message),
      ...redactFields({ ...bound, ...fields }),
    };
    let line: string;
    try {
      line = JSON.stringify(entry);
    } catch {
      // A field JSON cannot write (a BigInt, a cycle) must not turn a log line into a throw.
      line = JSON.stringify({ time: entry.time, level: l, message, fields: "[unserialisable]" });
    }
    process.stderr.write(redactText(line) + "\n");
  };
  return {
    debug: (m, f) => write("debug", m, f),
    info: (m, f) => write("info", m, f),
    warn: (m, f) => write("warn", m, f),
    error: (m, f) => write("error", m, f),
    child: (fields) => consoleLogger(level, { ...bound, ...fields }),
  };
}

/**
 * `fields` with the passwords of connection URLs removed from string values and errors (one level
 * deep: pawl's own fields are flat). An error whose text holds a password is replaced by a copy
 * without it; any other value is passed as it is, so a host's serialisers still see their types.
 */
export function redactFields(fields: LogFields): LogFields {
  let out: LogFields | null = null;
  for (const [key, value] of Object.entries(fields)) {
    const clean = redactValue(value);
    if (clean !== value) (out ??= { ...fields })[key] = clean;
  }
  return out ?? fields;
}

function redactValue(value: unknown): unknown {
  if (typeof value === "string") {
    const clean = redactText(value);
    return clean === value ? value : clean;
  }
  if (value instanceof Error) {
    // An error's own properties can carry the URL too (Node's ERR_INVALID_URL keeps it as `input`).
    let own = "";
    try {
      own = JSON.stringify(value) ?? "";
    } catch {
      // unserialisable own properties: judged by message and stack
    }
    const text = `${value.message}\n${value.stack ?? ""}\n${own}`;
    if (redactText(text) === text) return value;
    const copy = new Error(redactText(value.message));
    copy.name = value.name;
    copy.stack = redactText(value.stack ?? "");
    const code = (value as { code?: unknown }).code;
    if (code !== undefined) Object.assign(copy, { code });
    return copy;
  }
  return value;
}

/** A logger that drops everything (`logger: false`). */
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
export function guardLogger(logger: HostLogger, bound: LogFields = {}): Logger {
  const hasBound = Object.keys(bound).length > 0;
  const call =
    (level: Level) =>
    (message: string, fields?: LogFields): void => {
      try {
        const all = hasBound ? { ...bound, ...fields } : fields;
        logger[level](redactText(message), all === undefined ? undefined : redactFields(all));
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
        const child = logger.child?.(fields);
        if (isLogger(child)) return guardLogger(child, bound);
      } catch {
        // fall through: the parent with the fields bound
      }
      return guardLogger(logger, { ...bound, ...fields });
    },
  };
}

/**
 * Whether `value` is a pino logger (pino itself, a child, Fastify's `request.log`): pino takes
 * `(fields, message)` and would drop pawl's fields as unused format arguments, so it is adapted. Told
 * apart by what only pino has: `bindings()` and the `levels.values` table.
 */
export function isPinoLogger(value: unknown): value is PinoLike {
  if (typeof value !== "object" || value === null) return false;
  const v = value as { bindings?: unknown; levels?: { values?: unknown } | null; child?: unknown };
  return (
    typeof v.bindings === "function" &&
    typeof v.child === "function" &&
    typeof v.levels === "object" &&
    v.levels !== null &&
    typeof v.levels.values === "object"
  );
}

/**
 * The logger pawl runs with, from the `logger` option: unset logs warnings and errors to stderr
 * ({@link consoleLogger} at `warn`), `false` drops everything, a pino logger is adapted
 * ({@link pinoLogger}), and any other {@link HostLogger} is used as it is. Every one but the silent logger
 * is wrapped by {@link guardLogger}, so logging never throws into pawl.
 *
 * @throws ValidationError `INVALID_CONFIG` for anything else (a string, `true`, an object without the
 *   four level methods).
 *
 * @example
 * ```ts
 * resolveLogger(undefined).warn("seen on stderr");
 * resolveLogger(false).error("seen by no one");
 * ```
 */
export function resolveLogger(logger: HostLogger | PinoLike | false | undefined): Logger {
  if (logger === false) return silentLogger;
  if (logger === undefined) return consoleLogger("warn");
  if (isPinoLogger(logger)) return guardLogger(pinoLogger(logger));
  const v = logger as unknown as Record<string, unknown> | null;
  if (
    typeof v !== "object" ||
    v === null ||
    !["debug", "info", "warn", "error"].every((k) => typeof v[k] === "function")
  ) {
    throw new ValidationError(
      "INVALID_CONFIG",
      "invalid logger: pass an object with debug, info, warn and error methods (console, pino, winston), " +
        "or false for no logging",
    );
  }
  return guardLogger(logger as HostLogger);
}

function isLogger(value: unknown): value is Logger {
  if (typeof value !== "object" || value === null) return false;
  const v = value as Record<string, unknown>;
  return ["debug", "info", "warn", "error", "child"].every((k) => typeof v[k] === "function");
}
