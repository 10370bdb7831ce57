/**
 * A send (or a named signal) from a bare PawlClient, a process with no node and no coordinator, wakes the
 * nodes at once: without a hint, the job it makes runnable again is found at a node's next discovery pass
 * (a second by default; a full pass, up to a minute, for its old id when it is not due by then). The
 * nodes here put both passes ten minutes away, so only the hint from SQL on the postgres wakeup channel
 * (src/store/jobs/released-notify-sql.ts) can make them resume within the test.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { PawlClient, type Pawl } from "../../../src/index.js";
import { databaseUrl } from "../../helpers/db.js";
import { onAny } from "../../helpers/events.js";
import { closeAll, setupSchema, startConnected, testPawl } from "../../helpers/pawl.js";
import { orderMachine } from "./order-machine.js";

let schema: string;
let cleanup: () => Promise<void>;
let nodes: Pawl[] = [];

beforeAll(async () => {
  ({ schema, cleanup } = await setupSchema("mwake"));
});
afterAll(() => cleanup());
afterEach(async () => {
  await closeAll(nodes);
  nodes = [];
});

/** A node whose claim cursors discover rows only every ten minutes, unless a hint wakes them. */
async function slowDiscoveryNode(setup: (node: Pawl) => void): Promise<Pawl> {
  const node = testPawl(schema, {
    nodeId: `${schema}-n0`,
    coordinator: "postgres",
    claimCursorDiscoveryMs: 600_000,
    claimCursorFullDiscoveryMs: 600_000,
    claimCursorFullDiscoveryMaxMs: 600_000,
  });
  setup(node);
  await startConnected(node);
  nodes = [node];
  return node;
}

describe("a bare client's send and signal wake the nodes", () => {
  it("a parked machine resumes promptly after a bare client's send", async () => {
    const node = await slowDiscoveryNode((n) =>
      n.registerMachine(
        "order",
        orderMachine(async () => ({ receipt: "r" })),
      ),
    );
    const firstPark = onAny(node, "job:waiting");
    const job = await node.enqueue("order", { orderId: "w1", amount: 1 });
    await firstPark;
    const client = new PawlClient({ connectionString: databaseUrl, schema });
    try {
      const paid = onAny(node, "job:waiting", (e) => e.job.id === job.id);
      await client.send(job.id, { type: "PAY" });
      await paid;
      expect((await client.getJob(job.id))!.machine).toMatchObject({ value: "paid" });
    } finally {
      await client.close();
    }
  });

  // The same announce() path; in this setup the node also finds a signaled durable job without the hint
  // (not isolated yet), so this case checks the behaviour, not that the hint alone caused it.
  it("a job parked on a named signal resumes promptly after a bare client's signal", async () => {
    const node = await slowDiscoveryNode((n) =>
      n.register("approval", async (_payload: unknown, ctx) => {
        const answer = await ctx.waitForSignal("approved", { timeoutMs: 3_600_000 });
        return answer.timedOut ? "timed out" : answer.payload;
      }),
    );
    const parked = onAny(node, "job:waiting");
    const job = await node.enqueue("approval", {});
    await parked;
    const client = new PawlClient({ connectionString: databaseUrl, schema });
    try {
      const done = onAny(node, "job:succeeded", (e) => e.job.id === job.id);
      await client.signal(job.id, { by: "ann" }, { name: "approved" });
      await done;
      expect((await client.getJob(job.id))!.result).toEqual({ by: "ann" });
    } finally {
      await client.close();
    }
  });
});
