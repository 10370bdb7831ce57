/**
 * `pawl doctor [--repair] [--json]`: checks that each concurrency key's running count matches its leased
 * rows (src/store/operator/key-counts-sql.ts, docs/fairness.md#doctor). Without `--repair` it only reads
 * and exits 1 when it finds drift, so a cron job or CI can alert on it; with `--repair` it sets the drifted
 * counts from the rows in one transaction under the keys' claim locks (safe beside running nodes) and
 * exits 0.
 */
import type { KeyCountDrift } from "../../store/operator/key-counts-sql.js";
import { flagOpt, jsonOption } from "../args.js";
import type { Command } from "../command.js";
import { cell, json, table } from "../format.js";

/** The text of `pawl doctor`: what was found (or repaired). */
export function doctorText(drift: readonly KeyCountDrift[], repaired: boolean): string {
  if (drift.length === 0) return "key counts: every concurrency key's running count matches its rows";
  const head = repaired
    ? `key counts: repaired ${drift.length} key${drift.length === 1 ? "" : "s"} (count set from the rows)`
    : `key counts: ${drift.length} key${drift.length === 1 ? "" : "s"} drifted; run "pawl doctor --repair" to fix`;
  return [
    head,
    "",
    table(
      ["KEY", "COUNTED", "ROWS"],
      drift.map((d) => [cell(d.key, 60), String(d.counted), String(d.actual)]),
    ),
  ].join("\n");
}

/** `pawl doctor`. */
export const doctorCommand: Command = {
  words: ["doctor"],
  summary: "check each concurrency key's running count against its rows; --repair fixes drift",
  usage: "doctor [--repair] [--json]",
  details:
    "Compares each concurrency key's running count (what limits are enforced against) with its leased\n" +
    "rows, in one snapshot, and lists the keys that differ. Exits 1 when any does. With --repair, sets\n" +
    "those counts from the rows in one transaction that holds the keys' claim locks, so it is safe while\n" +
    "nodes run, and exits 0. Needs the application role (it writes); without --repair a reader suffices.",
  options: {
    repair: { type: "boolean", description: "set each drifted key's count from its rows" },
    ...jsonOption,
  },
  positionals: { min: 0, max: 0, names: "" },
  async run(ctx, args) {
    const repair = flagOpt(args, "repair");
    const store = ctx.pawl().store;
    const drift = repair ? await store.repairKeyCounts() : await store.checkKeyCounts();
    ctx.out(flagOpt(args, "json") ? json({ repaired: repair, keys: drift }) : doctorText(drift, repair));
    return drift.length > 0 && !repair ? 1 : 0;
  },
};
