/**
 * Pawl's own rules that need no database: a stopped node refuses new job types, since it never claims
 * again and their handlers could never run.
 */
import { describe, expect, it } from "vitest";
import { createPawl, PawlError } from "../../../src/index.js";

// Never connected: stop() without start() touches neither the pool nor a coordinator.
const unusedDatabase = "postgres://nobody@127.0.0.1:1/none";

describe("register() after stop()", () => {
  it("throws INVALID_STATE, and registering before stop() still works", async () => {
    const pawl = createPawl({ connectionString: unusedDatabase });
    pawl.register("before.stop", async () => "ok");
    await pawl.stop();
    let thrown: unknown;
    try {
      pawl.register("after.stop", async () => "never");
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(PawlError);
    expect(thrown).toMatchObject({ code: "INVALID_STATE" });
    expect((thrown as Error).message).toMatch(/after stop\(\).*never run/);
    expect(pawl.registeredTypes).toEqual(["before.stop"]);
    await pawl.close();
  });
});
