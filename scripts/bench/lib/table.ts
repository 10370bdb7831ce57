/** Plain-text tables (Markdown-compatible, so a run's output can be pasted into docs/benchmarks.md). */

/** Renders a table; the first column is left-aligned, the others right-aligned. */
export function renderTable(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, c) => Math.max(h.length, ...rows.map((r) => (r[c] ?? "").length)));
  const cell = (s: string, c: number) => (c === 0 ? s.padEnd(widths[c]!) : s.padStart(widths[c]!));
  const line = (cells: readonly string[]) => `| ${cells.map((s, c) => cell(s, c)).join(" | ")} |`;
  const rule = `|${widths.map((w, c) => (c === 0 ? "-".repeat(w + 2) : `${"-".repeat(w + 1)}:`)).join("|")}|`;
  return [line(headers), rule, ...rows.map(line)].join("\n");
}

/** An integer with thousands separators. */
export const int = (x: number | undefined): string =>
  x === undefined || !Number.isFinite(x) ? "-" : Math.round(x).toLocaleString("en-US");

/** A number with `digits` decimals. */
export const dec = (x: number | undefined, digits = 2): string =>
  x === undefined || !Number.isFinite(x) ? "-" : x.toFixed(digits);

/** A ratio such as `1.52x`. */
export const ratio = (x: number | undefined): string =>
  x === undefined || !Number.isFinite(x) ? "-" : `${x.toFixed(2)}x`;
