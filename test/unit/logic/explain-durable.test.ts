import { describe, expect, it } from "vitest";
import { describeReason } from "../../../src/logic/explain-text.js";
import type { WaitingDurableReason } from "../../../src/logic/explain.js";

const since = new Date("2030-01-01T10:00:00.000Z");
const until = new Date("2030-01-04T10:00:00.000Z");

describe("explain: durable waits", () => {
  it.each([
    [
      "a sleep",
      { kind: "waiting-durable", step: "wait-3-days", wait: "sleep", since, until },
      "sleeping until 2030-01-04T10:00:00.000Z (step 'wait-3-days')",
    ],
    [
      "a signal with a timeout",
      { kind: "waiting-durable", step: "approval", wait: "signal", since, until },
      "waiting for signal 'approval' since 2030-01-01T10:00:00.000Z, times out at 2030-01-04T10:00:00.000Z",
    ],
    [
      "a signal without one",
      { kind: "waiting-durable", step: "approval", wait: "signal", since, until: null },
      "waiting for signal 'approval' since 2030-01-01T10:00:00.000Z",
    ],
    [
      "children",
      {
        kind: "waiting-durable",
        step: "kids",
        wait: "children",
        since,
        until: null,
        pending: ["7", "9"],
        total: 5,
      },
      "waiting for 2 of 5 children (7, 9) (step 'kids')",
    ],
  ] as [string, WaitingDurableReason, string][])("%s", (_n, reason, text) => {
    expect(describeReason(reason, since)).toBe(text);
  });
});
