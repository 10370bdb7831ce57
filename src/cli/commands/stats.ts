/**
 * `pawl stats`: the backlog at a glance, from the store's bounded overview read (the one the web console's
 * overview page shows): jobs by status, the largest status / queue / type groups, how long the oldest due
 * PENDING job has waited, and the last hour's outcomes. Each status's read is capped, so on a huge backlog
 * the counts are lower bounds, and the output says so.
 */
import type { Overview } from "../../store/operator/overview-sql.js";
import { flagOpt, intValue, jsonOption, stringOpt } from "../args.js";
import type { Command } from "../command.js";
import { cell, json, table } from "../format.js";
import { duration } from "./nodes.js";

/** The text of `pawl stats`. */
export function statsText(o: Overview): string {
  const capped = new Set<string>(o.capped);
  const count = (status: string, n: number) => (capped.has(status) ? `${n}+` : String(n));
  const statuses = Object.entries(o.byStatus).filter(([, n]) => (n ?? 0) > 0);
  const lines = [
    statuses.length === 0
      ? "no live or dead jobs"
      : table(
          ["STATUS", "JOBS"],
          statuses.map(([s, n]) => [s, count(s, n ?? 0)]),
        ),
    "",
    o.oldestPendingMs === null
      ? "oldest due PENDING job: none"
      : `oldest due PENDING job: ${o.oldestPendingId} (waiting ${duration(o.oldestPendingMs)})`,
    `last hour: ${o.lastHour.succeeded} succeeded, ${o.lastHour.dead} dead, ${o.lastHour.canceled} canceled`,
  ];
  if (o.groups.length > 0) {
    lines.push(
      "",
      table(
        ["STATUS", "QUEUE", "TYPE", "JOBS"],
        o.groups.map((g) => [g.status, cell(g.queue, 30), cell(g.type, 50), count(g.status, g.count)]),
      ),
    );
  }
  if (o.capped.length > 0) {
    lines.push("", `(counts marked + reached the read's cap and are lower bounds: ${o.capped.join(", ")})`);
  }
  return lines.join("\n");
}

/** `pawl stats [--groups n] [--json]`. */
export const statsCommand: Command = {
  words: ["stats"],
  summary: "count jobs by status, queue and type; the oldest due job's wait",
  usage: "stats [--groups n] [--json]",
  details:
    "Counts PENDING, RUNNING, WAITING, PAUSED and DEAD jobs by status and by (status, queue, type), the\n" +
    "largest groups first; how long the oldest due PENDING job has waited past its scheduled time; and\n" +
    "the jobs that finished in the last hour. One bounded read: each status reads at most 100,000 rows,\n" +
    "and a count that reached it is marked with + (a lower bound).",
  options: {
    groups: {
      type: "string",
      value: "n",
      description: "at most n groups, largest first (1-1000, default 50)",
    },
    ...jsonOption,
  },
  positionals: { min: 0, max: 0, names: "" },
  async run(ctx, args) {
    const raw = stringOpt(args, "groups");
    const maxGroups = raw === undefined ? undefined : intValue("groups", raw, { min: 1, max: 1000 });
    const overview = await ctx.pawl().store.operator.overview(maxGroups === undefined ? {} : { maxGroups });
    ctx.out(flagOpt(args, "json") ? json(overview) : statsText(overview));
    return 0;
  },
};
