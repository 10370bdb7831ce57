/**
 * One test body for every query builder's SqlClient adapter (docs/sql-enqueue.md), as kysely's tests loop
 * over dialects: `pawl.enqueue`, `enqueueMany` and flows through the adapter commit with the builder's
 * transaction, roll back with it, and meet a taken unique key. Each builder's file supplies how to run a
 * transaction that also writes an order row of its own, and how to check that row.
 */
import { describe, expect, it } from "vitest";
import type { PawlClient, SqlClient } from "../../../src/index.js";

/** What a builder's test file supplies (read when the tests run, after its beforeAll). */
export interface AdapterUnderTest {
  pawl: PawlClient;
  /** Runs `fn` in the builder's transaction, after inserting order `orderId` through the builder. */
  inTransaction<T>(orderId: number, fn: (client: SqlClient) => Promise<T>): Promise<T>;
  /** Whether order `orderId` was committed. */
  orderExists(orderId: number): Promise<boolean>;
}

/** Registers the adapter tests for the builder called `name`. */
export function describeSqlClientAdapter(name: string, subject: () => AdapterUnderTest): void {
  describe(`pawl.enqueue through the ${name} adapter`, () => {
    it("commits with the transaction: enqueue, enqueueMany and a batch", async () => {
      const { pawl, inTransaction, orderExists } = subject();
      const { job, many, batch } = await inTransaction(3, async (client) => {
        const job = await pawl.enqueue("order.confirm", { orderId: 3 }, { client, uniqueKey: "order:3" });
        const many = await pawl.enqueueMany([{ type: "order.audit", payload: { orderId: 3 } }], { client });
        // Array parameters (the children's payloads) and a parameter used twice go through as well.
        const batch = await pawl.batch({
          type: "order.line",
          items: [{ line: 1 }, { line: 2 }],
          onComplete: { type: "order.lines-done" },
          client,
        });
        expect(await pawl.getJob(job.id)).toBeNull(); // not visible outside the transaction yet
        return { job, many, batch };
      });
      expect(await orderExists(3)).toBe(true);
      expect(await pawl.getJob(job.id)).toMatchObject({ status: "PENDING", uniqueKey: "order:3" });
      // A builder may return timestamps as text (drizzle does): the job read back through it has Dates.
      expect(job.scheduledTime).toBeInstanceOf(Date);
      expect(job.createdAt.getTime()).toBe((await pawl.getJob(job.id))!.createdAt.getTime());
      expect(await pawl.getJob(many[0]!.id)).toMatchObject({ type: "order.audit" });
      expect(await pawl.getFlow(batch.flowId)).toMatchObject({ kind: "batch", total: 2 });
      expect(await pawl.getJob(batch.completionJobId!)).toMatchObject({ status: "WAITING" });
    });

    it("rolls back with the transaction", async () => {
      const { pawl, inTransaction, orderExists } = subject();
      let ids: string[] = [];
      await expect(
        inTransaction(4, async (client) => {
          const job = await pawl.enqueue("order.confirm", { orderId: 4 }, { client });
          const chain = await pawl.chain([{ type: "order.a" }, { type: "order.b" }], { client });
          ids = [job.id, ...chain.jobIds];
          throw new Error("abandoned");
        }),
      ).rejects.toThrow("abandoned");
      expect(ids).toHaveLength(3);
      expect(await orderExists(4)).toBe(false);
      for (const id of ids) expect(await pawl.getJob(id)).toBeNull();
    });

    it("returns the live job for a taken unique key", async () => {
      const { pawl, inTransaction } = subject();
      const again = await inTransaction(5, (client) =>
        pawl.enqueue("order.confirm", { orderId: 3 }, { client, uniqueKey: "order:3" }),
      );
      expect(again.inserted).toBe(false);
    });
  });
}
