import { describe, expect, it } from "vitest";
import { snapshotMisfit, type StateTree, type StateValueJson } from "../../../src/logic/machine-fit.js";

const tree: StateTree = {
  cart: {},
  paying: { charging: {}, retrying: {} },
  fulfilment: { packing: { picking: {}, boxing: {} }, billing: { invoiced: {} } },
  done: {},
};

describe("snapshotMisfit", () => {
  it.each<[string, StateValueJson, string[], object | null]>([
    ["an atomic state that exists", "cart", [], null],
    ["a nested state that exists", { paying: "retrying" }, [], null],
    ["a parallel state that exists", { fulfilment: { packing: "boxing", billing: "invoiced" } }, [], null],
    ["a removed top-level state", "legacyReview", [], { kind: "state", path: "order.legacyReview" }],
    ["a removed child state", { paying: "manual" }, [], { kind: "state", path: "order.paying.manual" }],
    ["a removed compound parent", { review: "open" }, [], { kind: "state", path: "order.review" }],
    [
      "a removed region of a parallel state",
      { fulfilment: { packing: "boxing", legal: "ok" } },
      [],
      { kind: "state", path: "order.fulfilment.legal" },
    ],
    [
      "a removed deep state",
      { fulfilment: { packing: "weighing", billing: "invoiced" } },
      [],
      { kind: "state", path: "order.fulfilment.packing.weighing" },
    ],
    ["a property name of Object is no state", "toString", [], { kind: "state", path: "order.toString" }],
    ["a running actor still provided", { paying: "charging" }, ["charge"], null],
    [
      "a running actor no longer provided",
      { paying: "charging" },
      ["chargeV1"],
      { kind: "actor", src: "chargeV1" },
    ],
  ])("%s", (_label, value, running, expected) => {
    expect(snapshotMisfit("order", tree, value, running, ["charge", "ship"])).toEqual(expected);
  });
});
