/**
 * A send racing the end of its machine's job (docs/durable-machines.md): the send locks the live job row
 * after the machine row (src/store/machines/machine-sql.ts storeEvent), so a cancel, kill or DEAD that
 * commits while the send is under way is seen by it, and one that comes later waits for it. Each race is
 * made deterministic with a transaction held open on a connection of its own, and the other side is let
 * go only once PostgreSQL shows it waiting on that transaction's lock.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { MachineFinishedError, type Pawl } from "../../../src/index.js";
import { tablesFor } from "../../../src/db/sql.js";
import { cancelJob } from "../../../src/store/jobs/cancel-job.js";
import { storeEvent } from "../../../src/store/machines/machine-sql.js";
import { onAny } from "../../helpers/events.js";
import { closeAll, setupSchema, startNodes } from "../../helpers/pawl.js";
import { heldCharge, orderMachine } from "./order-machine.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let nodes: Pawl[] = [];
const { charge, charged, release } = heldCharge();

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("msendrace"));
  nodes = await startNodes(schema, 1, (n) => n.registerMachine("order", orderMachine(charge)));
});

afterAll(async () => {
  release();
  await closeAll(nodes);
  await cleanup?.();
});

/** Enqueues an order and waits until it parks. */
async function parkedOrder(orderId: string): Promise<string> {
  const parked = onAny(nodes, "job:waiting");
  const { id } = await nodes[0]!.enqueue("order", { orderId, amount: 1 });
  await parked;
  return id;
}

/**
 * Resolves true once some backend waits for a lock `holderPid` holds, false if `other` settles first (it
 * never waited: the race this file closes).
 */
async function blockedBy(holderPid: number, other: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void other.then(
    () => (settled = true),
    () => (settled = true),
  );
  while (!settled) {
    const r = await pool.query(`SELECT 1 FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, [
      holderPid,
    ]);
    if ((r.rowCount ?? 0) > 0) return true;
  }
  return false;
}

/** Runs `fn` in a transaction held open on a connection of its own until the returned `commit`. */
async function held<T>(fn: (db: pg.PoolClient) => Promise<T>) {
  const db = await pool.connect();
  await db.query("BEGIN");
  const pid = (await db.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
  const value = await fn(db);
  return {
    pid,
    value,
    commit: async () => {
      try {
        await db.query("COMMIT");
      } finally {
        db.release();
      }
    },
  };
}

async function eventsOf(jobId: string): Promise<{ seq: string; status: string }[]> {
  const r = await pool.query<{ seq: string; status: string }>(
    `SELECT seq, status FROM "${schema}".scheduler_machine_event WHERE job_id = $1 ORDER BY seq`,
    [jobId],
  );
  return r.rows;
}

describe("a send racing the end of the machine's job", () => {
  it("a cancel of a parked machine that commits first refuses the send waiting on it; nothing is stored", async () => {
    const id = await parkedOrder("parked");
    const cancel = await held((db) => cancelJob(db, tablesFor(schema), id, "race"));
    const sending = nodes[0]!.send(id, { type: "PAY" });
    sending.catch(() => {});
    try {
      expect(await blockedBy(cancel.pid, sending)).toBe(true);
    } finally {
      await cancel.commit();
    }
    expect(cancel.value).toMatchObject({ job: { status: "CANCELED" } });
    const error = await sending.then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(MachineFinishedError);
    expect(error).toMatchObject({ status: "CANCELED" });
    expect(await eventsOf(id)).toEqual([]);
  });

  it("a kill of a running machine in flight holds the send until it commits, then the send is refused", async () => {
    const id = await parkedOrder("running");
    await nodes[0]!.send(id, { type: "PAY" });
    await charged; // the machine runs on the node, held in its invoke
    const kill = await held((db) => cancelJob(db, tablesFor(schema), id, "killed"));
    const sending = nodes[0]!.send(id, { type: "NOTE", text: "late" });
    sending.catch(() => {});
    let waited: boolean;
    try {
      waited = await blockedBy(kill.pid, sending);
    } finally {
      await kill.commit();
    }
    // Without the job row's lock the send reads RUNNING and commits before the kill: accepted, then dead.
    expect(waited).toBe(true);
    await expect(sending).rejects.toMatchObject({ name: "MachineFinishedError", status: "CANCELED" });
    expect((await eventsOf(id)).map((e) => e.seq)).toEqual(["1"]); // the PAY only
  });

  it("a cancel that comes after a send waits for it: the event was accepted first, no deadlock", async () => {
    const id = await parkedOrder("first");
    const send = await held((db) => storeEvent(db, tablesFor(schema), id, '{"type":"PAY"}'));
    const canceling = cancelJob(pool, tablesFor(schema), id, "after");
    try {
      expect(await blockedBy(send.pid, canceling)).toBe(true);
    } finally {
      await send.commit();
    }
    expect(send.value).toMatchObject({ seq: 1 });
    expect(await canceling).toMatchObject({ job: { status: "CANCELED" } });
    expect(await eventsOf(id)).toEqual([{ seq: "1", status: "pending" }]);
    await expect(nodes[0]!.send(id, { type: "PAY" })).rejects.toBeInstanceOf(MachineFinishedError);
  });
});
