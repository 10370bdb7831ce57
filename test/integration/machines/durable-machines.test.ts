import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { createMachine, fromPromise, setup } from "xstate";
import {
  JobNotFoundError,
  MachineFinishedError,
  NotAMachineError,
  ValidationError,
  type Pawl,
} from "../../../src/index.js";
import { closeAll, setupSchema, startNodes, testPawl } from "../../helpers/pawl.js";
import { onAny } from "../../helpers/events.js";
import { orderMachine, type Charge } from "./order-machine.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let nodes: Pawl[] = [];

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("mach"));
});
afterAll(() => cleanup());
afterEach(async () => {
  await closeAll(nodes);
  nodes = [];
});

const parked = (node: Pawl | Pawl[], id: string) => onAny(node, "job:waiting", (e) => e.job.id === id);
const succeeded = (node: Pawl | Pawl[], id: string) => onAny(node, "job:succeeded", (e) => e.job.id === id);

describe("durable machines", () => {
  it("parks while waiting, takes a send from a client, runs its invoke once and ends SUCCEEDED with the output", async () => {
    const charges: unknown[] = [];
    const charge: Charge = async (input) => {
      charges.push(input);
      return { receipt: `r-${input.orderId}` };
    };
    nodes = await startNodes(schema, 1, (n) => n.registerMachine("order", orderMachine(charge)));
    const [a] = nodes as [Pawl];
    const firstPark = onAny(a, "job:waiting");
    const job = await a.enqueue("order", { orderId: "o1", amount: 42 });
    await firstPark;
    const waiting = await a.getJob(job.id);
    expect(waiting).toMatchObject({ status: "WAITING", attempts: 0, pickedBy: null });
    expect(waiting!.machine).toMatchObject({ value: "awaitingPayment", version: "1", status: "active" });
    expect(waiting!.machine!.timers).toHaveLength(1);
    expect(waiting!.machine!.timers[0]!.eventType).toMatch(/^xstate\.after\.3600000\./);
    expect(waiting!.machine!.context).toMatchObject({ orderId: "o1", amount: 42, tries: 0 });

    const client = testPawl(schema);
    try {
      const paidPark = parked(a, job.id);
      expect(await client.send(job.id, { type: "PAY" })).toEqual({ jobId: job.id, seq: 1 });
      await paidPark;
      expect((await client.getJob(job.id))!.machine).toMatchObject({ value: "paid", timers: [] });
      const done = succeeded(a, job.id);
      expect(await client.send(job.id, { type: "SHIP", carrier: "dhl" })).toEqual({ jobId: job.id, seq: 2 });
      await done;
      const final = await client.getJob(job.id);
      expect(final).toMatchObject({
        status: "SUCCEEDED",
        result: { orderId: "o1", receipt: "r-o1", notes: [] },
      });
      expect(final!.machine).toMatchObject({ value: "shipped", status: "done" });
      expect(final!.machine!.finishedAt).toBeInstanceOf(Date);
      expect(final!.machine!.events.map((e) => [e.seq, e.type, e.status])).toEqual([
        [2, "SHIP", "consumed"],
        [1, "PAY", "consumed"],
      ]);
      expect(charges).toEqual([{ orderId: "o1", amount: 42, attempt: 1 }]);
      // The invoke ran as a durable step, named by its invoke id and occurrence.
      expect(final!.steps).toMatchObject([
        {
          name: "machine:payment#1",
          kind: "step",
          status: "succeeded",
          resultPreview: '{"receipt": "r-o1"}',
        },
      ]);

      await expect(client.send(job.id, { type: "NOTE", text: "late" })).rejects.toBeInstanceOf(
        MachineFinishedError,
      );
      const rows = await pool.query(
        `SELECT count(*)::int AS n FROM "${schema}".scheduler_machine_event WHERE job_id = $1`,
        [job.id],
      );
      expect(rows.rows[0].n).toBe(2);
    } finally {
      await client.close();
    }
  });

  it("records an event its state does not accept as ignored, and keeps waiting", async () => {
    nodes = await startNodes(schema, 1, (n) =>
      n.registerMachine(
        "order",
        orderMachine(async () => ({ receipt: "x" })),
      ),
    );
    const [a] = nodes as [Pawl];
    const firstPark = onAny(a, "job:waiting");
    const job = await a.enqueue("order", { orderId: "o2", amount: 1 });
    await firstPark;
    const again = parked(a, job.id);
    expect(await a.send(job.id, { type: "SHIP", carrier: "ups" })).toMatchObject({ seq: 1 });
    await again;
    const view = (await a.getJob(job.id))!;
    expect(view.status).toBe("WAITING");
    expect(view.machine!.value).toBe("awaitingPayment");
    expect(view.machine!.events).toMatchObject([
      { seq: 1, type: "SHIP", status: "ignored", stateAfter: "awaitingPayment" },
    ]);
  });

  it("refuses bad events and unknown jobs with typed errors, storing nothing", async () => {
    const client = testPawl(schema);
    try {
      const job = await client.enqueue("order", { orderId: "o3", amount: 1 });
      await expect(client.send(job.id, { type: "" })).rejects.toBeInstanceOf(ValidationError);
      await expect(client.send(job.id, { type: "xstate.after.1.order.x" })).rejects.toBeInstanceOf(
        ValidationError,
      );
      await expect(client.send(job.id, "PAY" as never)).rejects.toBeInstanceOf(ValidationError);
      await expect(client.send("999999999", { type: "PAY" })).rejects.toBeInstanceOf(JobNotFoundError);
      const n = await pool.query(
        `SELECT count(*)::int AS n FROM "${schema}".scheduler_machine_event WHERE job_id = $1`,
        [job.id],
      );
      expect(n.rows[0].n).toBe(0);
      await client.cancel(job.id);
      const canceled = client.send(job.id, { type: "PAY" });
      await expect(canceled).rejects.toBeInstanceOf(MachineFinishedError);
      await expect(canceled).rejects.toMatchObject({ code: "MACHINE_FINISHED", status: "CANCELED" });
    } finally {
      await client.close();
    }
  });

  it("refuses a send to a live job that is no machine with NOT_A_MACHINE, storing nothing", async () => {
    // "order" is a machine on the started node; "plain" is an ordinary handler there.
    nodes = await startNodes(schema, 1, (n) =>
      n
        .registerMachine(
          "order",
          orderMachine(async () => ({ receipt: "r" })),
        )
        .register("plain", async () => {}),
    );
    const client = testPawl(schema);
    try {
      const plain = await client.enqueue("plain", {}, { runAt: new Date(Date.now() + 3_600_000) });
      const sent = client.send(plain.id, { type: "PAY" });
      await expect(sent).rejects.toBeInstanceOf(NotAMachineError);
      await expect(sent).rejects.toMatchObject({ code: "NOT_A_MACHINE", jobId: plain.id, type: "plain" });
      const rows = await pool.query(
        `SELECT (SELECT count(*) FROM "${schema}".scheduler_machine WHERE job_id = $1)::int
              + (SELECT count(*) FROM "${schema}".scheduler_machine_event WHERE job_id = $1)::int AS n`,
        [plain.id],
      );
      expect(rows.rows[0].n).toBe(0);
      // A machine type's job is accepted before its first run: its type was recorded at the node's start.
      const order = await client.enqueue(
        "order",
        { orderId: "o-nam", amount: 1 },
        {
          runAt: new Date(Date.now() + 3_600_000),
        },
      );
      expect(await client.send(order.id, { type: "NOTE", text: "early" })).toEqual({
        jobId: order.id,
        seq: 1,
      });
    } finally {
      await client.close();
    }
  });

  it("refuses a send whose wake cancels the machine because a live job took its unique key", async () => {
    nodes = await startNodes(schema, 1, (n) =>
      n.registerMachine(
        "order",
        orderMachine(async () => ({ receipt: "r" })),
      ),
    );
    const [a] = nodes as [Pawl];
    const job = await a.enqueue("order", { orderId: "o-uk", amount: 1 }, { uniqueKey: "order-o-uk" });
    await parked(a, job.id);
    // Parked (WAITING), the machine no longer holds its unique key: a later job of the key is live.
    const client = testPawl(schema);
    try {
      const live = await client.enqueue(
        "order",
        { orderId: "o-uk2", amount: 1 },
        { uniqueKey: "order-o-uk", runAt: new Date(Date.now() + 3_600_000) },
      );
      expect(live.id).not.toBe(job.id);
      const sent = client.send(job.id, { type: "PAY" });
      await expect(sent).rejects.toBeInstanceOf(MachineFinishedError);
      await expect(sent).rejects.toMatchObject({ status: "CANCELED", liveJobId: live.id });
      expect(await client.getJob(job.id)).toMatchObject({ status: "CANCELED" });
    } finally {
      await client.close();
    }
  });

  it("buffers events sent while an invoke runs and delivers them in send order", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let started!: () => void;
    const charging = new Promise<void>((r) => (started = r));
    nodes = await startNodes(schema, 1, (n) =>
      n.registerMachine(
        "order",
        orderMachine(async () => {
          started();
          await gate;
          return { receipt: "r" };
        }),
      ),
    );
    const [a] = nodes as [Pawl];
    const firstPark = onAny(a, "job:waiting");
    const job = await a.enqueue("order", { orderId: "o4", amount: 5 });
    await firstPark;
    await a.send(job.id, { type: "PAY" });
    await charging;
    for (const text of ["a", "b", "c"]) await a.send(job.id, { type: "NOTE", text });
    // The invoke still runs: the machine holds its node (it may not park with work in flight).
    expect(await a.getJob(job.id)).toMatchObject({ status: "RUNNING", machine: { value: "charging" } });
    const done = succeeded(a, job.id);
    release();
    await a.send(job.id, { type: "SHIP", carrier: "x" });
    await done;
    const final = (await a.getJob(job.id))!;
    expect(final.result).toMatchObject({ notes: ["a", "b", "c"] });
    expect(final.machine!.events.map((e) => `${e.seq}:${e.type}:${e.status}`).reverse()).toEqual([
      "1:PAY:consumed",
      "2:NOTE:consumed",
      "3:NOTE:consumed",
      "4:NOTE:consumed",
      "5:SHIP:consumed",
    ]);
  });

  it("fires an `after` timer as a durable timer: the parked machine wakes and cancels the order", async () => {
    nodes = await startNodes(schema, 1, (n) =>
      n.registerMachine(
        "order",
        orderMachine(async () => ({ receipt: "x" }), { timeoutMs: 400 }),
      ),
    );
    const [a] = nodes as [Pawl];
    const firstPark = onAny(a, "job:waiting");
    const job = await a.enqueue("order", { orderId: "o5", amount: 5 });
    const waiting = await firstPark;
    expect(waiting.timeoutMs).toBeGreaterThan(0);
    const done = succeeded(a, job.id);
    await done;
    const final = (await a.getJob(job.id))!;
    expect(final.machine).toMatchObject({ value: "canceled", timers: [] });
    expect(final.result).toMatchObject({ orderId: "o5", receipt: null });
  });

  it("follows the machine's onError, and without one the job's retry policy (the step runs again)", async () => {
    let calls = 0;
    const flaky: Charge = async () => {
      calls++;
      if (calls === 1) throw new Error("card declined");
      return { receipt: `r${calls}` };
    };
    nodes = await startNodes(schema, 1, (n) => {
      n.registerMachine("order.handled", orderMachine(flaky, { onError: true }));
      n.registerMachine("order.retried", orderMachine(flaky), { retry: { baseMs: 10, jitter: 0 } });
    });
    const [a] = nodes as [Pawl];
    // onError: back to awaitingPayment, parked; a second PAY succeeds.
    let park = onAny(a, "job:waiting");
    const handled = await a.enqueue("order.handled", { orderId: "h", amount: 1 });
    await park;
    park = parked(a, handled.id);
    await a.send(handled.id, { type: "PAY" });
    await park;
    expect((await a.getJob(handled.id))!.machine).toMatchObject({
      value: "awaitingPayment",
      context: { tries: 1 },
    });
    park = parked(a, handled.id);
    await a.send(handled.id, { type: "PAY" });
    await park;
    expect((await a.getJob(handled.id))!.machine).toMatchObject({
      value: "paid",
      context: { tries: 2, receipt: "r2" },
    });

    // No onError: the attempt fails and is retried; the machine resumes from its saved snapshot.
    calls = 0;
    park = onAny(a, "job:waiting");
    const retried = await a.enqueue("order.retried", { orderId: "r", amount: 1 });
    await park;
    const retriedEvent = onAny(a, "job:retried", (e) => e.job.id === retried.id);
    park = parked(a, retried.id);
    await a.send(retried.id, { type: "PAY" });
    await retriedEvent;
    await park;
    const view = (await a.getJob(retried.id))!;
    expect(view.machine).toMatchObject({ value: "paid", context: { tries: 1, receipt: "r2" } });
    expect(view.errors[0]).toMatchObject({ message: "card declined" });
    expect(calls).toBe(2);
  });
});

describe("durable machine versions", () => {
  const v1 = setup({}).createMachine({
    id: "ticket",
    initial: "open",
    states: {
      open: { on: { ESCALATE: "legacyReview", CLOSE: "closed" } },
      legacyReview: { on: { CLOSE: "closed" } },
      closed: { type: "final" },
    },
  });
  const v2 = setup({ types: {} as { context: { v: number } } }).createMachine({
    id: "ticket",
    context: { v: 2 },
    initial: "open",
    states: { open: { on: { CLOSE: "closed" } }, closed: { type: "final" } },
  });

  it("keeps a job on its version while registered; a snapshot in a removed state ends DEAD naming it", async () => {
    nodes = await startNodes(schema, 1, (n) => n.registerMachine("ticket", v1, { version: 1 }));
    let [a] = nodes as [Pawl];
    let park = onAny(a, "job:waiting");
    const kept = await a.enqueue("ticket", {});
    await park;
    park = onAny(a, "job:waiting");
    const stale = await a.enqueue("ticket", {});
    await park;
    park = parked(a, stale.id);
    await a.send(stale.id, { type: "ESCALATE" });
    await park;
    await closeAll(nodes);

    // The next deploy registers both versions: the running jobs stay on 1, new ones start on 2.
    nodes = await startNodes(schema, 1, (n) => {
      n.registerMachine("ticket", v1, { version: 1 });
      n.registerMachine("ticket", v2, { version: 2 });
    });
    [a] = nodes as [Pawl];
    park = onAny(a, "job:waiting");
    const fresh = await a.enqueue("ticket", {});
    await park;
    expect((await a.getJob(fresh.id))!.machine).toMatchObject({ version: "2", context: { v: 2 } });
    let done = succeeded(a, kept.id);
    await a.send(kept.id, { type: "CLOSE" });
    await done;
    expect((await a.getJob(kept.id))!.machine).toMatchObject({ version: "1", value: "closed" });
    await closeAll(nodes);

    // Version 1 is dropped: the job parked in legacyReview cannot fit version 2.
    nodes = await startNodes(schema, 1, (n) => n.registerMachine("ticket", v2, { version: 2 }));
    [a] = nodes as [Pawl];
    const dead = onAny(a, "job:dead", (e) => e.job.id === stale.id);
    await a.send(stale.id, { type: "CLOSE" });
    const ended = await dead;
    expect(ended.reason).toBe("non-retryable");
    const job = (await a.getJob(stale.id))!;
    expect(job.status).toBe("DEAD");
    expect(job.errors[0]).toMatchObject({ name: "MachineSnapshotMismatchError" });
    expect(job.lastError).toContain("'ticket.legacyReview'");
    await expect(a.send(stale.id, { type: "CLOSE" })).rejects.toBeInstanceOf(MachineFinishedError);
    done = succeeded(a, fresh.id);
    await a.send(fresh.id, { type: "CLOSE" });
    await done;
  });

  it("refuses a machine that invokes an inline actor", () => {
    const client = testPawl(schema);
    const inline = createMachine({
      id: "bad",
      initial: "a",
      states: { a: { invoke: { src: fromPromise(async () => 1) } } },
    });
    expect(() => client.registerMachine("bad", inline)).toThrow(/inline actor/);
    expect(() => client.registerMachine("bad2", v2, { version: "no spaces" })).toThrow(ValidationError);
    void client.close();
  });
});
