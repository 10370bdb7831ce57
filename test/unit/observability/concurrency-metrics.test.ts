/**
 * The `pawl_concurrency_*` gauges against a fake node whose store answers the operator read of the
 * concurrency keys' load: the counts become unlabelled gauges, the read asks for no busiest keys (they
 * are never labels), it is cached like the queue depth, and a failing read keeps the last values and is
 * counted. A source without the read (an older or smaller store) gets zeros and no error.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { PawlEventEmitter } from "../../../src/core/events.js";
import type { ConcurrencyKeys } from "../../../src/store/operator/concurrency-keys-sql.js";
import { createMetrics, type PawlMetrics } from "../../../observability/index.js";
import type { MetricsOptions, MetricsSource } from "../../../observability/metrics.js";
import { metricKey as key, parseMetrics as parse } from "../../helpers/metrics.js";

const load = (over: Partial<ConcurrencyKeys> = {}): ConcurrencyKeys => ({
  activeKeys: 12,
  keysAtLimit: 3,
  running: 20,
  waiting: 140,
  waitingCapped: false,
  keysCapped: false,
  waitingCapPerKey: 8333,
  busiest: [],
  at: new Date(),
  ...over,
});

function source(read?: (bounds?: { top?: number }) => Promise<ConcurrencyKeys>): MetricsSource {
  const events = new PawlEventEmitter();
  return {
    nodeId: "n1",
    running: false,
    on: (name, listener) => events.on(name, listener),
    inspect: () => null,
    store: { counts: async () => [], ...(read ? { operator: { concurrencyKeys: read } } : {}) },
  };
}

let open: PawlMetrics[] = [];
afterEach(() => {
  for (const m of open) m.close();
  open = [];
});
const metricsOf = (s: MetricsSource, options: MetricsOptions = {}) => {
  const m = createMetrics(s, { concurrencyKeysCacheMs: 0, ...options });
  open.push(m);
  return m;
};
const scrape = async (m: PawlMetrics) => parse(await m.metrics());
const series = (s: Map<string, number>) =>
  Object.fromEntries([...s].filter(([k]) => k.startsWith("pawl_concurrency_") && !k.includes("updated")));

describe("concurrency key gauges", () => {
  it("are the read's counts, without labels, and ask for no busiest keys", async () => {
    const read = vi.fn(async () =>
      load({ busiest: [{ key: "tenant-1", running: 3, limit: 3, waiting: 9, atLimit: true }] }),
    );
    const s = await scrape(metricsOf(source(read)));
    expect(series(s)).toEqual({
      pawl_concurrency_keys_active: 12,
      pawl_concurrency_keys_at_limit: 3,
      pawl_concurrency_keyed_jobs_running: 20,
      pawl_concurrency_keyed_jobs_waiting: 140,
    });
    expect(s.get("pawl_concurrency_keys_updated_timestamp_seconds")).toBeGreaterThan(Date.now() / 1000 - 60);
    expect(read).toHaveBeenCalledWith({ top: 0 });
    expect([...s.keys()].some((k) => k.includes("tenant-1"))).toBe(false);
  });

  it("reuse one read within the cache window", async () => {
    let current = load();
    const read = vi.fn(async () => current);
    const m = metricsOf(source(read), { concurrencyKeysCacheMs: 60_000 });
    await m.metrics();
    current = load({ keysAtLimit: 9 });
    const s = await scrape(m);
    expect(read).toHaveBeenCalledTimes(1);
    expect(s.get("pawl_concurrency_keys_at_limit")).toBe(3);
  });

  it("keep the last values and count the error when the read fails", async () => {
    let fail = false;
    const m = metricsOf(
      source(async () => {
        if (fail) throw new Error("connection refused");
        return load();
      }),
    );
    await m.metrics();
    fail = true;
    const s = await scrape(m);
    expect(s.get("pawl_concurrency_keys_at_limit")).toBe(3);
    expect(s.get(key("pawl_scrape_read_errors_total", { read: "concurrency_keys", reason: "failed" }))).toBe(
      1,
    );
  });

  it("stay at zero without the read, and count no error", async () => {
    const s = await scrape(metricsOf(source()));
    expect(Object.values(series(s))).toEqual([0, 0, 0, 0]);
    expect([...s.keys()].filter((k) => k.startsWith("pawl_scrape_read_errors_total{"))).toEqual([]);
  });
});
