/**
 * Loading an optional peer by name: a missing package becomes a MissingDependencyError naming it, for the
 * dynamic import (the transports) and for the synchronous require (prom-client for createMetrics), and
 * any other failure is left as it is.
 */
import { describe, expect, it } from "vitest";
import { importOptional, MissingDependencyError, requireOptional } from "../../../src/core/errors.js";
import { moduleLocation } from "../../../src/core/module-location.js";

const missing = "pawl-no-such-package-for-this-test";

describe("requireOptional", () => {
  it("returns an installed CommonJS package (the same instance a require gives)", () => {
    const prom = requireOptional<{ Registry: unknown }>("prom-client", "the test");
    expect(typeof prom.Registry).toBe("function");
  });

  it("names a missing package in a MissingDependencyError", () => {
    let thrown: unknown;
    try {
      requireOptional(missing, "the test");
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(MissingDependencyError);
    expect((thrown as MissingDependencyError).packageName).toBe(missing);
    expect((thrown as Error).message).toContain(`npm install ${missing}`);
  });
});

describe("importOptional", () => {
  it("names a missing package in a MissingDependencyError", async () => {
    await expect(importOptional(missing, "the test", () => import(missing))).rejects.toBeInstanceOf(
      MissingDependencyError,
    );
  });

  it("leaves any other failure as it is", async () => {
    const other = new Error("boom");
    await expect(importOptional(missing, "the test", () => Promise.reject(other))).rejects.toBe(other);
  });
});

describe("moduleLocation", () => {
  it("is this module's file URL when import.meta has one", () => {
    expect(moduleLocation()).toMatch(/^file:\/\/.*\/src\/core\/module-location\.ts$/);
  });
});
