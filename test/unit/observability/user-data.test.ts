/**
 * What the inspection views keep of a durable machine's inspection events without `includePayloads`
 * (observability/user-data.ts): the shape (state values, statuses, event and action types), never the
 * context, the events' fields, an action's params or the definition's initial context.
 */
import { describe, expect, it } from "vitest";
import type { InspectionEvent } from "xstate";
import {
  configWithoutUserData,
  snapshotWithoutUserData,
  withoutUserData,
} from "../../../observability/user-data.js";

const actorRef = { sessionId: "x.0" } as never;
const snapshot = {
  value: { paid: "waiting" },
  status: "active",
  context: { card: "4111" },
  output: { r: 1 },
};

describe("withoutUserData", () => {
  const cases: [string, InspectionEvent, unknown][] = [
    [
      "an event: its type only",
      {
        type: "@xstate.event",
        actorRef,
        rootId: "x.0",
        sourceRef: undefined,
        event: { type: "PAY", card: "4111" },
      },
      { event: { type: "PAY" } },
    ],
    [
      "a snapshot: value and status, the context redacted, no output",
      {
        type: "@xstate.snapshot",
        actorRef,
        rootId: "x.0",
        event: { type: "PAY", card: "4111" },
        snapshot,
      } as never,
      {
        event: { type: "PAY" },
        snapshot: { value: { paid: "waiting" }, status: "active", context: "[redacted]" },
      },
    ],
    [
      "an action: its type only",
      { type: "@xstate.action", actorRef, rootId: "x.0", action: { type: "notify", params: { to: "a@b" } } },
      { action: { type: "notify" } },
    ],
  ];
  it.each(cases)("%s", (_name, e, expected) => {
    const out = withoutUserData(e) as unknown as Record<string, unknown>;
    expect(out).toMatchObject(expected as Record<string, unknown>);
    expect(JSON.stringify({ ...out, actorRef: null })).not.toMatch(/4111|a@b|"r":1/);
  });

  it("leaves a registration as it is (the bridge's stand-in redacts what it reads of the actor)", () => {
    const e = { type: "@xstate.actor", actorRef, rootId: "x.0" } as InspectionEvent;
    expect(withoutUserData(e)).toBe(e);
  });

  it("redacts a definition's initial context, and leaves one without it alone", () => {
    expect(configWithoutUserData({ id: "m", context: { apiKey: "k" }, states: {} })).toEqual({
      id: "m",
      context: "[redacted]",
      states: {},
    });
    const plain = { id: "m", states: {} };
    expect(configWithoutUserData(plain)).toBe(plain);
    expect(snapshotWithoutUserData(null)).toBeNull();
  });
});
