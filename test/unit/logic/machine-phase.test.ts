import { describe, expect, it } from "vitest";
import { machinePhase, type PhaseSnapshot } from "../../../src/logic/machine-phase.js";

describe("machinePhase", () => {
  it.each<[string, PhaseSnapshot, string]>([
    ["no children: idle", { status: "active", children: {} }, "idle"],
    ["a running invoke: busy", { status: "active", children: { charge: { status: "active" } } }, "busy"],
    ["a settled invoke only: idle", { status: "active", children: { charge: { status: "done" } } }, "idle"],
    [
      "one running among settled: busy",
      { status: "active", children: { a: { status: "error" }, b: { status: "active" } } },
      "busy",
    ],
    ["an absent child entry: idle", { status: "active", children: { a: undefined } }, "idle"],
    ["final state", { status: "done", children: { a: { status: "active" } } }, "final"],
    ["unhandled error", { status: "error", children: {} }, "error"],
    ["stopped", { status: "stopped", children: {} }, "stopped"],
  ])("%s", (_label, snapshot, phase) => {
    expect(machinePhase(snapshot)).toBe(phase);
  });
});
