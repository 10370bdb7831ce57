/**
 * The overview: totals by status, the oldest due PENDING job's wait, the last hour's outcomes, the
 * largest groups by status, queue and type, the live nodes, and the busiest concurrency keys. Everything
 * comes from the store's bounded reads (src/store/operator/overview-sql.ts, concurrency-keys-sql.ts); when
 * their caps were reached the page says the counts are lower bounds rather than showing them as exact.
 */
import type { NodeStatus } from "../../src/index.js";
import type { Overview } from "../../src/store/operator/overview-sql.js";
import type { ConcurrencyKeys } from "../../src/store/operator/concurrency-keys-sql.js";
import { age, h, table, type Html, type PageContext } from "./html.js";
import { keysSection } from "./keys-section.js";

const status = (s: string) => h`<span class="status s-${s}">${s}</span>`;

/** The overview page; `keys` adds the busiest concurrency keys (nothing while no key is active). */
export function overviewPage(
  ctx: PageContext,
  o: Overview,
  nodes: NodeStatus[],
  keys: ConcurrencyKeys | null = null,
): Html {
  const alive = nodes.filter((n) => n.alive).length;
  const atLeast = (s: string) => (o.capped.includes(s as never) ? "≥ " : "");
  const { succeeded, dead, canceled } = o.lastHour;
  const failureRate = succeeded + dead === 0 ? null : dead / (succeeded + dead);
  const q = (s: string, extra = "") => `${ctx.base}/jobs?status=${encodeURIComponent(s)}${extra}`;
  return h`<section class="cards">
<div class="card" id="oldest-pending"><span class="muted">Oldest due PENDING job waits</span><b>${
    o.oldestPendingMs === null
      ? "none due"
      : h`<a href="${ctx.base}/jobs/${o.oldestPendingId ?? ""}">${age(o.oldestPendingMs)}</a>`
  }</b></div>
<div class="card" id="throughput"><span class="muted">Succeeded in the last hour</span><b>${succeeded}</b><span class="muted">${(succeeded / 60).toFixed(1)}/min on average</span></div>
<div class="card" id="failure-rate"><span class="muted">Failure rate, last hour</span><b>${
    failureRate === null ? "-" : `${(failureRate * 100).toFixed(1)}%`
  }</b><span class="muted">${dead} dead, ${canceled} canceled</span></div>
<div class="card"><span class="muted">Nodes</span><b><a href="${ctx.base}/nodes">${alive} live</a></b><span class="muted">of ${nodes.length}</span></div>
</section>${o.capped.length > 0 ? h`<p class="muted" id="capped">Counts of ${o.capped.join(", ")} stop at the read's cap: they are lower bounds (≥).</p>` : ""}
<h2>By status</h2>${table(
    ["status", "jobs"],
    Object.entries(o.byStatus).map(([s, n]) => [h`<a href="${q(s)}">${status(s)}</a>`, `${atLeast(s)}${n}`]),
    "no live or dead jobs",
  )}<h2>By status, queue and type</h2>${table(
    ["status", "queue", "type", "jobs"],
    o.groups.map((g) => [
      status(g.status),
      h`<a href="${q(g.status, `&queue=${encodeURIComponent(g.queue)}`)}">${g.queue}</a>`,
      h`<a href="${q(g.status, `&type=${encodeURIComponent(g.type)}`)}">${g.type}</a>`,
      `${atLeast(g.status)}${g.count}`,
    ]),
    "no live or dead jobs",
  )}${keys ? keysSection(keys) : ""}`;
}
