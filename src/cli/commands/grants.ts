/**
 * `pawl grants <role> [--read-only | --enqueue-only]`: prints the SQL that gives a role what pawl needs on the schema and
 * nothing more (src/store/migrations/grants-sql.ts, docs/deployment.md#roles). Connects to nothing: a DBA
 * reviews it and runs it as the schema's owner (`pawl grants app | psql ...`).
 */
import { grantsSql } from "../../store/migrations/grants-sql.js";
import { flagOpt, UsageError } from "../args.js";
import type { Command } from "../command.js";

/** `pawl grants <role> [--read-only | --enqueue-only]`. */
export const grantsCommand: Command = {
  words: ["grants"],
  summary: "print the GRANTs a role needs to run nodes (or, --read-only, to read) without owning the schema",
  usage: "grants <role> [--read-only | --enqueue-only]",
  details:
    "Prints SQL, connects to nothing. Run it as the schema's owner after pawl migrate:\n" +
    '  pawl grants app_worker | psql -v ON_ERROR_STOP=1 "$OWNER_DATABASE_URL"\n' +
    "The application role may then read and write pawl's rows (nodes, enqueue, the CLI, the console) but\n" +
    "not change the schema nor write its migration record: migrations stay with the owner. --read-only\n" +
    "grants SELECT only (the CLI's read commands, a console that only looks). --enqueue-only grants what\n" +
    "enqueueing needs (insert a job, the SQL enqueue() function) and nothing else: a service that only\n" +
    "submits work. Default privileges cover tables later migrations add (app and read-only).",
  options: {
    "read-only": {
      type: "boolean",
      description: "SELECT only: for the CLI's read commands and a read-only console",
    },
    "enqueue-only": {
      type: "boolean",
      description: "only what enqueueing needs: for a service that submits jobs and runs none",
    },
  },
  positionals: { min: 1, max: 1, names: "role" },
  async run(ctx, args) {
    const role = args.positionals[0] as string;
    const schema = ctx.pawl().config.schema;
    const reader = flagOpt(args, "read-only");
    const enqueuer = flagOpt(args, "enqueue-only");
    if (reader && enqueuer) throw new UsageError("give --read-only or --enqueue-only, not both");
    ctx.out(grantsSql(schema, role, reader ? "reader" : enqueuer ? "enqueue" : "app").trimEnd());
    return 0;
  },
};
