/** `pawl migrate`: creates or upgrades pawl's tables in the schema. */
import { flagOpt, jsonOption } from "../args.js";
import type { Command } from "../command.js";
import { json } from "../format.js";

/** `pawl migrate [--json]`. */
export const migrateCommand: Command = {
  words: ["migrate"],
  summary: "create or upgrade pawl's tables in the schema",
  usage: "migrate [--json]",
  details:
    "Applies the migrations the schema has not had yet, in one transaction under an advisory lock.\n" +
    "Idempotent: running it again (or from many nodes at once) changes nothing.",
  options: { ...jsonOption },
  positionals: { min: 0, max: 0, names: "" },
  async run(ctx, args) {
    const pawl = ctx.pawl();
    const result = await pawl.migrate();
    const schema = pawl.config.schema;
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
