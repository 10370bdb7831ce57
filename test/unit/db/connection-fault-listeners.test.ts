/**
 * pawl's connection-fault listeners on a pool the host shares between many instances: each one raises the
 * pool's listener limit by one while it is subscribed, so twenty nodes on one pool raise no
 * MaxListenersExceededWarning in the host, and unsubscribing gives the limit back.
 */
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { onConnectionFault } from "../../../src/db/held-client.js";

const warnings: Error[] = [];
const onWarning = (w: Error) => warnings.push(w);

afterEach(() => {
  process.off("warning", onWarning);
  warnings.length = 0;
});

describe("onConnectionFault on a shared pool", () => {
  it("raises the limit per listener and gives it back", async () => {
    process.on("warning", onWarning);
    const pool = new pg.Pool({ max: 1 });
    const base = pool.getMaxListeners();
    const offs = Array.from({ length: 20 }, () => onConnectionFault(pool, () => {}));
    expect(pool.getMaxListeners()).toBe(base + 20);
    // Warnings are emitted on the next tick.
    await new Promise((resolve) => setImmediate(resolve));
    expect(warnings.filter((w) => w.name === "MaxListenersExceededWarning")).toEqual([]);
    for (const off of offs) off();
    offs[0]!(); // a second call is a no-op
    expect(pool.getMaxListeners()).toBe(base);
    await pool.end();
  });

  it("leaves an unlimited pool unlimited", () => {
    const pool = new pg.Pool({ max: 1 });
    pool.setMaxListeners(0);
    const off = onConnectionFault(pool, () => {});
    expect(pool.getMaxListeners()).toBe(0);
    off();
    expect(pool.getMaxListeners()).toBe(0);
  });
});
