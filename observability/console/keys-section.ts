/**
 * The overview's section on concurrency keys (docs/fairness.md): how many keys are active and how many are
 * held at their limit, and the busiest keys with their running jobs, limit and waiting jobs. It comes from
 * the store's one bounded read (src/store/operator/concurrency-keys-sql.ts): a count that stopped at the
 * read's cap is shown as a lower bound (≥), never as exact. Nothing is shown while no key is active, so a
 * deployment that uses no keys sees no empty section.
 */
import type { ConcurrencyKeys } from "../../src/store/operator/concurrency-keys-sql.js";
import { h, raw, table, type Html } from "./html.js";

/** The busiest keys: most running first, then most waiting. Empty when no key has running or waiting jobs. */
export function keysSection(k: ConcurrencyKeys): Html {
  if (k.activeKeys === 0 && k.running === 0 && k.waiting === 0) return raw("");
  const atLeast = (capped: boolean) => (capped ? "≥ " : "");
  const keys = `${atLeast(k.keysCapped)}${k.activeKeys} active ${k.activeKeys === 1 ? "key" : "keys"}`;
  return h`<section id="concurrency-keys"><h2>Busiest concurrency keys</h2>
<p class="muted" id="keys-summary">${keys}, ${atLeast(k.keysCapped)}${k.keysAtLimit} at their limit; ${k.running} keyed jobs running, ${atLeast(k.waitingCapped)}${k.waiting} due and waiting.</p>${table(
    ["key", "running", "limit", "waiting", ""],
    k.busiest.map((b) => [
      h`<code>${b.key}</code>`,
      b.running,
      b.limit ?? h`<span class="muted">none</span>`,
      `${atLeast(b.waiting >= k.waitingCapPerKey)}${b.waiting}`,
      b.atLimit ? h`<span class="status s-PAUSED">at limit</span>` : "",
    ]),
  )}</section>`;
}
