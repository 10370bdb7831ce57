/**
 * `pawl keys` through the CLI's main(): the concurrency keys' counts and the busiest keys, as text and as
 * JSON, against a schema whose keyed rows this file writes and leases itself (the lease's UPDATE, so the
 * 0011 triggers count them as a claim's would).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import type { Pawl } from "../../../src/index.js";
import type { ConcurrencyKeys } from "../../../src/store/operator/concurrency-keys-sql.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";
import { runCliOn } from "../../helpers/cli.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let pawl: Pawl;

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("clikeys"));
  pawl = testPawl(schema);
});
afterAll(async () => {
  await pawl.close();
  await cleanup();
});

describe("pawl keys", () => {
  it("says no key is active on a schema without keyed jobs", async () => {
    const { stdout, code } = await runCliOn(schema, "keys");
    expect(code).toBe(0);
    expect(stdout.trim()).toBe("0 active keys, 0 at their limit; 0 keyed jobs running, 0 due and waiting");
  });

  it("counts the keys at their limit and lists the busiest, as text and as JSON", async () => {
    const job = (key: string, limit: number) => ({ type: "t", concurrencyKey: key, concurrencyLimit: limit });
    const busy = await pawl.enqueueMany(Array.from({ length: 5 }, () => job("tenant-42", 2)));
    const calm = await pawl.enqueueMany(Array.from({ length: 2 }, () => job("tenant-7", 4)));
    await pool.query(
      `UPDATE "${schema}".scheduler_job_queue SET picked_by = 'n1', picked_at = now(), attempts = attempts + 1
       WHERE id = ANY($1::bigint[])`,
      [[busy[0]!.id, busy[1]!.id, calm[0]!.id]],
    );

    const text = await runCliOn(schema, "keys");
    expect(text.code).toBe(0);
    expect(text.stdout.split("\n").map((l) => l.trimEnd())).toEqual([
      "2 active keys, 1 at their limit; 3 keyed jobs running, 4 due and waiting",
      "",
      "KEY        RUNNING  LIMIT  WAITING",
      "tenant-42  2        2      3        at limit",
      "tenant-7   1        4      1",
      "",
    ]);

    const { stdout, code } = await runCliOn(schema, "keys", "--top", "1", "--json");
    expect(code).toBe(0);
    const k = JSON.parse(stdout) as ConcurrencyKeys;
    expect(k).toMatchObject({ activeKeys: 2, keysAtLimit: 1, running: 3, waiting: 4 });
    expect(k.busiest).toEqual([{ key: "tenant-42", running: 2, limit: 2, waiting: 3, atLimit: true }]);
  });

  it("refuses a --top out of range", async () => {
    const r = await runCliOn(schema, "keys", "--top", "1001");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--top takes an integer from 0 to 1000, not 1001");
  });
});
