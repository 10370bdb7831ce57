/**
 * The per-job part of the metrics, kept off prom-client's per-call path. prom-client hashes and
 * validates the label set on every `inc()` and `observe()` (0.2 to 1 us each, four per job); here a job
 * costs a map lookup and a few additions:
 *
 * - {@link TypeTally} counts claims, starts and outcomes per job type in plain records, and the
 *   prom-client counters add the difference when they are collected (once per scrape and type).
 * - {@link TypeHistogram} is a histogram labelled by job type that accumulates its buckets itself. It
 *   implements the small interface prom-client's Registry reads (`name`, `help`, `type`, `get()`,
 *   `reset()`), so it is registered and exposed like any other metric.
 */
import type { Counter, Registry } from "prom-client";
import { jobOutcomes, type JobOutcome } from "./metric-labels.js";

/** The counts of one job type. */
export interface TypeCounts {
  claimed: number;
  started: number;
  outcomes: Record<JobOutcome, number>;
}

function emptyCounts(): TypeCounts {
  const outcomes = {} as Record<JobOutcome, number>;
  for (const o of jobOutcomes) outcomes[o] = 0;
  return { claimed: 0, started: 0, outcomes };
}

/** Per-type counters, flushed into prom-client counters at scrape time. */
export class TypeTally {
  private readonly live = new Map<string, TypeCounts>();
  private readonly flushed = new Map<string, TypeCounts>();

  /** The counts of `type` (created at zero on first use). */
  of(type: string): TypeCounts {
    let c = this.live.get(type);
    if (c === undefined) {
      c = emptyCounts();
      this.live.set(type, c);
      this.flushed.set(type, emptyCounts());
    }
    return c;
  }

  /** The counts of `type`, or undefined when it was never seen. */
  peek(type: string): TypeCounts | undefined {
    return this.live.get(type);
  }

  /** Adds what `claimed` gained since the last flush to the counter (labelled by type). */
  flushClaimed(counter: Counter<"type">): void {
    for (const [type, c] of this.live) {
      const f = this.flushed.get(type) as TypeCounts;
      if (c.claimed > f.claimed) counter.inc({ type }, c.claimed - f.claimed);
      f.claimed = c.claimed;
    }
  }

  /** Adds what `started` gained since the last flush to the counter (labelled by type). */
  flushStarted(counter: Counter<"type">): void {
    for (const [type, c] of this.live) {
      const f = this.flushed.get(type) as TypeCounts;
      if (c.started > f.started) counter.inc({ type }, c.started - f.started);
      f.started = c.started;
    }
  }

  /** Adds what each outcome gained since the last flush to the counter (labelled by type and outcome). */
  flushOutcomes(counter: Counter<"type" | "outcome">): void {
    for (const [type, c] of this.live) {
      const f = this.flushed.get(type) as TypeCounts;
      for (const outcome of jobOutcomes) {
        const d = c.outcomes[outcome] - f.outcomes[outcome];
        if (d > 0) counter.inc({ type, outcome }, d);
        f.outcomes[outcome] = c.outcomes[outcome];
      }
    }
  }
}

interface Series {
  /** Observations per bucket (not cumulative); the last slot is above the highest bound. */
  counts: Float64Array;
  sum: number;
  count: number;
}

/** One exposed sample, as prom-client's Registry formats it. */
interface Sample {
  metricName: string;
  labels: Record<string, string | number>;
  value: number;
}

/**
 * A histogram with one label, `type`, whose observations cost no allocation.
 *
 * @example
 * ```ts
 * const h = new TypeHistogram("pawl_job_duration_seconds", "Handler run time.", [0.1, 1, 10]);
 * h.register(registry);
 * h.observe("email.send", 0.42);
 * ```
 */
export class TypeHistogram {
  readonly type = "histogram";
  readonly aggregator = "sum";
  private readonly series = new Map<string, Series>();
  private readonly bounds: Float64Array;

  constructor(
    readonly name: string,
    readonly help: string,
    buckets: readonly number[],
  ) {
    this.bounds = Float64Array.from([...buckets].sort((a, b) => a - b));
  }

  /** Registers this histogram on a registry (prom-client throws when the name is taken). */
  register(registry: Registry): this {
    registry.registerMetric(this as unknown as Parameters<Registry["registerMetric"]>[0]);
    return this;
  }

  /** Records one observation of `type`. */
  observe(type: string, value: number): void {
    let s = this.series.get(type);
    if (s === undefined) s = this.zero(type);
    const b = this.bounds;
    let i = 0;
    while (i < b.length && value > (b[i] ?? Infinity)) i++;
    s.counts[i] = (s.counts[i] ?? 0) + 1;
    s.sum += value;
    s.count++;
  }

  /** Starts the series of `type` at zero (so it is exposed before the first observation). */
  zero(type: string): Series {
    let s = this.series.get(type);
    if (s === undefined) {
      s = { counts: new Float64Array(this.bounds.length + 1), sum: 0, count: 0 };
      this.series.set(type, s);
    }
    return s;
  }

  /** What prom-client's Registry reads: cumulative buckets, `+Inf`, sum and count per type. */
  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: Sample[] }> {
    const values: Sample[] = [];
    const bucket = `${this.name}_bucket`;
    for (const [type, s] of this.series) {
      let acc = 0;
      this.bounds.forEach((le, i) => {
        acc += s.counts[i] ?? 0;
        values.push({ metricName: bucket, labels: { le, type }, value: acc });
      });
      values.push({ metricName: bucket, labels: { le: "+Inf", type }, value: s.count });
      values.push({ metricName: `${this.name}_sum`, labels: { type }, value: s.sum });
      values.push({ metricName: `${this.name}_count`, labels: { type }, value: s.count });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  /** Forgets every observation (prom-client's `registry.resetMetrics()`). */
  reset(): void {
    this.series.clear();
  }
}
