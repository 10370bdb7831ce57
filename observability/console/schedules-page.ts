/**
 * The schedules page: recurring schedules by name with their next and last fire times, keyset paged by
 * name (`after` = the last name shown).
 */
import type { RecurringRow } from "../../src/store/cluster/recurring-sql.js";
import { h, table, when, type Html, type PageContext } from "./html.js";

/** The schedules, by name. */
export function schedulesPage(ctx: PageContext, rows: RecurringRow[], pageSize: number, now: Date): Html {
  const last = rows.at(-1);
  return h`${table(
    ["name", "cron", "time zone", "type", "next fire", "last fired", "missed fires", "enabled"],
    rows.map((s) => [
      h`<span data-schedule="${s.name}">${s.name}</span>`,
      h`<code>${s.cron}</code>`,
      s.timezone,
      h`<a href="${ctx.base}/jobs?type=${encodeURIComponent(s.type)}">${s.type}</a>`,
      h`<span class="next-fire">${when(s.nextFireAt, now)}</span> <span class="muted">${s.nextFireAt.toISOString()}</span>`,
      when(s.lastFiredAt, now),
      s.missedFirePolicy,
      s.enabled ? "yes" : h`<b class="s-DEAD">disabled</b>`,
    ]),
    "no recurring schedules",
  )}${rows.length === pageSize && last ? h`<p><a rel="next" href="${ctx.base}/schedules?after=${encodeURIComponent(last.name)}">More schedules →</a></p>` : ""}`;
}
