/** `pawl enqueue <type> <json>`: enqueues one job with the options of the enqueue API. */
import type { EnqueueOptions } from "../../input/enqueue-input.js";
import type { Priority } from "../../input/priority.js";
import { flagOpt, intValue, jsonOption, jsonValue, stringOpt, timeValue, type ParsedArgs } from "../args.js";
import type { Command } from "../command.js";
import { iso, json } from "../format.js";

/** Turns the command's options into enqueue options; pawl validates their values. */
function enqueueOptions(args: ParsedArgs): EnqueueOptions {
  const options: EnqueueOptions = {};
  const priority = stringOpt(args, "priority");
  if (priority !== undefined) {
    // A number is passed as a number and a name as a name; pawl checks the range and the names.
    options.priority = /^-?\d+$/.test(priority) ? intValue("priority", priority) : (priority as Priority);
  }
  const delay = stringOpt(args, "delay-ms");
  if (delay !== undefined) options.delayMs = intValue("delay-ms", delay);
  const runAt = stringOpt(args, "run-at");
  if (runAt !== undefined) options.runAt = timeValue("run-at", runAt);
  const attempts = stringOpt(args, "max-attempts");
  if (attempts !== undefined) options.maxAttempts = intValue("max-attempts", attempts);
  const timeout = stringOpt(args, "timeout-ms");
  if (timeout !== undefined) options.timeoutMs = intValue("timeout-ms", timeout);
  const uniqueKey = stringOpt(args, "unique-key");
  if (uniqueKey !== undefined) options.uniqueKey = uniqueKey;
  const queue = stringOpt(args, "queue");
  if (queue !== undefined) options.queue = queue;
  return options;
}

/** `pawl enqueue <type> <json> [options]`. */
export const enqueueCommand: Command = {
  words: ["enqueue"],
  summary: "enqueue one job",
  usage:
    "enqueue <type> <json> [--priority p] [--delay-ms n] [--run-at iso] [--max-attempts n] " +
    "[--timeout-ms n] [--unique-key k] [--queue q] [--json]",
  details:
    'Enqueues a job of <type> with <json> as its payload (quote it for the shell: \'{"to":"a@b.c"}\').\n' +
    "Options the command line leaves out take the defaults of the enqueue API. Bad values are refused\n" +
    "and nothing is written. With a unique key that has a live job, that job is printed instead.",
  options: {
    priority: { type: "string", value: "p", description: "critical, high, normal, low, or an integer 0-100" },
    "delay-ms": { type: "string", value: "n", description: "run no earlier than n ms from now" },
    "run-at": { type: "string", value: "iso", description: "run no earlier than this ISO 8601 time" },
    "max-attempts": { type: "string", value: "n", description: "attempts before the job goes DEAD (1-1000)" },
    "timeout-ms": { type: "string", value: "n", description: "the per-attempt timeout in ms" },
    "unique-key": { type: "string", value: "k", description: "at most one live job per key" },
    queue: { type: "string", value: "q", description: "the queue (default: default)" },
    ...jsonOption,
  },
  positionals: { min: 2, max: 2, names: "<type> <json>" },
  async run(ctx, args) {
    const [type, raw] = args.positionals as [string, string];
    const payload = jsonValue("the payload", raw);
    const options = enqueueOptions(args);
    const job = await ctx.pawl().enqueue(type, payload, options);
    if (flagOpt(args, "json")) {
      ctx.out(json(job));
    } else if (job.inserted) {
      ctx.out(
        `enqueued job ${job.id} (${job.type}, priority ${job.priority}, due ${iso(job.scheduledTime)})`,
      );
    } else {
      ctx.out(
        `job ${job.id} is already live with unique key ${job.uniqueKey ?? ""} (${job.status}); nothing enqueued`,
      );
    }
    return 0;
  },
};
