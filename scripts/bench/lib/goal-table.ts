/**
 * Issue 28's goals as one table: what each goal asks, what one `--goals` run measured, and whether it
 * holds. Pure: it reads the JSON the bench's own runs wrote (`--json-out`), so a saved run can be judged
 * again, and every rule is table-tested (test/unit/bench/goal-table.test.ts).
 */
import { dec, int, ratio, renderTable } from "./table.js";

/** One system's drain at one size, as `main.ts --json-out` writes it (the fields read here). */
export interface DrainSeries {
  median: { jobsPerSecond: number; nodeCpuUsPerJob?: number; walBytesPerJob?: number };
  runs: { duplicates: number }[];
  /** pawl's jobs/s divided by this system's (absent on pawl's own series). */
  pawlRatio?: number;
}

/** A drain run's results: by job count, then by system. */
export type DrainResults = Record<string, Record<string, DrainSeries | undefined>>;

/** One coordinator's two-process pickup (`--latency`). */
export interface LatencyResult {
  coordinator: string;
  p50: number;
  p99: number;
}

/** A point of a drain curve (`--curves`): pawl's or a peer's rate at `x` on `axis`. */
export interface CurvePointResult {
  axis: string;
  system: string;
  x: number;
  result: { jobsPerSecond: number; duplicates: number };
}

/** The load axis: pickup at shares of each system's maximum. */
export interface LoadResult {
  system: string;
  result: { points: { load: number; p99: number; duplicates: number }[] };
}

/** The idle axis: one point per node count and coordinator, or why it was skipped. */
export interface IdleResult {
  nodes: number;
  coordinator: string;
  result: { transactionsPerSecondPerNode: number; dbCpuPctPerNode: number } | { skipped: string };
}

/** Everything one `--goals` run measured; a part that was skipped or failed is absent. */
export interface GoalInputs {
  kept?: DrainResults;
  notKept?: DrainResults;
  latency?: LatencyResult[];
  curves?: { points: CurvePointResult[]; load: LoadResult[]; idle: IdleResult[] };
}

/** One row of the table. `holds` is null where the goal is to report a figure, or nothing was measured. */
export interface GoalRow {
  goal: string;
  measured: string;
  holds: boolean | null;
}

/** The drain sizes of a run, smallest first. */
const sizes = (d: DrainResults): string[] => Object.keys(d).sort((a, b) => Number(a) - Number(b));

/** `f` of each size's series of `system`, joined with " / " (the smallest size first). */
function perSize(d: DrainResults, system: string, f: (s: DrainSeries) => string): string {
  if (sizes(d).length === 0) return "not measured";
  return sizes(d)
    .map((n) => {
      const s = d[n]?.[system];
      return s ? f(s) : "-";
    })
    .join(" / ");
}

/** Whether `test` holds for `system` at every size, or null when a size lacks the figure. */
function everySize(
  d: DrainResults,
  system: string,
  value: (s: DrainSeries) => number | undefined,
  test: (x: number) => boolean,
): boolean | null {
  const xs = sizes(d).map((n) => {
    const s = d[n]?.[system];
    return s ? value(s) : undefined;
  });
  if (xs.length === 0 || xs.some((x) => x === undefined || !Number.isFinite(x))) return null;
  return xs.every((x) => test(x!));
}

function ratioRows(d: DrainResults, mode: string, target: number): GoalRow[] {
  return [
    {
      goal: `${mode}: >= ${target}x graphile-worker tuned`,
      measured: perSize(d, "graphile-tuned", (s) => ratio(s.pawlRatio)),
      holds: everySize(
        d,
        "graphile-tuned",
        (s) => s.pawlRatio,
        (x) => x >= target,
      ),
    },
    {
      goal: `${mode}: >= 0.6x the SQL floor`,
      measured: perSize(d, "floor", (s) => ratio(s.pawlRatio)),
      holds: everySize(
        d,
        "floor",
        (s) => s.pawlRatio,
        (x) => x >= 0.6,
      ),
    },
    {
      goal: `${mode}: node CPU <= 15 us per job`,
      measured: perSize(d, "pawl", (s) => dec(s.median.nodeCpuUsPerJob, 0)),
      holds: everySize(
        d,
        "pawl",
        (s) => s.median.nodeCpuUsPerJob,
        (x) => x <= 15,
      ),
    },
  ];
}

/**
 * The pawl rate at `x` on `axis` over the rate at 0 (the empty table), to two decimals as shown (the drain
 * ratios come rounded so from main.ts too: a goal never reads "0.90x" and missed), or undefined.
 */
function flatRatio(points: readonly CurvePointResult[], axis: string, x: number): number | undefined {
  const at = (v: number) => points.find((p) => p.axis === axis && p.system === "pawl" && p.x === v);
  const base = at(0);
  const far = at(x);
  return base && far
    ? Math.round((100 * far.result.jobsPerSecond) / base.result.jobsPerSecond) / 100
    : undefined;
}

/** Pickup p50 goals: Hazelcast at most 5 ms, postgres and amqp at most 3 ms. */
const pickupTargets: Record<string, number> = { postgres: 3, amqp: 3, hazelcast: 5 };

/** Every executed job counted twice anywhere in the run (at-least-once duplicates). */
function duplicates(inputs: GoalInputs): number {
  const drains = [inputs.kept, inputs.notKept].flatMap((d) =>
    d ? Object.values(d).flatMap((bySystem) => Object.values(bySystem)) : [],
  );
  return (
    drains.reduce((n, s) => n + (s?.runs.reduce((m, r) => m + r.duplicates, 0) ?? 0), 0) +
    (inputs.curves?.points.reduce((n, p) => n + p.result.duplicates, 0) ?? 0) +
    (inputs.curves?.load.reduce((n, l) => n + l.result.points.reduce((m, p) => m + p.duplicates, 0), 0) ?? 0)
  );
}

/**
 * The rows of issue 28's goal table from what one run measured. A goal whose measurement is absent
 * (skipped, or failed twice) reads "not measured" and holds nothing.
 *
 * @example
 * ```ts
 * goalRows({ latency: [{ coordinator: "hazelcast", p50: 4.2, p99: 9 }] });
 * // [..., { goal: "pickup p50, hazelcast: <= 5 ms", measured: "4.20 ms (p99 9.00)", holds: true }, ...]
 * ```
 */
export function goalRows(inputs: GoalInputs): GoalRow[] {
  const kept = inputs.kept ?? {};
  const rows: GoalRow[] = [
    ...ratioRows(kept, "rows kept", 1.25),
    ...ratioRows(inputs.notKept ?? {}, "rows not kept", 1.5),
    {
      goal: "rows kept: WAL <= 500 B per job",
      measured: perSize(kept, "pawl", (s) => int(s.median.walBytesPerJob)),
      holds: everySize(
        kept,
        "pawl",
        (s) => s.median.walBytesPerJob,
        (x) => x <= 500,
      ),
    },
  ];
  const { points, load, idle } = inputs.curves ?? { points: [], load: [], idle: [] };
  for (const [axis, x, what] of [
    ["backlog", 1_000_000, "1,000,000 due jobs behind the claim"],
    ["finished", 10_000_000, "10,000,000 finished rows kept"],
  ] as const) {
    const r = flatRatio(points, axis, x);
    rows.push({
      goal: `flat: >= 0.9x the empty-table rate with ${what}`,
      measured: r === undefined ? "not measured" : ratio(r),
      holds: r === undefined ? null : r >= 0.9,
    });
  }
  const half = load.flatMap((l) => {
    const p = l.result.points.find((q) => q.load === 0.5);
    return p ? [`${l.system} ${dec(p.p99)} ms`] : [];
  });
  rows.push({
    goal: "pickup p99 at 50% of the maximum load, reported",
    measured: half.length ? half.join(", ") : "not measured",
    holds: null,
  });
  const measuredIdle = idle.flatMap((p) =>
    "skipped" in p.result
      ? []
      : [`${p.nodes} ${p.coordinator} ${dec(p.result.transactionsPerSecondPerNode)} tx/s`],
  );
  rows.push({
    goal: "idle cost per node at 1, 10, 100 nodes, reported",
    measured: measuredIdle.length ? measuredIdle.join(", ") : "not measured",
    holds: null,
  });
  for (const [coordinator, target] of Object.entries(pickupTargets)) {
    const r = inputs.latency?.find((l) => l.coordinator === coordinator);
    rows.push({
      goal: `pickup p50, ${coordinator}: <= ${target} ms`,
      measured: r ? `${dec(r.p50)} ms (p99 ${dec(r.p99)})` : "not measured",
      holds: r ? r.p50 <= target : null,
    });
  }
  const dups = duplicates(inputs);
  rows.push({ goal: "every job succeeds exactly once", measured: `${dups} duplicates`, holds: dups === 0 });
  return rows;
}

/** The rows as a Markdown table (pasteable into docs/benchmarks.md). */
export function renderGoals(rows: readonly GoalRow[]): string {
  return renderTable(
    ["goal", "measured", "holds"],
    rows.map((r) => [r.goal, r.measured, r.holds === null ? "-" : r.holds ? "yes" : "no"]),
  );
}
