/**
 * The flows pages: the list of chains, batches and workflows (newest first, keyset paging), and one
 * flow with each member's state and, for a chain or workflow, its dependency graph.
 */
import type { Flow } from "../../src/index.js";
import { flowFromRow } from "../../src/composition/flows.js";
import type { FlowRow } from "../../src/store/composition/flow-sql.js";
import type { FlowGraphMember } from "../../src/store/operator/flow-page-sql.js";
import { flowGraphSvg, layoutFlowGraph } from "./flow-graph.js";
import { h, table, when, type Html, type PageContext } from "./html.js";

const status = (s: string) => h`<span class="status s-${s}">${s}</span>`;
const stateLabel = (s: Flow["state"]) =>
  h`<span class="status ${s === "failed" ? "s-DEAD" : s === "succeeded" ? "s-SUCCEEDED" : "s-RUNNING"}">${s}</span>`;

/** A link to a flow's page. */
export const flowLink = (ctx: PageContext, id: string): Html =>
  h`<a href="${ctx.base}/flows/${id}">${id}</a>`;

/** The flow list: newest first, filter by kind, `before` = the last id shown. */
export function flowsPage(
  ctx: PageContext,
  rows: FlowRow[],
  kind: string | undefined,
  pageSize: number,
  now: Date,
): Html {
  const flows = rows.map(flowFromRow);
  const last = flows.at(-1);
  const next = new URLSearchParams();
  if (kind) next.set("kind", kind);
  if (last) next.set("before", last.id);
  return h`<form class="filters" method="get" action="${ctx.base}/flows"><select name="kind" aria-label="kind">${[
    "",
    "chain",
    "batch",
    "workflow",
  ].map(
    (k) => h`<option value="${k}" ${k === (kind ?? "") ? h`selected` : ""}>${k || "any kind"}</option>`,
  )}</select><button type="submit">Filter</button></form>${table(
    ["id", "kind", "name", "state", "succeeded / dead / canceled of total", "created", "completed"],
    flows.map((f) => [
      flowLink(ctx, f.id),
      f.kind,
      f.name ?? "",
      stateLabel(f.state),
      `${f.succeeded} / ${f.dead} / ${f.canceled} of ${f.total}`,
      when(f.createdAt, now),
      when(f.completedAt, now),
    ]),
    "no flows",
  )}${flows.length === pageSize ? h`<p><a rel="next" href="${ctx.base}/flows?${next.toString()}">Older flows →</a></p>` : ""}`;
}

/**
 * One flow: its counters, its graph (chains and workflows, from their first `memberCap` members) and its
 * members (a batch's a page at a time, `after` = the last id shown).
 */
export function flowPage(
  ctx: PageContext,
  flow: Flow,
  members: FlowGraphMember[],
  memberCap: number,
  now: Date,
): Html {
  const full = members.length >= memberCap && members.length < flow.total;
  const last = members.at(-1);
  const partial =
    flow.kind === "batch"
      ? ""
      : full
        ? h`<p class="muted">The first ${members.length} of ${flow.total} members (by id).</p>`
        : "";
  const more =
    flow.kind === "batch" && full && last
      ? h`<p><a rel="next" href="${ctx.base}/flows/${flow.id}?after=${last.id}">More members →</a></p>`
      : "";
  return h`<p>${flow.kind}${flow.name ? h` <b>${flow.name}</b>` : ""} · ${stateLabel(flow.state)} · failure policy <b>${flow.failurePolicy}</b></p>
${table(
  ["total", "succeeded", "dead", "canceled", "remaining", "created", "completed", "completion job"],
  [
    [
      flow.total,
      flow.succeeded,
      flow.dead,
      flow.canceled,
      flow.remaining,
      when(flow.createdAt, now),
      when(flow.completedAt, now),
      flow.completionJobId
        ? h`<a href="${ctx.base}/jobs/${flow.completionJobId}">${flow.completionJobId}</a>`
        : "none",
    ],
  ],
)}${flow.kind === "batch" ? "" : h`<h2>Dependencies</h2>${flowGraphSvg(ctx.base, layoutFlowGraph(members))}`}
<h2>Members</h2>${partial}${table(
    ["id", "step", "type", "status", "attempts", "waits for"],
    members.map((m) => [
      h`<a href="${ctx.base}/jobs/${m.id}">${m.id}</a>`,
      m.step,
      m.type,
      status(m.status),
      m.attempts,
      members
        .filter((d) => d.next.includes(m.id))
        .map((d) => d.step)
        .join(", "),
    ]),
    "no members",
  )}${more}`;
}
