/**
 * The orchestrator of `--primaries` (two-primaries.ts measures; this runs the variants interleaved, one
 * child each, and prints the medians).
 */
import { runChild } from "./lib/child.js";
import { databaseName, median } from "./lib/common.js";
import { int, ratio, renderTable } from "./lib/table.js";

/** The variants, in the order a round runs them. */
export const PRIMARY_VARIANTS = ["one", "one-two-nodes", "two"] as const;
export type PrimaryVariant = (typeof PRIMARY_VARIANTS)[number];

/** One variant, one child (two-primaries.ts). */
export interface TwoPrimariesInput {
  variant: PrimaryVariant;
  urls: [string, string];
  jobs: number;
  concurrency: number;
}

/** What one variant measured. */
export interface TwoPrimariesResult {
  variant: PrimaryVariant;
  jobsPerSecond: number;
  nodeUs: number;
  dbUs: number;
  /** WAL bytes per job of each primary that ran jobs (per job it ran). */
  walBytesPerJob: number[];
  otherLoadPct: number;
  duplicates: number;
}

const TITLES: Record<PrimaryVariant, string> = {
  one: "one primary, one node",
  "one-two-nodes": "one primary, two nodes",
  two: "two primaries, a node on each",
};

/** Runs `rounds` rounds of the three variants on `urls` and prints their medians. */
export async function runTwoPrimaries(
  urls: [string, string],
  rounds: number,
): Promise<Record<PrimaryVariant, TwoPrimariesResult[]>> {
  const out: Record<PrimaryVariant, TwoPrimariesResult[]> = { one: [], "one-two-nodes": [], two: [] };
  for (let round = 1; round <= rounds; round++) {
    for (const variant of PRIMARY_VARIANTS) {
      process.stderr.write(`primaries: round ${round}/${rounds}, ${TITLES[variant]}\n`);
      const input: TwoPrimariesInput = { variant, urls, jobs: 40_000, concurrency: 10 };
      out[variant].push(
        await runChild<TwoPrimariesResult>("two-primaries.ts", input, { database: databaseName(urls[0]) }),
      );
    }
  }
  const med = (v: PrimaryVariant, f: (r: TwoPrimariesResult) => number) => median(out[v].map(f));
  const base = med("one", (r) => r.jobsPerSecond);
  console.log(`\nOne primary or two (40,000 no-op jobs, 10 slots a node, median of ${rounds} rounds)`);
  console.log(
    renderTable(
      [
        "variant",
        "jobs/s",
        "vs one node",
        "node CPU us/job",
        "db CPU us/job",
        "WAL B/job per primary",
        "other load",
        "run twice",
      ],
      PRIMARY_VARIANTS.map((v) => [
        TITLES[v],
        int(med(v, (r) => r.jobsPerSecond)),
        ratio(med(v, (r) => r.jobsPerSecond) / base),
        int(med(v, (r) => r.nodeUs)),
        int(med(v, (r) => r.dbUs)),
        out[v][0]!.walBytesPerJob.map((_, k) => int(median(out[v].map((r) => r.walBytesPerJob[k]!)))).join(
          " / ",
        ),
        `${Math.round(med(v, (r) => r.otherLoadPct))}%`,
        String(out[v].reduce((n, r) => n + r.duplicates, 0)),
      ]),
    ),
  );
  return out;
}
