/**
 * A small line chart as SVG text, for the curves in docs/benchmarks.md: a few series of a few points
 * each, optionally log-scaled axes, labelled ticks. Plain SVG so the docs render it on any forge and
 * the diff of a re-run shows which point moved.
 */

/** One line of a chart. */
export interface Series {
  name: string;
  points: readonly (readonly [number, number])[];
}

/** What to draw. */
export interface LineChart {
  title: string;
  xLabel: string;
  yLabel: string;
  /** Log scale on x (the backlog and row-count axes span decades); 0 is drawn one decade below the first. */
  xLog?: boolean;
  /** Log scale on y, ticks at each decade (latencies that span milliseconds to seconds). */
  yLog?: boolean;
  series: readonly Series[];
}

const W = 640;
const H = 360;
const M = { left: 70, right: 170, top: 40, bottom: 50 };
const COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"];

const esc = (s: string): string => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/** A short label for a number: 1000 -> 1k, 1000000 -> 1M. */
export function shortNumber(x: number): string {
  if (x >= 1e6 && x % 1e5 === 0) return `${x / 1e6}M`;
  if (x >= 1e3 && x % 100 === 0) return `${x / 1e3}k`;
  return String(Math.round(x * 100) / 100);
}

/** Renders `chart` as an SVG document. */
export function renderLineChart(chart: LineChart): string {
  const xs = [...new Set(chart.series.flatMap((s) => s.points.map(([x]) => x)))].sort((a, b) => a - b);
  const ys = chart.series.flatMap((s) => s.points.map(([, y]) => y));
  const positive = xs.filter((x) => x > 0);
  const floor = positive.length > 0 ? Math.min(...positive) / 10 : 1;
  const xv = (x: number) => (chart.xLog ? Math.log10(Math.max(x, floor)) : x);
  const x0 = xv(xs[0] ?? 0);
  const x1 = xv(xs[xs.length - 1] ?? 1);
  const yMax = Math.max(1, ...ys) * 1.1;
  // Log y: from the decade below the smallest value to the decade above the largest.
  const lo = Math.floor(Math.log10(Math.min(...ys.filter((y) => y > 0), yMax)));
  const hi = Math.ceil(Math.log10(yMax / 1.1));
  const yFrac = (y: number) =>
    chart.yLog ? (Math.log10(Math.max(y, 10 ** lo)) - lo) / (hi - lo || 1) : y / yMax;
  const yTicks = chart.yLog
    ? Array.from({ length: hi - lo + 1 }, (_, k) => 10 ** (lo + k))
    : [0, 1, 2, 3, 4].map((k) => (yMax / 1.1) * (k / 4));
  const px = (x: number) => M.left + ((xv(x) - x0) / (x1 - x0 || 1)) * (W - M.left - M.right);
  const py = (y: number) => H - M.bottom - yFrac(y) * (H - M.top - M.bottom);
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${M.left}" y="22" font-size="14" font-weight="bold">${esc(chart.title)}</text>`,
    `<line x1="${M.left}" y1="${H - M.bottom}" x2="${W - M.right}" y2="${H - M.bottom}" stroke="black"/>`,
    `<line x1="${M.left}" y1="${M.top}" x2="${M.left}" y2="${H - M.bottom}" stroke="black"/>`,
  ];
  for (const x of xs) {
    out.push(
      `<line x1="${px(x)}" y1="${H - M.bottom}" x2="${px(x)}" y2="${H - M.bottom + 5}" stroke="black"/>`,
      `<text x="${px(x)}" y="${H - M.bottom + 18}" text-anchor="middle">${shortNumber(x)}</text>`,
    );
  }
  for (const y of yTicks) {
    out.push(
      `<line x1="${M.left - 5}" y1="${py(y)}" x2="${W - M.right}" y2="${py(y)}" stroke="#ddd"/>`,
      `<text x="${M.left - 8}" y="${py(y) + 4}" text-anchor="end">${shortNumber(y >= 1 ? Math.round(y) : y)}</text>`,
    );
  }
  out.push(
    `<text x="${(M.left + W - M.right) / 2}" y="${H - 12}" text-anchor="middle">${esc(chart.xLabel)}</text>`,
    `<text transform="translate(16 ${(M.top + H - M.bottom) / 2}) rotate(-90)" text-anchor="middle">${esc(chart.yLabel)}</text>`,
  );
  chart.series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length]!;
    const pts = [...s.points].sort((a, b) => a[0] - b[0]);
    out.push(
      `<polyline fill="none" stroke="${color}" stroke-width="2" points="${pts.map(([x, y]) => `${px(x).toFixed(1)},${py(y).toFixed(1)}`).join(" ")}"/>`,
      ...pts.map(
        ([x, y]) => `<circle cx="${px(x).toFixed(1)}" cy="${py(y).toFixed(1)}" r="3" fill="${color}"/>`,
      ),
      `<rect x="${W - M.right + 12}" y="${M.top + i * 20}" width="12" height="3" fill="${color}"/>`,
      `<text x="${W - M.right + 30}" y="${M.top + i * 20 + 5}">${esc(s.name)}</text>`,
    );
  });
  out.push("</svg>\n");
  return out.join("\n");
}
