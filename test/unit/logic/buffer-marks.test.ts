import { describe, expect, it } from "vitest";
import { bufferMarks } from "../../../src/logic/buffer-marks.js";

describe("bufferMarks", () => {
  it.each([
    // prefetch, lowWater, claimAhead
    [500, 250, 125],
    [501, 250, 125],
    [10, 5, 2],
    [3, 1, 0],
    [1, 1, 0],
    [0, 1, 0],
    [-5, 1, 0],
  ])("prefetch %i: low water %i, claim ahead at %i", (prefetch, lowWater, claimAhead) => {
    expect(bufferMarks(prefetch)).toEqual({ lowWater, claimAhead });
  });

  it("the claim-ahead mark is always below the low water", () => {
    for (let p = 0; p <= 2000; p++) {
      const m = bufferMarks(p);
      expect(m.claimAhead).toBeLessThan(m.lowWater);
    }
  });
});
