/**
 * `pawl schedules`: the recurring schedules (pawl.schedule) with their cron, time zone, job type and next
 * fire, by name, one keyset page at a time through the store's operator read (as the web console pages
 * them). The next fire is what the store holds, computed by the scheduler that last advanced it.
 */
import type { RecurringRow } from "../../store/cluster/recurring-sql.js";
import { maxSchedulePage } from "../../store/operator/schedule-page-sql.js";
import { flagOpt, intValue, jsonOption, stringOpt } from "../args.js";
import type { Command } from "../command.js";
import { cell, iso, json, plural, table } from "../format.js";
import { duration } from "./nodes.js";

/** The table of schedules; `at` is the database's time, for the time until each next fire. */
export function schedulesTable(rows: readonly RecurringRow[], at: Date): string {
  return table(
    ["NAME", "CRON", "TIMEZONE", "TYPE", "NEXT FIRE", "IN", "LAST FIRED", "ENABLED"],
    rows.map((r) => [
      cell(r.name, 40),
      cell(r.cron, 30),
      cell(r.timezone, 20),
      cell(r.type, 40),
      iso(r.nextFireAt),
      duration(r.nextFireAt.getTime() - at.getTime()),
      r.lastFiredAt ? iso(r.lastFiredAt) : "-",
      r.enabled ? "yes" : "no (its cron no longer computes)",
    ]),
  );
}

/** `pawl schedules [--after name] [--limit n] [--json]`. */
export const schedulesCommand: Command = {
  words: ["schedules"],
  summary: "list recurring schedules: name, cron, next fire",
  usage: "schedules [--after name] [--limit n] [--json]",
  details:
    "Lists recurring schedules by name: cron, time zone, job type, next fire (and how far off it is by\n" +
    `the database's clock), last fire. At most --limit (1-${maxSchedulePage}, default 50) per page; pass the last\n` +
    "name shown as --after for the next page.",
  options: {
    after: { type: "string", value: "name", description: "start after this schedule name (the next page)" },
    limit: {
      type: "string",
      value: "n",
      description: `at most n schedules (1-${maxSchedulePage}, default 50)`,
    },
    ...jsonOption,
  },
  positionals: { min: 0, max: 0, names: "" },
  async run(ctx, args) {
    const raw = stringOpt(args, "limit");
    const limit = raw === undefined ? 50 : intValue("limit", raw, { min: 1, max: maxSchedulePage });
    const after = stringOpt(args, "after");
    const store = ctx.pawl().store;
    const at = await store.databaseTime();
    const rows = await store.operator.schedules({
      limit,
      ...(after === undefined ? {} : { afterName: after }),
    });
    if (flagOpt(args, "json")) ctx.out(json({ at, schedules: rows }));
    else if (rows.length === 0) ctx.out("no schedules");
    else {
      const more = rows.length === limit ? `; next page: --after ${JSON.stringify(rows.at(-1)!.name)}` : "";
      ctx.out(`${schedulesTable(rows, at)}\n(${plural(rows.length, "schedule")}${more})`);
    }
    return 0;
  },
};
