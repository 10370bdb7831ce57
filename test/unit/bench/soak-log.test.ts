import { describe, expect, it } from "vitest";
import { parseSlowLog } from "../../../scripts/bench/soak-log.js";

const log = `2026-12-07 07:41:43.352 UTC [23724] LOG:  duration: 157.112 ms  statement: COMMIT
2026-12-07 07:41:44.001 UTC [23725] LOG:  duration: 612.500 ms  execute pawl_bench_pawl_soak_keyed_claim_window_full: WITH c AS (
2026-12-07 07:41:44.100 UTC [23725] LOG:  checkpoint starting: time
2026-12-07 07:41:45.010 UTC [23726] LOG:  duration: 101.2 ms  execute <unnamed>: SELECT   1
2026-12-07 07:41:45.020 UTC [23726] LOG:  duration: 99.9 ms  bind x: SELECT 2`;

describe("parseSlowLog", () => {
  it("counts statements over 100 and 500 ms and names the slowest three", () => {
    expect(parseSlowLog(log)).toEqual({
      over100: 3,
      over500: 1,
      top: [
        { ms: 613, what: "pawl_bench_pawl_soak_keyed_claim_window_full" },
        { ms: 157, what: "COMMIT" },
        { ms: 101, what: "SELECT 1" },
      ],
    });
  });

  it("reads nothing from a log without duration lines", () => {
    expect(parseSlowLog("LOG:  checkpoint complete\n")).toEqual({ over100: 0, over500: 0, top: [] });
  });
});
