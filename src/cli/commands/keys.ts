/**
 * `pawl keys`: the concurrency keys at a glance (docs/fairness.md), from the store's bounded read, the one
 * behind the `pawl_concurrency_*` metrics and the console's busiest keys: how many keys are active and at
 * their limit, keyed jobs running and waiting, and the busiest keys by running, then waiting jobs. Counts
 * that stopped at the read's caps are marked with + (lower bounds).
 */
import type { ConcurrencyKeys } from "../../store/operator/concurrency-keys-sql.js";
import { flagOpt, intValue, jsonOption, stringOpt } from "../args.js";
import type { Command } from "../command.js";
import { cell, json, table } from "../format.js";

/** The text of `pawl keys`. */
export function keysText(k: ConcurrencyKeys): string {
  const plus = (capped: boolean) => (capped ? "+" : "");
  const lines = [
    `${k.activeKeys}${plus(k.keysCapped)} active keys, ${k.keysAtLimit}${plus(k.keysCapped)} at their limit; ` +
      `${k.running} keyed jobs running, ${k.waiting}${plus(k.waitingCapped)} due and waiting`,
  ];
  if (k.busiest.length > 0) {
    lines.push(
      "",
      table(
        ["KEY", "RUNNING", "LIMIT", "WAITING", ""],
        k.busiest.map((b) => [
          cell(b.key, 60),
          String(b.running),
          b.limit === null ? "none" : String(b.limit),
          `${b.waiting}${plus(b.waiting >= k.waitingCapPerKey)}`,
          b.atLimit ? "at limit" : "",
        ]),
      ),
    );
  }
  if (k.keysCapped || k.waitingCapped || k.busiest.some((b) => b.waiting >= k.waitingCapPerKey)) {
    lines.push("", "(counts marked + reached the read's cap and are lower bounds)");
  }
  return lines.join("\n");
}

/** `pawl keys [--top n] [--json]`. */
export const keysCommand: Command = {
  words: ["keys"],
  summary: "concurrency keys: active, at their limit, and the busiest by running and waiting jobs",
  usage: "keys [--top n] [--json]",
  details:
    "Counts the concurrency keys with running or due waiting jobs, the keys whose next due job waits\n" +
    "because the key already runs that job's limit, and the keyed jobs running and waiting; lists the\n" +
    "busiest keys (most running, then most waiting) with their limit. One bounded read: at most 10,000\n" +
    "keys and 100,000 waiting rows; a count that reached a cap is marked with + (a lower bound).",
  options: {
    top: {
      type: "string",
      value: "n",
      description: "list the n busiest keys (0-1000, default 10)",
    },
    ...jsonOption,
  },
  positionals: { min: 0, max: 0, names: "" },
  async run(ctx, args) {
    const raw = stringOpt(args, "top");
    const top = raw === undefined ? 10 : intValue("top", raw, { min: 0, max: 1000 });
    const keys = await ctx.pawl().store.operator.concurrencyKeys({ top });
    ctx.out(flagOpt(args, "json") ? json(keys) : keysText(keys));
    return 0;
  },
};
