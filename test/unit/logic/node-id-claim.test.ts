import { describe, expect, it } from "vitest";
import {
  previousRunVerdict,
  type IdLockState,
  type PreviousRunFacts,
  type PreviousRunVerdict,
} from "../../../src/logic/node-id-claim.js";

const threshold = 30_000;
const fresh: PreviousRunFacts = {
  instance: "old",
  declaredDead: false,
  ageMs: 500,
  heldIdLock: true,
  beatSinceFirstRead: false,
};

describe("previousRunVerdict", () => {
  const cases: [string, PreviousRunFacts | null, IdLockState, PreviousRunVerdict][] = [
    ["no row", null, "busy", "proceed"],
    ["our own run's row", { ...fresh, instance: "self" }, "busy", "proceed"],
    ["declared dead", { ...fresh, declaredDead: true }, "busy", "proceed"],
    ["stale heartbeat, lock still held", { ...fresh, ageMs: threshold }, "busy", "proceed"],
    ["fresh, its lock free: its session ended (kill -9)", fresh, "acquired", "proceed"],
    ["fresh, its lock held", fresh, "busy", "wait"],
    ["fresh, lock unavailable here", fresh, "unavailable", "wait"],
    ["fresh row of a run that took no lock (0.2.0)", { ...fresh, heldIdLock: false }, "acquired", "wait"],
    ["it beat again while we looked", { ...fresh, beatSinceFirstRead: true }, "busy", "refuse"],
    [
      "it beat again, even with no lock",
      { ...fresh, heldIdLock: false, beatSinceFirstRead: true },
      "acquired",
      "refuse",
    ],
    [
      "stale wins over a beat seen earlier",
      { ...fresh, ageMs: threshold + 1, beatSinceFirstRead: true },
      "busy",
      "proceed",
    ],
  ];
  it.each(cases)("%s", (_what, row, lock, expected) => {
    expect(previousRunVerdict(row, lock, "self", threshold)).toBe(expected);
  });
});
