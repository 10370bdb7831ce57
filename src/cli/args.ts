/**
 * A small argument layer over node:util parseArgs: option specs that also carry their help text, a
 * strict parse that turns node's parse errors into {@link UsageError}s, and converters for the value
 * shapes the commands take (integers, ids, ISO times, JSON). A value that cannot be read at all (`abc` as
 * an id, `ten` as a limit, a URL that is not one) is a usage error (exit 2); a value that reads fine but
 * pawl refuses (priority 101) is pawl's ValidationError (exit 1).
 */
import { parseArgs } from "node:util";
import { ValidationError } from "../core/errors.js";
import { validateJobId } from "../input/job-id.js";

/** Bad command-line input: main prints the message and the usage line and exits with 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

/** One option: its parseArgs shape plus a placeholder and a sentence for the help. */
export interface OptionSpec {
  type: "string" | "boolean";
  short?: string;
  /** Allow the option more than once (values collected in an array). */
  multiple?: boolean;
  /** The value placeholder in the help, e.g. `n` or `iso`. */
  value?: string;
  description: string;
}

/** Options by long name (without the dashes). */
export type OptionSpecs = Record<string, OptionSpec>;

/** The result of {@link parse}. */
export interface ParsedArgs {
  values: Record<string, string | boolean | (string | boolean)[] | undefined>;
  positionals: string[];
}

/** Parses `argv` strictly against `specs`. @throws UsageError for unknown options or missing values. */
export function parse(argv: readonly string[], specs: OptionSpecs): ParsedArgs {
  const options: Record<string, { type: "string" | "boolean"; short?: string; multiple?: boolean }> = {};
  for (const [name, s] of Object.entries(specs)) {
    options[name] = {
      type: s.type,
      ...(s.short ? { short: s.short } : {}),
      ...(s.multiple ? { multiple: true } : {}),
    };
  }
  try {
    const { values, positionals } = parseArgs({
      args: [...argv],
      options,
      allowPositionals: true,
      strict: true,
    });
    return { values: values as ParsedArgs["values"], positionals };
  } catch (error) {
    throw toUsageError(error);
  }
}

function toUsageError(error: unknown): Error {
  const e = error as { code?: unknown; message?: unknown };
  if (typeof e.code !== "string" || !e.code.startsWith("ERR_PARSE_ARGS_")) return error as Error;
  const message = String(e.message);
  const option = /'(-[^' ]+)/.exec(message)?.[1];
  switch (e.code) {
    case "ERR_PARSE_ARGS_UNKNOWN_OPTION":
      return new UsageError(`unknown option ${option ?? message}`);
    case "ERR_PARSE_ARGS_INVALID_OPTION_VALUE":
      return new UsageError(
        message.includes("argument missing") || message.includes("ambiguous")
          ? `option ${option ?? ""} needs a value`
          : `option ${option ?? ""} takes no value`,
      );
    default:
      return new UsageError(message);
  }
}

/** A string option's value (the last one when given twice), or undefined. */
export function stringOpt(args: ParsedArgs, name: string): string | undefined {
  const v = args.values[name];
  const last = Array.isArray(v) ? v.at(-1) : v;
  return typeof last === "string" ? last : undefined;
}

/** Whether a boolean option was given. */
export function flagOpt(args: ParsedArgs, name: string): boolean {
  return args.values[name] === true;
}

/**
 * Reads an integer option (digits, optional minus sign). With bounds, a value outside them is a usage
 * error too; without, pawl checks the range itself.
 *
 * @throws UsageError when the text is not an integer or out of the given bounds.
 */
export function intValue(option: string, raw: string, bounds?: { min: number; max: number }): number {
  const n = /^-?\d+$/.test(raw.trim()) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(n))
    throw new UsageError(`--${option} takes an integer, not ${JSON.stringify(raw)}`);
  if (bounds && (n < bounds.min || n > bounds.max)) {
    throw new UsageError(`--${option} takes an integer from ${bounds.min} to ${bounds.max}, not ${n}`);
  }
  return n;
}

/**
 * Reads an ISO 8601 time such as `2030-01-01T09:00:00Z` (a date alone means midnight UTC).
 *
 * @throws UsageError when the text is not one.
 */
export function timeValue(option: string, raw: string): Date {
  const d = new Date(raw);
  if (!/^\d{4}-\d{2}-\d{2}/.test(raw) || Number.isNaN(d.getTime())) {
    throw new UsageError(
      `--${option} takes an ISO 8601 time such as 2030-01-01T09:00:00Z, not ${JSON.stringify(raw)}`,
    );
  }
  return d;
}

/**
 * Reads a job or flow id (a positive integer) with pawl's own id check, so the CLI and the API agree.
 *
 * @param what the argument as the usage line names it, e.g. `<id>`.
 * @throws UsageError naming the argument when the text is not an id.
 */
export function idValue(what: string, raw: string): string {
  try {
    return validateJobId(raw);
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    throw new UsageError(`${what} takes an id (a positive integer), not ${JSON.stringify(raw)}`);
  }
}

/** Parses a JSON argument. @throws UsageError naming the argument when it is not JSON. */
export function jsonValue(what: string, raw: string): unknown {
  try {
    return JSON.parse(raw) as unknown;
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    throw new UsageError(`${what} is not valid JSON (${why}); quote it for the shell, e.g. '{"to":"a@b.c"}'`);
  }
}

/** Splits a comma-separated list, dropping empty items. */
export function listValue(raw: string): string[] {
  return raw
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/** The `--json` switch most commands take. */
export const jsonOption: OptionSpecs = {
  json: { type: "boolean", description: "print JSON instead of text" },
};
