/**
 * `pawl migrate`: creates or upgrades pawl's tables in the schema. `--check` only reads where the schema
 * stands and exits 1 when migrations are pending (for a deploy step or a readiness gate, as River's CLI
 * does); `--print` writes the SQL that would run, for review or for a DBA to apply by hand.
 */
import { migrationScript, type MigrationStatus } from "../../store/migrations/migrate.js";
import { flagOpt, jsonOption, UsageError } from "../args.js";
import type { Command, CommandContext } from "../command.js";
import { json } from "../format.js";

/** `pawl migrate [--check | --print] [--json]`. */
export const migrateCommand: Command = {
  words: ["migrate"],
  summary: "create or upgrade pawl's tables in the schema (--check, --print: change nothing)",
  usage: "migrate [--check | --print] [--json]",
  details:
    "Applies the migrations the schema has not had yet, in one transaction under an advisory lock.\n" +
    "Idempotent: running it again (or from many nodes at once) changes nothing.\n" +
    "--check changes nothing: exits 0 when the schema is current, 1 when migrations are pending.\n" +
    "--print changes nothing: prints the SQL pawl migrate would run on this schema (psql can apply it).",
  options: {
    check: { type: "boolean", description: "exit 0 if the schema is current, 1 if migrations are pending" },
    print: { type: "boolean", description: "print the SQL that would run, for this schema; apply nothing" },
    ...jsonOption,
  },
  positionals: { min: 0, max: 0, names: "" },
  async run(ctx, args) {
    const check = flagOpt(args, "check");
    const print = flagOpt(args, "print");
    if (check && print) throw new UsageError("--check and --print cannot be combined");
    const pawl = ctx.pawl();
    const schema = pawl.config.schema;
    if (check || print) {
      const status = await pawl.store.migrationStatus();
      return check
        ? report(ctx, schema, status, flagOpt(args, "json"))
        : printSql(ctx, schema, status, flagOpt(args, "json"));
    }
    const result = await pawl.migrate();
    if (flagOpt(args, "json")) {
      ctx.out(json({ schema, ...result }));
    } else if (result.applied.length === 0) {
      ctx.out(`schema ${schema} is up to date (version ${result.version})`);
    } else {
      const list = `migration${result.applied.length === 1 ? "" : "s"} ${result.applied.join(", ")}`;
      ctx.out(`schema ${schema}: applied ${list}; now at version ${result.version}`);
    }
    return 0;
  },
};

const names = (status: MigrationStatus) => status.pending.map((m) => m.name);

/** `--check`: 0 when nothing is pending, else 1 and what is. */
function report(ctx: CommandContext, schema: string, status: MigrationStatus, asJson: boolean): number {
  const current = status.pending.length === 0;
  if (asJson) {
    ctx.out(
      json({ schema, current, version: status.version, pending: names(status), unknown: status.unknown }),
    );
  } else if (current) {
    ctx.out(`schema ${schema} is up to date (version ${status.version})`);
  } else {
    const n = status.pending.length;
    ctx.err(
      `pawl: schema ${schema} is at version ${status.version} and has ${n} pending migration${n === 1 ? "" : "s"} ` +
        `(${names(status).join(", ")}); run "pawl migrate" to apply`,
    );
  }
  // A newer pawl migrated this schema: not an error for this version, but worth knowing before a rollback.
  if (!asJson && status.unknown.length > 0) {
    ctx.err(
      `pawl: schema ${schema} also has versions this pawl does not know (${status.unknown.join(", ")})`,
    );
  }
  return current ? 0 : 1;
}

/** `--print`: the script for the pending migrations (a comment alone when there are none). */
function printSql(ctx: CommandContext, schema: string, status: MigrationStatus, asJson: boolean): number {
  const sql = status.pending.length > 0 ? migrationScript(schema, status.pending) : "";
  if (asJson) {
    ctx.out(json({ schema, version: status.version, pending: names(status), sql }));
  } else if (sql) {
    ctx.out(sql);
  } else {
    ctx.out(`-- schema ${schema} is up to date (version ${status.version}); nothing to run`);
  }
  return 0;
}
