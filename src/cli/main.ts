/**
 * The `pawl` command line. main() picks a command from the table in commands/ by its leading words,
 * parses the rest strictly, runs it against one pawl instance, and maps outcomes to exit codes:
 * 0 done, 1 pawl refused (a PawlError, printed with its code) or the database failed, 2 bad arguments
 * (printed with the usage line: anything that cannot be read as what it stands for, ids and the database
 * URL included). User errors never print a stack trace; set PAWL_DEBUG=1 to see one for
 * unexpected errors.
 */
import { redactText } from "../core/redact.js";
import { createPawl } from "../index.js";
import { PawlError } from "../core/errors.js";
import { booleanEnv } from "../input/config.js";
import type { PawlClient } from "../api/client.js";
import { parse, stringOpt, UsageError } from "./args.js";
import type { CliIo, Command, CommandContext } from "./command.js";
import { commands } from "./commands/index.js";
import { checkDatabaseUrl } from "./database-url.js";
import { commandHelp, globalHelp, globalOptions, groupHelp } from "./help.js";
import { packageVersion } from "../core/package-version.js";

/** The commands that run without the schema check: the one that fixes it, and those that read no database. */
const schemaFree = new Set(["migrate", "inspect", "grants"]);

export type { CliIo } from "./command.js";

const defaultIo: CliIo = {
  stdout: (s) => void process.stdout.write(s),
  stderr: (s) => void process.stderr.write(s),
};

/** Global options that take a value, so the command words can be found before the strict parse. */
const valuedGlobals = new Set(
  Object.entries(globalOptions)
    .filter(([, s]) => s.type === "string")
    .map(([name]) => `--${name}`),
);

const groups = new Set(commands.filter((c) => c.words.length > 1).map((c) => c.words[0] as string));

/** Splits argv into the command's words and everything else (options and positionals, in order). */
function splitWords(argv: readonly string[]): { words: string[]; rest: string[]; help: boolean } {
  const words: string[] = [];
  const rest: string[] = [];
  let help = false;
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i] as string;
    if (token === "--") {
      rest.push(...argv.slice(i));
      break;
    }
    if (token.startsWith("-") && token.length > 1) {
      if (token === "--help" || token === "-h") help = true;
      rest.push(token);
      if (valuedGlobals.has(token) && i + 1 < argv.length) rest.push(argv[++i] as string);
    } else if (
      words.length === 0 ||
      (words.length === 1 && (groups.has(words[0] as string) || words[0] === "help")) ||
      (words.length === 2 && words[0] === "help" && groups.has(words[1] as string))
    ) {
      words.push(token);
    } else {
      rest.push(token);
    }
  }
  return { words, rest, help };
}

function findCommand(words: readonly string[]): Command | undefined {
  return commands.find((c) => c.words.length === words.length && c.words.every((w, i) => w === words[i]));
}

/** What went wrong, in one line: pg's AggregateErrors (one per address) have an empty message. */
function describe(error: unknown): string {
  if (error instanceof AggregateError && !error.message) {
    return [...new Set(error.errors.map((e: unknown) => (e instanceof Error ? e.message : String(e))))].join(
      "; ",
    );
  }
  if (error instanceof Error) return error.message || error.name;
  return String(error);
}

/**
 * Runs the CLI with `argv` (the arguments after `pawl`) and returns the exit code. Never throws and never
 * calls process.exit, so it can be tested in-process.
 *
 * @example
 * ```ts
 * const code = await main(["jobs", "--status", "DEAD", "--json"], { stdout: (s) => out.push(s), stderr: console.error });
 * ```
 */
export async function main(argv: string[], io: CliIo = defaultIo): Promise<number> {
  const env = io.env ?? process.env;
  const line = (write: (s: string) => void) => (text: string) =>
    write(text.endsWith("\n") ? text : `${text}\n`);
  const out = line(io.stdout);
  // Errors can quote a connection URL (a driver's message, a stack): its password never reaches the terminal.
  const err = line((text) => io.stderr(redactText(text)));
  let pawl: PawlClient | undefined;
  let usage = "pawl <command> [options]";
  let helpHint = "pawl --help";

  try {
    if (argv.length === 1 && (argv[0] === "--version" || argv[0] === "-V")) {
      out(packageVersion());
      return 0;
    }
    const split = splitWords(argv);
    const rest = split.rest;
    let { words, help } = split;
    if (words[0] === "help") {
      // `pawl help [command...]` is `pawl [command...] --help`.
      words = words.slice(1);
      help = true;
    }
    if (words.length === 0) {
      if (help) {
        out(globalHelp(commands));
        return 0;
      }
      throw new UsageError("missing command");
    }
    const group = words[0] as string;
    if (groups.has(group)) {
      usage = `pawl ${group} <command> [options]`;
      helpHint = `pawl ${group} --help`;
      const members = commands.filter((c) => c.words[0] === group);
      if (words.length === 1) {
        if (help) {
          out(groupHelp(group, members));
          return 0;
        }
        throw new UsageError(
          `missing ${group} command; use one of ${members.map((c) => c.words[1]).join(", ")}`,
        );
      }
    }
    const command = findCommand(words);
    if (!command) throw new UsageError(`unknown command "${words.join(" ")}"`);
    usage = `pawl ${command.usage}`;
    helpHint = `pawl ${command.words.join(" ")} --help`;
    if (help) {
      out(commandHelp(command));
      return 0;
    }

    const args = parse(rest, { ...globalOptions, ...command.options });
    const { min, max, names } = command.positionals;
    const n = args.positionals.length;
    if (n < min) throw new UsageError(`missing ${names.split(" ").slice(n).join(" ") || "arguments"}`);
    if (n > max) throw new UsageError(`unexpected argument ${JSON.stringify(args.positionals[max])}`);

    const urlOption = stringOpt(args, "database-url");
    const connectionString = urlOption ?? env.DATABASE_URL;
    const schema = stringOpt(args, "schema") ?? env.PAWL_SCHEMA;
    const ctx: CommandContext = {
      out,
      err,
      pawl: () => {
        // Checked when a command first needs the database (inspect never does), before any connection.
        if (pawl === undefined && connectionString) {
          checkDatabaseUrl(connectionString, urlOption === undefined ? "DATABASE_URL" : "--database-url");
        }
        // Behind a transaction pooler the CLI runs unnamed statements too (PAWL_PREPARED_STATEMENTS=false).
        const preparedStatements = booleanEnv("PAWL_PREPARED_STATEMENTS", env.PAWL_PREPARED_STATEMENTS);
        return (pawl ??= createPawl({
          ...(connectionString ? { connectionString } : {}),
          ...(schema ? { schema } : {}),
          ...(preparedStatements === undefined ? {} : { preparedStatements }),
          maxConnections: 2,
        }));
      },
    };
    // A release the schema does not fit says so, with both versions and the command to run, before a
    // command fails on a missing column. `migrate` is the fix and `inspect` reads no database.
    if (!schemaFree.has(command.words[0] ?? "")) {
      await ctx.pawl().checkSchema();
    }
    return await command.run(ctx, args);
  } catch (error) {
    if (error instanceof UsageError) {
      err(`pawl: ${error.message}\nusage: ${usage}\nrun "${helpHint}" for more`);
      return 2;
    }
    if (error instanceof PawlError) {
      err(`pawl: ${error.message} (${error.code})`);
      return 1;
    }
    const code = (error as { code?: unknown }).code;
    // 42P01 undefined_table, 3F000 invalid_schema_name: the schema was never migrated.
    const hint = code === "42P01" || code === "3F000" ? `; has "pawl migrate" run for this schema?` : "";
    err(`pawl: ${describe(error)}${hint}`);
    if (env.PAWL_DEBUG && error instanceof Error && error.stack) err(error.stack);
    return 1;
  } finally {
    await pawl?.close().catch(() => {});
  }
}
