/**
 * The enqueue half of the input property (issue 18): for arbitrary payloads, job types and unique keys,
 * enqueue either throws a typed ValidationError and writes nothing, or the payload comes back from the
 * database exactly as JSON promises (`JSON.parse(JSON.stringify(payload))`: -0 reads back as 0, key order
 * is not kept). Never a raw database error. Items go in batches through enqueueMany, with a single
 * enqueue now and then, to keep the run short.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { ValidationError, type PawlClient } from "../../../src/index.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";
import { jsonLike, someString } from "../../unit/input/input-arbitraries.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let pawl: PawlClient;

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("inenq"));
  pawl = testPawl(schema);
});
afterAll(async () => {
  await pawl.close();
  await cleanup();
});

const count = async () =>
  Number((await pool.query(`SELECT count(*) AS n FROM "${schema}".scheduler_job_all`)).rows[0].n);

/** Job types: mostly valid names, sometimes any string (spaces, NUL, lone surrogates). */
const typeName = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom("email.send", "report", "a", "x.y-z_1") },
  { weight: 1, arbitrary: someString },
);

const item = fc.record(
  {
    type: typeName,
    payload: jsonLike,
    uniqueKey: someString,
    queue: fc.oneof({ weight: 6, arbitrary: fc.constant("default") }, { weight: 1, arbitrary: someString }),
  },
  { requiredKeys: ["type"] },
);

let run = 0;

describe("enqueue with arbitrary input", () => {
  it("either refuses with a ValidationError and writes nothing, or round-trips the payload", async () => {
    let stored = 0;
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(item, { minLength: 1, maxLength: 4 }), fc.boolean(), async (raw, single) => {
        run++;
        // Unique keys made unique per item (keeping whatever trouble they carry), so a key never returns
        // an earlier job instead of inserting this one.
        const items = raw.map((it, i) =>
          it.uniqueKey === undefined ? it : { ...it, uniqueKey: `${run}.${i}:${it.uniqueKey}` },
        );
        const before = await count();
        let jobs: { id: string }[];
        try {
          if (single) {
            const { type, payload, ...options } = items[0]!;
            jobs = [await pawl.enqueue(type, payload, options)];
          } else {
            jobs = await pawl.enqueueMany(items);
          }
        } catch (error) {
          if (!(error instanceof ValidationError)) throw error; // a raw database or runtime error
          expect(await count()).toBe(before);
          refused++;
          return;
        }
        const written = single ? items.slice(0, 1) : items;
        expect(await count()).toBe(before + written.length);
        for (const [i, job] of jobs.entries()) {
          const payload = written[i]!.payload;
          const expected: unknown = JSON.parse(JSON.stringify(payload === undefined ? {} : payload));
          expect((await pawl.getJob(job.id))?.payload).toEqual(expected);
          stored++;
        }
      }),
      { numRuns: 150 },
    );
    // The property means little unless both outcomes happened often.
    expect(stored).toBeGreaterThan(50);
    expect(refused).toBeGreaterThan(20);
  }, 120_000);
});
