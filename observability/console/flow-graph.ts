/**
 * A workflow's dependency graph as inline SVG, laid out on the server: each member goes in the column of
 * its longest path from a root (a member without dependencies), members of one column are stacked in id
 * order, and each dependency is a curve from a member's right edge to its dependent's left edge. The
 * layout is a pure function ({@link layoutFlowGraph}) so it is tested without a browser; no library and
 * no script, so it renders under the console's Content-Security-Policy as it is.
 */
import type { FlowGraphMember } from "../../src/store/operator/flow-page-sql.js";
import { h, type Html } from "./html.js";

/** Where one member sits: its column (layer) and its row in that column. */
export interface PlacedMember {
  member: FlowGraphMember;
  layer: number;
  row: number;
}

/** A laid-out graph: the members placed, and the edges between members that were read. */
export interface FlowGraphLayout {
  placed: PlacedMember[];
  edges: { from: string; to: string }[];
  layers: number;
  rows: number;
}

/**
 * Places members in layers by their longest dependency path (Kahn's order over the `next` edges). Edges
 * to members that were not read (a flow larger than the read's cap) are left out; members on a cycle,
 * which a workflow cannot have, land in column 0 rather than looping.
 */
export function layoutFlowGraph(members: readonly FlowGraphMember[]): FlowGraphLayout {
  const byId = new Map(members.map((m) => [m.id, m]));
  const edges = members.flatMap((m) => m.next.filter((n) => byId.has(n)).map((n) => ({ from: m.id, to: n })));
  const indegree = new Map(members.map((m) => [m.id, 0]));
  for (const e of edges) indegree.set(e.to, (indegree.get(e.to) ?? 0) + 1);
  const layer = new Map<string, number>();
  const queue = members.filter((m) => indegree.get(m.id) === 0).map((m) => m.id);
  for (const id of queue) layer.set(id, 0);
  while (queue.length > 0) {
    const id = queue.shift() as string;
    for (const n of (byId.get(id) as FlowGraphMember).next) {
      if (!byId.has(n)) continue;
      layer.set(n, Math.max(layer.get(n) ?? 0, (layer.get(id) ?? 0) + 1));
      const left = (indegree.get(n) ?? 0) - 1;
      indegree.set(n, left);
      if (left === 0) queue.push(n);
    }
  }
  const rowsUsed = new Map<number, number>();
  const placed = members.map((m) => {
    const l = layer.get(m.id) ?? 0;
    const row = rowsUsed.get(l) ?? 0;
    rowsUsed.set(l, row + 1);
    return { member: m, layer: l, row };
  });
  return {
    placed,
    edges,
    layers: Math.max(0, ...placed.map((p) => p.layer + 1)),
    rows: Math.max(0, ...rowsUsed.values()),
  };
}

const nodeW = 180;
const nodeH = 46;
const gapX = 60;
const gapY = 18;
const pad = 12;

/** The graph as an inline SVG; each member a link to its job page. */
export function flowGraphSvg(base: string, layout: FlowGraphLayout): Html {
  const x = (p: PlacedMember) => pad + p.layer * (nodeW + gapX);
  const y = (p: PlacedMember) => pad + p.row * (nodeH + gapY);
  const at = new Map(layout.placed.map((p) => [p.member.id, p]));
  const width = pad * 2 + layout.layers * nodeW + Math.max(0, layout.layers - 1) * gapX;
  const height = pad * 2 + layout.rows * nodeH + Math.max(0, layout.rows - 1) * gapY;
  const edges = layout.edges.map((e) => {
    const a = at.get(e.from) as PlacedMember;
    const b = at.get(e.to) as PlacedMember;
    const x1 = x(a) + nodeW;
    const y1 = y(a) + nodeH / 2;
    const x2 = x(b) - 4;
    const y2 = y(b) + nodeH / 2;
    const mid = (x1 + x2) / 2;
    return h`<path class="g-edge" data-from="${a.member.step}" data-to="${b.member.step}" d="M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2},${y2}" marker-end="url(#arrow)"/>`;
  });
  const nodes = layout.placed.map((p) => {
    const m = p.member;
    const label = m.step.length > 24 ? `${m.step.slice(0, 23)}…` : m.step;
    return h`<a href="${base}/jobs/${m.id}" class="g-node s-${m.status}" data-step="${m.step}" data-status="${m.status}" data-layer="${p.layer}"><title>${m.step} (${m.type}): ${m.status}, job ${m.id}</title><rect x="${x(p)}" y="${y(p)}" width="${nodeW}" height="${nodeH}" rx="5"/><text x="${x(p) + 10}" y="${y(p) + 19}" class="g-step">${label}</text><text x="${x(p) + 10}" y="${y(p) + 36}" class="g-status">${m.status}${m.attempts > 1 ? ` · ${m.attempts} attempts` : ""}</text></a>`;
  });
  return h`<div class="graph"><svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="dependency graph"><defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" class="g-arrow"/></marker></defs>${edges}${nodes}</svg></div>`;
}
