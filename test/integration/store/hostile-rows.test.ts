/**
 * Rows pawl did not write, and configuration it cannot store: a row whose `errors` was set by another
 * client to something other than an array of records must still read (one odd row must not make every
 * read of it throw), and a node id PostgreSQL cannot store is refused when the instance is created, not
 * at its first claim.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { createPawl, ValidationError, type PawlClient } from "../../../src/index.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let pawl: PawlClient;

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("hrow"));
  pawl = testPawl(schema);
});
afterAll(async () => {
  await pawl.close();
  await cleanup();
});

describe("rows written by other clients", () => {
  it.each([
    ["an object", `'{"message": "not a list"}'`, null],
    ["a list of strings", `'["plain text"]'`, null],
    ["a record without a text message", `'[{"message": 42}]'`, null],
    ["a list whose last record has a message", `'[{"message": "old"}, {"message": "new"}]'`, "new"],
  ])("reads a job whose errors column holds %s", async (_what, json, lastError) => {
    const job = await pawl.enqueue("hostile.row", {});
    await pool.query(`UPDATE "${schema}".scheduler_job_queue SET errors = ${json}::jsonb WHERE id = $1`, [
      job.id,
    ]);
    const read = await pawl.getJob(job.id);
    expect(read?.lastError).toBe(lastError);
    const listed = await pawl.listJobs({ type: "hostile.row" });
    expect(listed.map((j) => j.id)).toContain(job.id);
  });
});

describe("configuration PostgreSQL cannot store", () => {
  it.each([
    ["a NUL", "node\u0000a"],
    ["a lone surrogate", "node\uD800"],
  ])("refuses a nodeId with %s before anything is written", (_what, nodeId) => {
    expect(() => createPawl({ connectionString: "postgres://127.0.0.1/test", schema, nodeId })).toThrow(
      ValidationError,
    );
  });
});
