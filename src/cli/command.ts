/**
 * The shape every CLI command shares. A command declares its words (`["dlq", "retry"]`), its usage and
 * options, and a `run` that receives parsed arguments and a context; main.ts finds it in the command
 * table, parses its arguments strictly, and owns help, exit codes and closing the connection. Adding a
 * command is one file under commands/ plus one line in commands/index.ts.
 */
import type { PawlClient } from "../api/client.js";
import type { OptionSpecs, ParsedArgs } from "./args.js";

/** Where the CLI writes, and the environment it reads. Tests pass their own to capture output. */
export interface CliIo {
  /** Receives stdout text (each call ends with a newline). */
  stdout: (s: string) => void;
  /** Receives stderr text (each call ends with a newline). */
  stderr: (s: string) => void;
  /** The environment (PAWL_SCHEMA, DATABASE_URL); default `process.env`. */
  env?: NodeJS.ProcessEnv;
}

/** What a running command gets besides its arguments. */
export interface CommandContext {
  /** Writes one line (or block) to stdout. */
  out(text: string): void;
  /** Writes one line (or block) to stderr. */
  err(text: string): void;
  /** The pawl instance for the chosen schema and database, created (and later closed) on first use. */
  pawl(): PawlClient;
}

/** One command of the table. */
export interface Command {
  /** The words that select it, e.g. `["jobs"]` or `["dlq", "list"]`. */
  words: readonly string[];
  /** One line for the command list. */
  summary: string;
  /** The usage line after `pawl`, e.g. `jobs [--status S[,S]] ...`. */
  usage: string;
  /** Longer help: what it does and what each option means. */
  details: string;
  /** The command's own options (the global ones are added by main). */
  options: OptionSpecs;
  /** How many positional arguments it takes. */
  positionals: { min: number; max: number; names: string };
  /** Runs the command and returns the exit code. Throws UsageError for bad arguments, PawlError from pawl. */
  run(ctx: CommandContext, args: ParsedArgs): Promise<number>;
}
