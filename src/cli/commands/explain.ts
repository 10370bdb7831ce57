/** `pawl explain <id>`: why a job is (or is not) running now, one reason a line (src/logic/explain.ts). */
import { describeReason } from "../../logic/explain-text.js";
import { flagOpt, idValue, jsonOption } from "../args.js";
import type { Command } from "../command.js";
import { json } from "../format.js";

/** `pawl explain <id> [--json]`. */
export const explainCommand: Command = {
  words: ["explain"],
  summary: "say why a job is not running (or where it runs, or how it ended)",
  usage: "explain <id> [--json]",
  details:
    "Prints the job's status and verdict (finished, running, orphaned, blocked, runnable), then every\n" +
    "reason that holds now, in order: paused, waiting for a signal or dependencies, scheduled later, no\n" +
    "live node runs its type, its queue full, its breaker open, its resource's permits all held. Node\n" +
    "facts are as of each node's last heartbeat.",
  options: { ...jsonOption },
  positionals: { min: 1, max: 1, names: "<id>" },
  async run(ctx, args) {
    const id = idValue("<id>", args.positionals[0] as string);
    const e = await ctx.pawl().explain(id);
    if (flagOpt(args, "json")) {
      ctx.out(json(e));
      return 0;
    }
    const lines = [`job ${e.jobId}: ${e.status}, ${e.verdict}`];
    if (e.verdict === "runnable")
      lines.push("  nothing holds it: the next poll of a node that runs its type should claim it");
    for (const r of e.reasons) lines.push(`  - ${describeReason(r, e.at)}`);
    ctx.out(lines.join("\n"));
    return 0;
  },
};
