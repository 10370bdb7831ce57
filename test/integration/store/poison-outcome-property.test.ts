/**
 * Property, against the real PostgreSQL: whatever a handler returns or throws, the job reaches its final
 * status, its result round-trips through getJob() exactly as documented (the value as JSON writes it, or
 * null when that cannot be stored), its error record holds the message sanitised, and the node reports no
 * database error. Values are batched through one node: each run enqueues a batch and waits for all of it.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Pawl } from "../../../src/index.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";
import { expectedResult, outcomeValue } from "../../unit/logic/outcome-arbitraries.js";

let cleanup: () => Promise<void>;
let node: Pawl;
const values = new Map<string, unknown>();
const failures: string[] = [];

beforeAll(async () => {
  let schema: string;
  ({ schema, cleanup } = await setupSchema("poisonp"));
  node = testPawl(schema, { concurrency: 8 });
  node.register("returns", async (p: { key: string }) => values.get(p.key));
  node.register(
    "throws",
    async (p: { key: string; wrap: boolean }) => {
      const v = values.get(p.key);
      throw p.wrap ? Object.assign(new Error(typeof v === "string" ? v : "wrapped"), { data: v }) : v;
    },
    { maxAttempts: 1 },
  );
  node.on("error", (e) => failures.push(`${e.where}: ${e.error.message}`));
  const seen = (e: { job: { id: string } }) => {
    finished.add(e.job.id);
    onFinished();
  };
  node.on("job:succeeded", seen);
  node.on("job:dead", seen);
  await node.start();
});
afterAll(async () => {
  await node.close();
  await cleanup();
});

/** Every job that reached a final event, subscribed before anything is enqueued. */
const finished = new Set<string>();
let onFinished: () => void = () => {};

/** Resolves once every job has its final event; rejects if one is missing after 15 s (a stalled writer). */
function final(ids: readonly string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const check = () => {
      if (!ids.every((id) => finished.has(id))) return;
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      const left = ids.filter((id) => !finished.has(id));
      reject(
        new Error(`${left.length} jobs never finished: ${left.join(", ")}; errors: ${failures.join("; ")}`),
      );
    }, 15_000);
    onFinished = check;
    check();
  });
}

/** The message as stored: NUL and lone surrogates replaced with U+FFFD. */
const sanitized = (s: string) =>
  (s as unknown as { toWellFormed(): string }).toWellFormed().replaceAll("\u0000", "\uFFFD");

/** A thrown object's own string `message` (a generated key may happen to be "message"). */
const ownMessage = (v: unknown): string | undefined =>
  v !== null && typeof v === "object" && typeof (v as { message?: unknown }).message === "string"
    ? (v as { message: string }).message
    : undefined;

let batch = 0;

describe("any outcome value", () => {
  it("is stored as documented, and every job reaches its final status", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(outcomeValue, { minLength: 12, maxLength: 12 }), async (batchValues) => {
        const keys = batchValues.map((v, i) => {
          const key = `${batch}-${i}`;
          values.set(key, v);
          return key;
        });
        batch++;
        const returned = await node.enqueueMany(keys.map((key) => ({ type: "returns", payload: { key } })));
        const thrown = await node.enqueueMany(
          keys.map((key, i) => ({ type: "throws", payload: { key, wrap: i % 2 === 1 } })),
        );
        await final([...returned, ...thrown].map((j) => j.id));

        for (const [i, job] of returned.entries()) {
          const read = await node.getJob(job.id);
          expect(read?.status).toBe("SUCCEEDED");
          expect(read?.result).toEqual(expectedResult(batchValues[i]));
        }
        for (const [i, job] of thrown.entries()) {
          const read = await node.getJob(job.id);
          expect(read?.status).toBe("DEAD");
          const v = batchValues[i];
          const message = read!.errors[0]!.message;
          if (i % 2 === 1) expect(message).toBe(sanitized(typeof v === "string" ? v : "wrapped"));
          else if (typeof v === "string") expect(message).toBe(sanitized(v));
          else if (typeof ownMessage(v) === "string") expect(message).toBe(sanitized(ownMessage(v)!));
          else expect(message).toMatch(/^non-error thrown: /);
        }
        expect(failures).toEqual([]);
      }),
      { numRuns: 8, endOnFailure: true },
    );
  });
});
