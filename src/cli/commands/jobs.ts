/** Reading and canceling jobs: `pawl jobs`, `pawl job <id>`, `pawl cancel <id>`. */
import { JobNotFoundError } from "../../core/errors.js";
import { jobStatuses, type JobStatus } from "../../store/jobs/job-row.js";
import type { ListJobsFilter } from "../../store/jobs/read-jobs.js";
import {
  flagOpt,
  idValue,
  intValue,
  jsonOption,
  listValue,
  stringOpt,
  UsageError,
  type ParsedArgs,
} from "../args.js";
import type { Command } from "../command.js";
import { jobDetail, jobsTable, json, plural } from "../format.js";

/** The `--limit` both list commands take; pawl's own cap is 1000. */
export const limitOption = {
  limit: { type: "string", value: "n", description: "at most n jobs, newest first (1-1000, default 50)" },
} as const;

/** Reads `--limit`, or undefined for pawl's default. */
export function readLimit(args: ParsedArgs): number | undefined {
  const raw = stringOpt(args, "limit");
  return raw === undefined ? undefined : intValue("limit", raw, { min: 1, max: 1000 });
}

function readStatuses(raw: string): JobStatus[] {
  const statuses = listValue(raw).map((s) => s.toUpperCase());
  if (statuses.length === 0) throw new UsageError("--status needs at least one status");
  for (const s of statuses) {
    if (!(jobStatuses as readonly string[]).includes(s)) {
      throw new UsageError(`unknown status ${JSON.stringify(s)}; use ${jobStatuses.join(", ")}`);
    }
  }
  return statuses as JobStatus[];
}

/** `pawl jobs [--status S[,S]] [--type t] [--queue q] [--limit n] [--json]`. */
export const jobsCommand: Command = {
  words: ["jobs"],
  summary: "list jobs, newest first",
  usage: "jobs [--status S[,S]] [--type t] [--queue q] [--limit n] [--json]",
  details: `Lists jobs, newest first. Statuses: ${jobStatuses.join(", ")} (any case, comma-separated).`,
  options: {
    status: { type: "string", value: "S[,S]", description: "only jobs in these statuses" },
    type: { type: "string", value: "t", description: "only jobs of this type" },
    queue: { type: "string", value: "q", description: "only jobs in this queue" },
    ...limitOption,
    ...jsonOption,
  },
  positionals: { min: 0, max: 0, names: "" },
  async run(ctx, args) {
    const filter: ListJobsFilter = {};
    const status = stringOpt(args, "status");
    if (status !== undefined) filter.status = readStatuses(status);
    filter.type = stringOpt(args, "type");
    filter.queue = stringOpt(args, "queue");
    filter.limit = readLimit(args);
    const jobs = await ctx.pawl().listJobs(filter);
    if (flagOpt(args, "json")) ctx.out(json(jobs));
    else if (jobs.length === 0) ctx.out("no jobs");
    else ctx.out(`${jobsTable(jobs)}\n(${plural(jobs.length, "job")})`);
    return 0;
  },
};

/** `pawl job <id> [--json]`. */
export const jobCommand: Command = {
  words: ["job"],
  summary: "show one job with its payload, result and errors",
  usage: "job <id> [--json]",
  details: "Shows every field of one job, its payload, its result and the errors of its failed attempts.",
  options: { ...jsonOption },
  positionals: { min: 1, max: 1, names: "<id>" },
  async run(ctx, args) {
    const id = idValue("<id>", args.positionals[0] as string);
    const job = await ctx.pawl().getJob(id);
    if (!job) throw new JobNotFoundError(id);
    ctx.out(flagOpt(args, "json") ? json(job) : jobDetail(job));
    return 0;
  },
};

/** `pawl cancel <id> [--reason r] [--json]`. */
export const cancelCommand: Command = {
  words: ["cancel"],
  summary: "cancel a pending or running job",
  usage: "cancel <id> [--reason r] [--json]",
  details:
    "Cancels a job. A PENDING job becomes CANCELED; a RUNNING one becomes CANCELED too, its handler is\n" +
    "asked to stop and its result is discarded. A job that already finished is left as it is.",
  options: {
    reason: {
      type: "string",
      value: "r",
      description: "why, kept on the job (default: canceled by request)",
    },
    ...jsonOption,
  },
  positionals: { min: 1, max: 1, names: "<id>" },
  async run(ctx, args) {
    const id = idValue("<id>", args.positionals[0] as string);
    const result = await ctx.pawl().cancel(id, stringOpt(args, "reason"));
    if (flagOpt(args, "json")) {
      ctx.out(json(result));
    } else if (result.outcome === "already-final") {
      ctx.out(`job ${id} was already ${result.previousStatus}; nothing changed`);
    } else {
      ctx.out(`canceled job ${id} (was ${result.previousStatus})`);
    }
    return 0;
  },
};
