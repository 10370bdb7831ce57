/**
 * `toError` turns whatever a handler, a listener or a library threw into an Error for the `error` event.
 * It runs on error paths, so it must never throw itself, whatever the value.
 */
import { describe, expect, it } from "vitest";
import { toError } from "../../../src/core/events.js";

const revoked = (() => {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy;
})();

describe("toError", () => {
  it.each([
    ["an Error, unchanged", new TypeError("t"), "TypeError", "t"],
    ["a string", "boom", "NonErrorThrown", "boom"],
    ["a plain object with a message", { message: "m", code: 1 }, "NonErrorThrown", "m"],
    ["a number", 42, "NonErrorThrown", "non-error thrown: 42"],
  ])("keeps what can be kept: %s", (_what, value, name, message) => {
    const e = toError(value);
    expect(e).toBeInstanceOf(Error);
    expect(e.name).toBe(name);
    expect(e.message).toBe(message);
  });

  it.each([
    [
      "toJSON and toString both throw",
      {
        toJSON() {
          throw new Error("no json");
        },
        toString() {
          throw new Error("no string");
        },
      },
    ],
    ["a revoked Proxy", revoked],
    ["an object without a prototype whose JSON form throws", Object.assign(Object.create(null), { n: 1n })],
  ])("never throws: %s", (_what, value) => {
    const e = toError(value);
    expect(e).toBeInstanceOf(Error);
    expect(typeof e.message).toBe("string");
  });
});
