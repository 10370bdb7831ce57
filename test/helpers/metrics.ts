/** Reading a Prometheus text scrape in tests: one map from each series to its value. */

/** A scrape: `name{label="v",...}` (labels sorted) -> value. */
export type Scrape = Map<string, number>;

/** The key of a series in a {@link Scrape}: its name and its labels, sorted. */
export function metricKey(name: string, labels: Record<string, string> = {}): string {
  const parts = Object.keys(labels)
    .sort()
    .map((k) => `${k}="${labels[k]}"`);
  return parts.length > 0 ? `${name}{${parts.join(",")}}` : name;
}

/** Parses the text exposition format; throws on a line it cannot read. */
export function parseMetrics(text: string): Scrape {
  const out: Scrape = new Map();
  for (const line of text.split("\n")) {
    if (line.startsWith("#") || line.trim() === "") continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`unparsable metrics line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    out.set(metricKey(m[1]!, labels), Number(m[3]));
  }
  return out;
}
