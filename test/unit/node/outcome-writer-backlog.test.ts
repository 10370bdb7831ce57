/**
 * The outcome writer's `backlog` (outcomes not written yet, which holds the node's claims back) counts
 * each outcome once, also at the moment a failed flush puts its batch back and reports the failure: the
 * runtime reads it from that report to decide whether to claim.
 */
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../../src/core/clock.js";
import { silentLogger } from "../../../src/core/logger.js";
import { OutcomeWriter } from "../../../src/node/outcome-writer.js";
import type { NodeStore } from "../../../src/store/job-store.js";

/** A store whose completions fail with a connection error `failures` times, then land. */
function flakyStore(failures: number): NodeStore {
  let left = failures;
  return {
    complete: async (_node: string, items: { id: string }[]) => {
      if (left-- > 0) throw Object.assign(new Error("connection reset"), { code: "ECONNRESET" });
      return new Set(items.map((i) => i.id));
    },
  } as unknown as NodeStore;
}

/** Lets the writer's awaited store calls and their continuations run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe("OutcomeWriter backlog", () => {
  it("counts a requeued batch once while its failure is reported, and drops to 0 once written", async () => {
    const clock = new ManualClock();
    const seen: number[] = [];
    const writer: OutcomeWriter = new OutcomeWriter(flakyStore(2), "n1", clock, silentLogger, 5, () =>
      seen.push(writer.backlog),
    );
    const landed: boolean[] = [];
    for (let i = 1; i <= 3; i++)
      writer.complete({ id: String(i), resultJson: null }, (ok) => landed.push(ok));
    expect(writer.backlog).toBe(3);

    clock.advance(5); // first flush: fails
    await settle();
    expect(seen).toEqual([3]);
    expect(writer.backlog).toBe(3);

    clock.advance(200); // the retry after the first backoff: fails again
    await settle();
    expect(seen).toEqual([3, 3]);

    clock.advance(400); // the next retry lands
    await settle();
    expect(landed).toEqual([true, true, true]);
    expect(writer.backlog).toBe(0);
  });
});
