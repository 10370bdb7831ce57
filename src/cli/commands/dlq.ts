/** The dead letter queue: `pawl dlq list`, `pawl dlq retry <id...>`, `pawl dlq purge --yes`. */
import type { DeadLetterFilter } from "../../store/jobs/dead-letter.js";
import { flagOpt, idValue, jsonOption, stringOpt, timeValue, UsageError } from "../args.js";
import type { Command } from "../command.js";
import { deadTable, json, plural } from "../format.js";
import { limitOption, readLimit } from "./jobs.js";

/** `pawl dlq list [--type t] [--limit n] [--json]`. */
export const dlqListCommand: Command = {
  words: ["dlq", "list"],
  summary: "list DEAD jobs, newest first",
  usage: "dlq list [--type t] [--limit n] [--json]",
  details: "Lists the dead letter queue: jobs whose attempts ran out or whose error was not retryable.",
  options: {
    type: { type: "string", value: "t", description: "only jobs of this type" },
    ...limitOption,
    ...jsonOption,
  },
  positionals: { min: 0, max: 0, names: "" },
  async run(ctx, args) {
    const jobs = await ctx.pawl().dlq.list({ type: stringOpt(args, "type"), limit: readLimit(args) });
    if (flagOpt(args, "json")) ctx.out(json(jobs));
    else if (jobs.length === 0) ctx.out("the dead letter queue is empty");
    else ctx.out(`${deadTable(jobs)}\n(${plural(jobs.length, "dead job")})`);
    return 0;
  },
};

/** `pawl dlq retry <id...> [--json]`. */
export const dlqRetryCommand: Command = {
  words: ["dlq", "retry"],
  summary: "send DEAD jobs back to PENDING with attempts reset",
  usage: "dlq retry <id...> [--json]",
  details:
    "Sends the given DEAD jobs back to PENDING, due now, with their attempts reset (their errors are kept).\n" +
    "Exits with 1 when any id was not a DEAD job, or was canceled as a duplicate because a live job holds its\n" +
    "unique key (both are listed on stderr); the others are still retried.",
  options: { ...jsonOption },
  positionals: { min: 1, max: 1000, names: "<id...>" },
  async run(ctx, args) {
    const ids = [...new Set(args.positionals.map((raw) => idValue("<id...>", raw)))];
    const jobs = await ctx.pawl().dlq.retry(ids);
    const retried = new Set(jobs.map((j) => j.id));
    // A job whose unique key a live job holds was canceled as a duplicate, not left DEAD: say so.
    const duplicates = jobs.duplicates;
    const canceled = new Set(duplicates.map((d) => d.jobId));
    const missed = ids.filter((id) => !retried.has(id) && !canceled.has(id));
    if (flagOpt(args, "json")) ctx.out(json({ retried: jobs, duplicates, notDead: missed }));
    else if (jobs.length > 0) ctx.out(`retried ${plural(jobs.length, "job")}: ${[...retried].join(", ")}`);
    for (const d of duplicates)
      ctx.err(`pawl: job ${d.jobId} canceled as a duplicate: live job ${d.liveJobId} holds its unique key`);
    if (missed.length > 0) ctx.err(`pawl: not retried (no such DEAD job): ${missed.join(", ")}`);
    return missed.length > 0 || duplicates.length > 0 ? 1 : 0;
  },
};

/** `pawl dlq purge [--type t] [--before iso] --yes [--json]`. */
export const dlqPurgeCommand: Command = {
  words: ["dlq", "purge"],
  summary: "delete DEAD jobs for good (needs --yes)",
  usage: "dlq purge [--type t] [--before iso] --yes [--json]",
  details:
    "Deletes DEAD jobs, all of them or those matching --type and --before (died before that time).\n" +
    "This cannot be undone, so the command refuses to run without --yes.",
  options: {
    type: { type: "string", value: "t", description: "only jobs of this type" },
    before: { type: "string", value: "iso", description: "only jobs that died before this ISO 8601 time" },
    yes: { type: "boolean", short: "y", description: "confirm the deletion" },
    ...jsonOption,
  },
  positionals: { min: 0, max: 0, names: "" },
  async run(ctx, args) {
    const filter: DeadLetterFilter = { type: stringOpt(args, "type") };
    const before = stringOpt(args, "before");
    if (before !== undefined) filter.before = timeValue("before", before);
    if (!flagOpt(args, "yes")) {
      throw new UsageError("dlq purge deletes DEAD jobs for good; add --yes to confirm");
    }
    const purged = await ctx.pawl().dlq.purge(filter);
    ctx.out(flagOpt(args, "json") ? json({ purged }) : `purged ${plural(purged, "dead job")}`);
    return 0;
  },
};
