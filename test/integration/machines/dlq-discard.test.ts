/**
 * `dlq.retry(id, { steps: "discard" })` of a DEAD machine job starts the machine afresh
 * (docs/durable-machines.md): in the retry's transaction its snapshot, timers, invoke occurrences and
 * version are reset with the steps, so it starts from its payload on the current definition; the events it
 * handled stay in its history, and one still pending is delivered to the fresh machine. A live machine
 * named in the same retry is left alone. `keep` (the default) resumes from the saved snapshot.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type pg from "pg";
import type { Pawl } from "../../../src/index.js";
import { closeAll, setupSchema, startNodes } from "../../helpers/pawl.js";
import { onAny } from "../../helpers/events.js";
import { orderMachine } from "./order-machine.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let nodes: Pawl[] = [];
let broken = true;
const charges: string[] = [];

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("mdlq"));
  nodes = await startNodes(schema, 1, (n) =>
    n.registerMachine(
      "order",
      // No onError: a failed payment fails the attempt, and with one attempt the job is DEAD.
      orderMachine(async ({ orderId }) => {
        charges.push(orderId);
        if (broken) throw new Error("card declined");
        return { receipt: `r-${orderId}` };
      }),
      { maxAttempts: 1 },
    ),
  );
});

afterAll(async () => {
  await closeAll(nodes);
  await cleanup?.();
});

const parked = (id: string) => onAny(nodes, "job:waiting", (e) => e.job.id === id);

/** A machine that took a NOTE, then PAY, whose payment failed: DEAD in `charging`. */
async function deadOrder(orderId: string): Promise<string> {
  const node = nodes[0]!;
  const { id } = await node.enqueue("order", { orderId, amount: 1 });
  await parked(id);
  const noted = parked(id);
  await node.send(id, { type: "NOTE", text: "before" });
  await noted;
  const dead = onAny(nodes, "job:dead", (e) => e.job.id === id);
  await node.send(id, { type: "PAY" });
  await dead;
  return id;
}

/**
 * An event accepted before the job died and never delivered (a send that committed just before the
 * attempt's DEAD outcome): written as the send writes it, since a send to a DEAD job is refused.
 */
async function pendingEvent(jobId: string, event: object): Promise<void> {
  await pool.query(
    `WITH n AS (UPDATE "${schema}".scheduler_machine SET last_seq = last_seq + 1 WHERE job_id = $1 RETURNING last_seq)
     INSERT INTO "${schema}".scheduler_machine_event (job_id, seq, event) SELECT $1, last_seq, $2::jsonb FROM n`,
    [jobId, JSON.stringify(event)],
  );
}

describe("dlq.retry of a DEAD machine job", () => {
  it("with steps 'discard' starts the machine afresh from its payload, keeping its history and pending events", async () => {
    const node = nodes[0]!;
    const id = await deadOrder("fresh");
    const dead = await node.getJob(id);
    expect(dead).toMatchObject({ status: "DEAD" });
    expect(dead!.machine).toMatchObject({ value: "charging", context: { tries: 1, notes: ["before"] } });
    await pendingEvent(id, { type: "NOTE", text: "pending" });
    // A live machine named in the same retry keeps its snapshot.
    const { id: liveId } = await node.enqueue("order", { orderId: "live", amount: 1 });
    await parked(liveId);
    const liveNoted = parked(liveId);
    await node.send(liveId, { type: "NOTE", text: "live" });
    await liveNoted;

    broken = false;
    const restarted = parked(id);
    const retried = await node.dlq.retry([id, liveId], { steps: "discard" });
    expect(retried.map((j) => j.id)).toEqual([id]);
    await restarted;
    const fresh = await node.getJob(id);
    // From its payload: back in the initial state, the old NOTE and try gone, the pending NOTE taken.
    expect(fresh!.machine).toMatchObject({
      value: "awaitingPayment",
      version: "1",
      context: { orderId: "fresh", tries: 0, notes: ["pending"] },
    });
    expect(fresh!.machine!.timers).toHaveLength(1); // its payment timeout, armed again
    expect(fresh!.steps).toEqual([]);
    expect(fresh!.machine!.events.map((e) => [e.seq, e.type, e.status])).toEqual([
      [3, "NOTE", "consumed"],
      [2, "PAY", "consumed"],
      [1, "NOTE", "consumed"],
    ]);
    expect((await node.getJob(liveId))!.machine).toMatchObject({ context: { notes: ["live"] } });

    // It runs on: the payment is a new step (occurrence 1 again), and the order is paid.
    const paid = parked(id);
    await node.send(id, { type: "PAY" });
    await paid;
    const after = await node.getJob(id);
    expect(after!.machine).toMatchObject({ value: "paid", context: { tries: 1, receipt: "r-fresh" } });
    expect(after!.steps!.map((s) => [s.name, s.status])).toEqual([["machine:payment#1", "succeeded"]]);
    expect(charges.filter((c) => c === "fresh")).toHaveLength(2);
  });

  it("with steps 'discard' leaves alone a machine whose job a retry committing meanwhile moved out", async () => {
    const node = nodes[0]!;
    broken = true;
    const id = await deadOrder("raced");
    // Another retry holds the DEAD row and gives the machine its state, as a `keep` retry that runs first.
    const other = await pool.connect();
    try {
      await other.query("BEGIN");
      await other.query(`SELECT id FROM "${schema}".scheduler_job_finished WHERE id = $1 FOR UPDATE`, [id]);
      await other.query(
        `UPDATE "${schema}".scheduler_machine SET snapshot = '{"value":"theirs"}' WHERE job_id = $1`,
        [id],
      );
      const pid = (await other.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
      const discard = node.dlq.retry(id, { steps: "discard" });
      // The discarding retry waits for the other one's row lock.
      await vi.waitFor(async () => {
        const { rows } = await pool.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))",
          [pid],
        );
        expect(rows[0]!.n).toBeGreaterThan(0);
      });
      await other.query(`DELETE FROM "${schema}".scheduler_job_finished WHERE id = $1`, [id]);
      await other.query("COMMIT");
      expect(await discard).toEqual([]);
    } finally {
      other.release();
    }
    const { rows } = await pool.query<{ snapshot: unknown }>(
      `SELECT snapshot FROM "${schema}".scheduler_machine WHERE job_id = $1`,
      [id],
    );
    expect(rows[0]!.snapshot).toEqual({ value: "theirs" });
  });

  it("by default (keep) resumes from the saved snapshot", async () => {
    const node = nodes[0]!;
    broken = true;
    const id = await deadOrder("kept");
    broken = false;
    const paid = parked(id);
    await node.dlq.retry(id);
    await paid;
    // Resumed in `charging`: the payment ran again as the failed step, the NOTE and the try kept.
    expect((await node.getJob(id))!.machine).toMatchObject({
      value: "paid",
      context: { tries: 1, notes: ["before"], receipt: "r-kept" },
    });
  });
});
