/**
 * The slow statements PostgreSQL logged (`log_min_duration_statement`) in one soak window: counted over
 * 100 ms and over 500 ms, the slowest few named. Pure: the soak passes the log text the window added.
 */

/** One logged statement: its time and a short name (the prepared statement's name, or its text's start). */
export interface SlowStatement {
  ms: number;
  what: string;
}

const line = /duration: ([\d.]+) ms\s+(?:statement|execute ([^:]+)|parse ([^:]+)|bind ([^:]+)):\s*(.*)$/;

/** Counts and the slowest three of the `duration:` lines in `text`. */
export function parseSlowLog(text: string): { over100: number; over500: number; top: SlowStatement[] } {
  const all: SlowStatement[] = [];
  for (const l of text.split("\n")) {
    const m = line.exec(l);
    if (!m) continue;
    const name = m[2] ?? m[3] ?? m[4];
    const what = (name && name !== "<unnamed>" ? name : (m[5] ?? ""))
      .replace(/\s+/g, " ")
      .trim()
      .slice(0, 60);
    all.push({ ms: Math.round(Number(m[1])), what });
  }
  all.sort((a, b) => b.ms - a.ms);
  return {
    over100: all.filter((s) => s.ms > 100).length,
    over500: all.filter((s) => s.ms > 500).length,
    top: all.slice(0, 3),
  };
}
