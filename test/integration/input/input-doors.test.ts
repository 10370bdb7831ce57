/**
 * Every door that takes a string or JSON from the caller refuses bad input with a typed ValidationError
 * (a stable code) before any SQL runs, and writes nothing: no raw database error (22P05, 22P02, 22021,
 * "column nan does not exist"), no RangeError, no silently empty page or silently altered value.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { ValidationError, type Pawl, type PawlErrorCode } from "../../../src/index.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let pawl: Pawl;
let pendingId: string;
let flowId: string;

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("indoor"));
  pawl = testPawl(schema);
  pendingId = (await pawl.enqueue("door.pending", { n: 1 })).id;
  flowId = (await pawl.chain([{ type: "door.step" }])).flowId;
});
afterAll(async () => {
  await pawl.close();
  await cleanup();
});

/** Rows of every table a door could write, so "nothing written" covers jobs, flows, pauses, schedules. */
async function snapshot(): Promise<string> {
  const q = (sql: string) => pool.query(sql.replaceAll("$s", `"${schema}"`));
  const jobs = await q(
    `SELECT id, status, type, queue, cancel_reason, payload FROM $s.scheduler_job_all ORDER BY id`,
  );
  const flows = await q(`SELECT id, name FROM $s.scheduler_flow ORDER BY id`);
  const others = await q(
    `SELECT (SELECT count(*) FROM $s.scheduler_recurring) AS schedules,
            (SELECT count(*) FROM $s.scheduler_pause) AS pauses`,
  );
  return JSON.stringify([jobs.rows, flows.rows, others.rows]);
}

function nest(levels: number, shape: "array" | "object"): unknown {
  let v: unknown = 1;
  for (let i = 0; i < levels; i++) v = shape === "array" ? [v] : { k: v };
  return v;
}

// The casts let the tests pass what a JavaScript caller (or a wrong type assertion) could pass.
const any = (v: unknown) => v as never;

const cases: [string, () => Promise<unknown>, PawlErrorCode][] = [
  ["enqueue: NUL in a payload value", () => pawl.enqueue("t", { a: "x\u0000" }), "INVALID_PAYLOAD"],
  ["enqueue: NUL in a payload key", () => pawl.enqueue("t", { "k\u0000": 1 }), "INVALID_PAYLOAD"],
  ["enqueue: a lone surrogate in a payload", () => pawl.enqueue("t", ["\ud800"]), "INVALID_PAYLOAD"],
  ["enqueue: arrays 2,000 deep", () => pawl.enqueue("t", nest(2000, "array")), "INVALID_PAYLOAD"],
  ["enqueue: objects 6,000 deep", () => pawl.enqueue("t", nest(6000, "object")), "INVALID_PAYLOAD"],
  // eslint-disable-next-line no-sparse-arrays
  ["enqueue: a sparse array", () => pawl.enqueue("t", { a: [1, , 3] }), "INVALID_PAYLOAD"],
  ["enqueue: NUL in a unique key", () => pawl.enqueue("t", {}, { uniqueKey: "k\u0000" }), "INVALID_OPTION"],
  ["enqueue: a lone surrogate in a type", () => pawl.enqueue("t\udc00", {}), "INVALID_JOB_TYPE"],
  [
    "enqueue: a lone surrogate in a queue",
    () => pawl.enqueue("t", {}, { queue: "q\ud800" }),
    "INVALID_OPTION",
  ],
  [
    "enqueueMany: a BigInt maxAttempts",
    () => pawl.enqueueMany([{ type: "t", maxAttempts: any(3n) }]),
    "INVALID_OPTION",
  ],
  ["cancel: NUL in the reason", () => pawl.cancel(pendingId, "why\u0000"), "INVALID_OPTION"],
  ["cancel: a lone surrogate in the reason", () => pawl.cancel(pendingId, "\udfff"), "INVALID_OPTION"],
  ["cancel: a reason that is not a string", () => pawl.cancel(pendingId, any(42)), "INVALID_OPTION"],
  ["listJobs: beforeId abc", () => pawl.listJobs({ beforeId: "abc" }), "INVALID_OPTION"],
  ["listJobs: limit x", () => pawl.listJobs({ limit: any("x") }), "INVALID_OPTION"],
  ["listJobs: limit 0", () => pawl.listJobs({ limit: 0 }), "INVALID_OPTION"],
  ["listJobs: status BOGUS", () => pawl.listJobs({ status: any("BOGUS") }), "INVALID_OPTION"],
  [
    "listJobs: a bad status in a list",
    () => pawl.listJobs({ status: any(["PENDING", "done"]) }),
    "INVALID_OPTION",
  ],
  ["listJobs: NUL in the type", () => pawl.listJobs({ type: "t\u0000" }), "INVALID_JOB_TYPE"],
  ["listJobs: a misspelt filter", () => pawl.listJobs(any({ statuses: ["DEAD"] })), "UNKNOWN_OPTION"],
  ["dlq.list: limit x", () => pawl.dlq.list({ limit: any("x") }), "INVALID_OPTION"],
  ["dlq.list: NUL in the type", () => pawl.dlq.list({ type: "t\u0000" }), "INVALID_JOB_TYPE"],
  ["dlq.purge: NUL in the type", () => pawl.dlq.purge({ type: "\u0000" }), "INVALID_JOB_TYPE"],
  ["dlq.purge: before as a string", () => pawl.dlq.purge({ before: any("yesterday") }), "INVALID_OPTION"],
  ["dlq.retry: not an id or a list", () => pawl.dlq.retry(any({ id: 1 })), "INVALID_OPTION"],
  ["signal: NUL in the payload", () => pawl.signal(pendingId, { a: "\u0000" }), "INVALID_PAYLOAD"],
  ["pauseQueue: a lone surrogate", () => pawl.pauseQueue("mail\ud800"), "INVALID_OPTION"],
  ["chain: NUL in the flow name", () => pawl.chain([{ type: "t" }], { name: "n\u0000" }), "INVALID_FLOW"],
  ["chain: NUL in a step name", () => pawl.chain([{ type: "t", name: "s\u0000" }]), "INVALID_FLOW"],
  [
    "workflow: a lone surrogate in a job name",
    () => pawl.workflow({ jobs: [{ name: "\ud800", type: "t" }] }),
    "INVALID_FLOW",
  ],
  [
    "batch: NUL in an item",
    () => pawl.batch({ type: "t", items: [{ ok: 1 }, { bad: "\u0000" }] }),
    "INVALID_PAYLOAD",
  ],
  ["listFlows: limit x", () => pawl.listFlows({ limit: any("x") }), "INVALID_OPTION"],
  ["listFlows: kind bogus", () => pawl.listFlows({ kind: any("bogus") }), "INVALID_OPTION"],
  ["getFlow: memberLimit x", () => pawl.getFlow(flowId, any("x")), "INVALID_OPTION"],
  ["cancelFlow: NUL in the reason", () => pawl.cancelFlow(flowId, "\u0000"), "INVALID_OPTION"],
  [
    "schedule: NUL in the payload",
    () => pawl.schedule("nightly", "0 3 * * *", { a: "\u0000" }),
    "INVALID_PAYLOAD",
  ],
];

describe("bad input at every door", () => {
  it.each(cases)("%s: ValidationError, nothing written", async (_door, call, code) => {
    const before = await snapshot();
    const error: unknown = await call().then(
      () => new Error("accepted"),
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).code).toBe(code);
    expect(await snapshot()).toBe(before);
  });

  it("still accepts the good values next to them", async () => {
    const job = await pawl.enqueue("t", { s: "\uffff\u2028\ud83d\ude00", z: -0 }, { uniqueKey: "k\u2028" });
    expect((await pawl.getJob(job.id))?.payload).toEqual({ s: "\uffff\u2028\ud83d\ude00", z: 0 });
    expect((await pawl.listJobs({ status: "PENDING", type: "t", limit: 5000 })).map((j) => j.id)).toContain(
      job.id,
    );
    expect(await pawl.cancel(job.id, "fine \ud83d\ude00")).toMatchObject({ outcome: "canceled" });
    // Ids are validated the same way at every door: a job id as a number is fine for dlq.retry too.
    expect(await pawl.dlq.retry(job.id)).toEqual([]);
    expect(await pawl.dlq.retry(any(Number(job.id)))).toEqual([]);
  });
});
