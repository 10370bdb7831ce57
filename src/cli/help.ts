/** The help texts, built from the command table so they never drift from what the parser accepts. */
import type { OptionSpecs } from "./args.js";
import type { Command } from "./command.js";

/** Options every command takes. */
export const globalOptions: OptionSpecs = {
  schema: {
    type: "string",
    value: "name",
    description: "the schema holding pawl's tables (default: $PAWL_SCHEMA, else pawl)",
  },
  "database-url": {
    type: "string",
    value: "url",
    description: "PostgreSQL URL (default: $DATABASE_URL, else postgres://postgres@127.0.0.1:5432/postgres)",
  },
  help: { type: "boolean", short: "h", description: "show help (also after a command: pawl jobs --help)" },
};

function optionLines(specs: OptionSpecs): string[] {
  const heads = Object.entries(specs).map(([name, s]) => {
    const short = s.short ? `-${s.short}, ` : "";
    return [`${short}--${name}${s.value ? ` <${s.value}>` : ""}`, s.description] as const;
  });
  const width = Math.max(...heads.map(([h]) => h.length));
  return heads.map(([h, d]) => `  ${h.padEnd(width)}  ${d}`);
}

function commandLines(list: readonly Command[]): string[] {
  const width = Math.max(...list.map((c) => c.words.join(" ").length));
  return list.map((c) => `  ${c.words.join(" ").padEnd(width)}  ${c.summary}`);
}

/** `pawl --help`. */
export function globalHelp(commands: readonly Command[]): string {
  return [
    "pawl: jobs in PostgreSQL, from the command line.",
    "",
    "Usage: pawl <command> [options]",
    "",
    "Commands:",
    ...commandLines(commands),
    "",
    "Global options:",
    ...optionLines(globalOptions),
    "",
    "pawl --version (or -V) prints pawl's version.",
    "Output is text for people; --json prints JSON for scripts.",
    "Exit codes: 0 done, 1 refused by pawl or failed, 2 bad arguments.",
  ].join("\n");
}

/** `pawl <group> --help`, e.g. `pawl dlq --help`. */
export function groupHelp(group: string, members: readonly Command[]): string {
  return [`Usage: pawl ${group} <command> [options]`, "", "Commands:", ...commandLines(members)].join("\n");
}

/** `pawl <command> --help`. */
export function commandHelp(command: Command): string {
  return [
    `Usage: pawl ${command.usage}`,
    "",
    command.details,
    "",
    ...(Object.keys(command.options).length > 0 ? ["Options:", ...optionLines(command.options), ""] : []),
    "Global options:",
    ...optionLines(globalOptions),
  ].join("\n");
}
