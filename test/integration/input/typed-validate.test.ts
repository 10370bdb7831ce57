/**
 * A Standard Schema (zod, a real library) as a job type's `validate`: normalised to pawl's validator at
 * register, it rejects a bad payload at enqueue (VALIDATION_FAILED, nothing written) and, on a node, sends
 * a stored bad payload to DEAD before any attempt runs its handler.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { z } from "zod";
import type { Pawl } from "../../../src/index.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";
import { jobEvent } from "../../helpers/events.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let n: Pawl | undefined;

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("tv"));
});
afterAll(() => cleanup());
afterEach(async () => {
  await n?.close();
  n = undefined;
});

const emailSchema = z.object({ to: z.string().includes("@"), cc: z.array(z.string()).optional() });

async function rowsOfType(type: string): Promise<{ status: string }[]> {
  const r = await pool.query(`SELECT status FROM "${schema}".scheduler_job_queue WHERE type = $1`, [type]);
  return r.rows as { status: string }[];
}

describe("a Standard Schema as validate", () => {
  it("rejects a bad payload at enqueue with VALIDATION_FAILED, naming the issue, and writes nothing", async () => {
    const node = (n = testPawl(schema));
    node.register("typed.email", async (p) => p.to, { validate: emailSchema });
    const error = await node.enqueue("typed.email", { to: 42 }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "VALIDATION_FAILED" });
    expect((error as Error).message).toContain("typed.email");
    expect((error as Error).message).toContain("to:");
    await expect(
      node.enqueueMany([{ type: "typed.email", payload: { to: "no-at-sign" } }]),
    ).rejects.toMatchObject({
      code: "VALIDATION_FAILED",
    });
    expect(await rowsOfType("typed.email")).toEqual([]);
    const ok = await node.enqueue("typed.email", { to: "a@b.c" });
    expect(ok.inserted).toBe(true);
  });

  it("sends a stored bad payload to DEAD before the attempt, without running the handler", async () => {
    const node = (n = testPawl(schema));
    let ran = 0;
    node.register(
      "typed.stored",
      async (p) => {
        ran++;
        return p.to;
      },
      { validate: emailSchema },
    );
    await node.start();
    // Inserted behind pawl's back (another service, an older deploy), so enqueue's check did not run.
    const jobDead = jobEvent(node.events, "job:dead");
    const row = await pool.query(
      `INSERT INTO "${schema}".scheduler_job_queue (type, payload) VALUES ('typed.stored', '{"to":7}') RETURNING id`,
    );
    const id = String(row.rows[0].id);
    const dead = jobDead.for(id);
    node.nodeRuntime?.wake("local");
    const event = await dead;
    expect(event.reason).toBe("invalid-payload");
    expect(event.error.message).toContain("to:");
    expect(ran).toBe(0);
    expect((await node.getJob(id))?.status).toBe("DEAD");
  });

  it("rejects the payload of a schema that validates asynchronously, saying why", async () => {
    const node = (n = testPawl(schema));
    const asyncSchema = z.object({ id: z.number() }).refine(async (p) => p.id > 0);
    node.register("typed.async", async () => 1, { validate: asyncSchema });
    const error = await node.enqueue("typed.async", { id: 1 }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "VALIDATION_FAILED" });
    expect((error as Error).message).toContain("asynchronously");
  });

  it("refuses a validate that is neither a function nor a Standard Schema", () => {
    const node = (n = testPawl(schema));
    expect(() =>
      node.register("typed.bad", async () => 1, { validate: { parse: () => true } as never }),
    ).toThrow(/function or a Standard Schema/);
  });
});
