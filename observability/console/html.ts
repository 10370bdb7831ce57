/**
 * The console's HTML building blocks: escaping, the page layout (navigation, the stylesheet), tables and
 * forms. Pages are plain server-rendered HTML, so the console needs no bundler, no CDN and no client
 * framework; the stylesheet below is the only asset and ships compiled into the package.
 */

import { redactText } from "../../src/core/redact.js";

/**
 * Escapes text for HTML content and attribute values. Every value a page shows passes here, so this is
 * also where connection URLs' passwords are removed (an error message or a payload can quote one).
 */
export function esc(value: unknown): string {
  return redactText(String(value ?? ""))
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}

/** A trusted fragment of HTML (built by these helpers, never from raw input). */
export interface Html {
  readonly html: string;
}

/** Marks an already-escaped string as HTML. */
export const raw = (html: string): Html => ({ html });

/** Tagged template: interpolations are escaped unless they are {@link Html} (or arrays of it). */
export function h(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0] ?? "";
  values.forEach((v, i) => {
    out += part(v) + (strings[i + 1] ?? "");
  });
  return raw(out);
}

function part(v: unknown): string {
  if (Array.isArray(v)) return v.map(part).join("");
  if (typeof v === "object" && v !== null && "html" in v) return (v as Html).html;
  if (v === null || v === undefined || v === false) return "";
  return esc(v);
}

/** A table; `rows` are cells already built. */
export function table(
  headers: readonly string[],
  rows: readonly (readonly unknown[])[],
  empty = "nothing",
): Html {
  if (rows.length === 0) return h`<p class="empty">${empty}</p>`;
  return h`<table><thead><tr>${headers.map((x) => h`<th>${x}</th>`)}</tr></thead><tbody>${rows.map(
    (r) => h`<tr>${r.map((c) => h`<td>${c}</td>`)}</tr>`,
  )}</tbody></table>`;
}

/** A time as ISO 8601 with its age relative to `now`. */
export function when(d: Date | null | undefined, now: Date): Html {
  if (!d) return h`<span class="muted">-</span>`;
  const ms = now.getTime() - d.getTime();
  const rel = ms >= 0 ? `${age(ms)} ago` : `in ${age(-ms)}`;
  return h`<time datetime="${d.toISOString()}" title="${d.toISOString()}">${rel}</time>`;
}

/** A short duration. */
export function age(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 1) return `${Math.round(ms)}ms`;
  if (s < 120) return `${s}s`;
  const m = Math.round(s / 60);
  if (m < 120) return `${m}m`;
  const hours = Math.round(m / 60);
  return hours < 48 ? `${hours}h` : `${Math.round(hours / 24)}d`;
}

/** Pretty JSON in a <pre>. */
export function jsonBlock(value: unknown): Html {
  let text: string;
  try {
    text = JSON.stringify(value, null, 2) ?? "null";
  } catch {
    text = String(value);
  }
  return h`<pre>${text.length > 20_000 ? `${text.slice(0, 20_000)}\n... (truncated)` : text}</pre>`;
}

/** What every page of one request shares. */
export interface PageContext {
  base: string;
  title: string;
  nodeId: string;
  actions: boolean;
  /** The anti-forgery value each form carries. */
  csrf: string;
  /** The CSP nonce of this response's inline style and script. */
  nonce: string;
}

/** A POST form with one button (only rendered when actions are on). */
export function actionForm(
  ctx: PageContext,
  path: string,
  label: string,
  fields: Record<string, string | readonly string[]> = {},
  danger = false,
): Html {
  if (!ctx.actions) return raw("");
  const inputs = Object.entries(fields).flatMap(([k, v]) =>
    (Array.isArray(v) ? v : [v]).map((x) => h`<input type="hidden" name="${k}" value="${x}">`),
  );
  return h`<form method="post" action="${ctx.base}${path}" class="inline"><input type="hidden" name="csrf" value="${ctx.csrf}">${inputs}<button type="submit" class="${danger ? "danger" : ""}" data-action="${label.toLowerCase()}">${label}</button></form>`;
}

const nav: [string, string][] = [
  ["", "Overview"],
  ["/jobs", "Jobs"],
  ["/flows", "Flows"],
  ["/schedules", "Schedules"],
  ["/dlq", "Dead letters"],
  ["/paused", "Paused"],
  ["/nodes", "Nodes"],
  ["/breakers", "Breakers & permits"],
  ["/actors", "Actors"],
];

const style = `
:root{color-scheme:light;font:14px/1.45 system-ui,sans-serif;color:#1d2330;background:#f6f7f9}
body{margin:0}header{background:#1d2330;color:#fff;padding:.6rem 1.2rem;display:flex;gap:1.2rem;align-items:center;flex-wrap:wrap}
header a{color:#cfd8ea;text-decoration:none}header a.on{color:#fff;font-weight:600}header .brand{font-weight:700;color:#fff}
header .mode{margin-left:auto;font-size:.8rem;padding:.1rem .5rem;border-radius:3px;background:#394255}
main{padding:1rem 1.2rem;max-width:1200px}h1{font-size:1.3rem;margin:.2rem 0 1rem}h2{font-size:1.05rem;margin:1.4rem 0 .5rem}
table{border-collapse:collapse;background:#fff;width:100%;margin-bottom:1rem}th,td{border-bottom:1px solid #e3e6eb;padding:.35rem .55rem;text-align:left;vertical-align:top}
th{background:#eef0f4;font-weight:600}pre{background:#fff;border:1px solid #e3e6eb;padding:.6rem;overflow:auto;max-height:24rem}
.muted,.empty{color:#6b7385}.inline{display:inline}button{cursor:pointer;padding:.2rem .7rem;border:1px solid #8a93a6;background:#fff;border-radius:3px}
button.danger{border-color:#b3261e;color:#b3261e}.status{font-weight:600}.s-DEAD{color:#b3261e}.s-SUCCEEDED{color:#1e7b34}.s-RUNNING{color:#1f5fbf}.s-PAUSED,.s-WAITING{color:#8a5a00}
.verdict{font-size:1.05rem;font-weight:600}ul.reasons li{margin:.2rem 0}form.filters{display:flex;gap:.5rem;margin-bottom:1rem;flex-wrap:wrap}
input,select{padding:.2rem .4rem}.tree ul{margin:0;padding-left:1.2rem}#events{height:18rem}
.cards{display:flex;gap:.8rem;flex-wrap:wrap;margin-bottom:1rem}.card{background:#fff;border:1px solid #e3e6eb;padding:.6rem .9rem;min-width:11rem;display:flex;flex-direction:column}.card b{font-size:1.4rem}
.graph{background:#fff;border:1px solid #e3e6eb;overflow:auto;margin-bottom:1rem}.g-node rect{fill:#fff;stroke:#8a93a6}.g-node text{font-size:12px;fill:#1d2330}.g-step{font-weight:600}
.g-node.s-SUCCEEDED rect{fill:#e6f4ea;stroke:#1e7b34}.g-node.s-DEAD rect,.g-node.s-CANCELED rect{fill:#fbe9e7;stroke:#b3261e}.g-node.s-RUNNING rect{fill:#e8f0fe;stroke:#1f5fbf}
.g-node.s-WAITING rect,.g-node.s-PAUSED rect{fill:#fff8e1;stroke:#8a5a00}.g-edge{fill:none;stroke:#8a93a6;stroke-width:1.5}.g-arrow{fill:#8a93a6}
`;

/** The whole page. */
export function layout(ctx: PageContext, active: string, body: Html): string {
  return `<!doctype html>${
    h`<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${ctx.title} · pawl console</title><style nonce="${ctx.nonce}">${raw(style)}</style></head>
<body><header><span class="brand">pawl</span>${nav.map(
      ([p, label]) => h`<a href="${ctx.base}${p}" class="${p === active ? "on" : ""}">${label}</a>`,
    )}<span class="mode" data-mode="${ctx.actions ? "actions" : "read-only"}">${
      ctx.actions ? "actions on" : "read-only"
    } · node ${ctx.nodeId}</span></header><main><h1>${ctx.title}</h1>${body}</main></body></html>`.html
  }`;
}
