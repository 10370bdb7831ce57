import { describe, expect, it } from "vitest";
import { machineDetail } from "../../../src/cli/machine-format.js";
import type { MachineView } from "../../../src/core/machine-view.js";

const at = (ms: number) => new Date(Date.UTC(2026, 0, 1) + ms);

describe("pawl job <id>: the machine part", () => {
  it("shows the state, context, pending timers and the event history", () => {
    const view: MachineView = {
      value: { fulfilment: "packing" },
      context: { orderId: "o-1", apiToken: "[redacted]" },
      status: "active",
      version: "2",
      timers: [{ id: "xstate.after.2000.order.a", eventType: "xstate.after.2000.order.a", dueAt: at(2000) }],
      events: [
        { seq: 2, type: "NOTE", status: "pending", sentAt: at(900), handledAt: null, stateAfter: null },
        {
          seq: 1,
          type: "PAY",
          status: "consumed",
          sentAt: at(100),
          handledAt: at(150),
          stateAfter: "charging",
        },
      ],
      finishedAt: null,
    };
    expect(machineDetail(view, at(500))).toEqual([
      'machine: {"fulfilment":"packing"} (active, version 2)',
      '  context: {"orderId":"o-1","apiToken":"[redacted]"}',
      "  timers (1):",
      "    2026-01-01T00:00:02.000Z (in 1500 ms)  xstate.after.2000.order.a",
      "  events (2, newest first):",
      "    #2 NOTE sent 2026-01-01T00:00:00.900Z pending",
      "    #1 PAY sent 2026-01-01T00:00:00.100Z -> consumed 2026-01-01T00:00:00.150Z, then charging",
    ]);
  });

  it("shows a finished machine and an overdue timer", () => {
    const lines = machineDetail(
      {
        value: "shipped",
        context: {},
        status: "done",
        version: "1",
        timers: [{ id: "t", eventType: "t", dueAt: at(0) }],
        events: [],
        finishedAt: at(10),
      },
      at(250),
    );
    expect(lines).toContain("  finished: 2026-01-01T00:00:00.010Z");
    expect(lines).toContain("    2026-01-01T00:00:00.000Z (250 ms ago)  t");
  });
});
