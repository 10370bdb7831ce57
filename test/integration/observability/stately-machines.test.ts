/**
 * Durable machines in the Stately bridge, on a real node and a relay stand-in: a parked machine (rows in
 * PostgreSQL only) is shown when the relay connects, as `machine-<job id>` with its definition, state
 * value and context sanitised as the inspector's; a machine that resumes on the node is an actor of its
 * own whose event and transitions reach the bridge; a bridge connected while it runs announces it;
 * refresh() shows a machine's new parked state; the parked list is bounded. Without `includePayloads`
 * a machine's context, the events sent to it and its definition's initial context never reach the relay;
 * a failed read of the parked machines never reaches the host, even through an `onError` that throws.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createMachine } from "xstate";
import type { Pawl } from "../../../src/index.js";
import { connectStatelyInspector, type StatelyBridge } from "../../../observability/index.js";
import { closeAll, setupSchema, startNodes } from "../../helpers/pawl.js";
import { onAny } from "../../helpers/events.js";
import { relay, type RelayMessage } from "../../helpers/stately-relay.js";
import { heldCharge, orderMachine } from "../machines/order-machine.js";

let cleanup: () => Promise<void>;
let nodes: Pawl[] = [];
const { charge, charged, release } = heldCharge();
const huge = "n".repeat(100_000);
/** A definition whose initial context holds a value (a key written into the code). */
const vaultMachine = createMachine({
  id: "vault",
  context: { apiKey: "sk_live_STATIC_SECRET" },
  initial: "idle",
  states: { idle: { on: { GO: "done" } }, done: { type: "final" } },
});

beforeAll(async () => {
  const s = await setupSchema("stately_mach");
  cleanup = s.cleanup;
  nodes = await startNodes(s.schema, 1, (n) => {
    n.registerMachine("order", orderMachine(charge));
    n.registerMachine("vault", vaultMachine);
  });
});

afterAll(async () => {
  release();
  await closeAll(nodes);
  await cleanup?.();
});

/** Enqueues an order and waits until it parks. */
async function parkedOrder(node: Pawl, input: Record<string, unknown>): Promise<string> {
  const parked = onAny(nodes, "job:waiting");
  const { id } = await node.enqueue("order", { amount: 1, ...input });
  await parked;
  return id;
}

const of = (messages: RelayMessage[], type: string, sessionId: string) =>
  messages.filter((m) => m.type === type && m.sessionId === sessionId);

describe("durable machines in the Stately bridge", () => {
  it("shows parked machines from the store and a running one's transitions, sanitised", async () => {
    const node = nodes[0]!;
    // The context carries the job's input, shown with includePayloads: a huge string is still cut.
    const a = await parkedOrder(node, { orderId: "a", payload: { card: "4111 card-secret" }, note: huge });
    const b = await parkedOrder(node, { orderId: "b" });

    const r = await relay();
    let bridge: StatelyBridge | undefined;
    try {
      bridge = await connectStatelyInspector(node, {
        url: r.url,
        actors: ["machine-"],
        includePayloads: true,
      });

      // Parked: one stand-in per machine, read when the relay connected, with the registered definition.
      await vi.waitFor(() => expect(of(r.messages, "@xstate.actor", `parked:${b}`)).toHaveLength(1));
      await vi.waitFor(() => expect(of(r.messages, "@xstate.actor", `parked:${a}`)).toHaveLength(1));
      const parkedA = of(r.messages, "@xstate.actor", `parked:${a}`)[0]!;
      expect(parkedA.name).toBe(`machine-${a}`);
      expect(JSON.parse(parkedA.definition!)).toMatchObject({ id: "order", states: expect.any(Object) });
      expect(parkedA.snapshot).toMatchObject({ value: "awaitingPayment", status: "active" });
      const context = parkedA.snapshot!.context as Record<string, unknown>;
      expect(context).toMatchObject({
        orderId: "a",
        amount: 1,
        payload: { card: "4111 card-secret" },
        tries: 0,
      });
      expect(context.note).toHaveLength(503);
      const parkedSnapshot = of(r.messages, "@xstate.snapshot", `parked:${a}`)[0]!;
      expect(parkedSnapshot.event).toEqual({ type: "pawl.parked" });
      expect(parkedSnapshot.snapshot).toEqual(parkedA.snapshot);

      // Live: b resumes on the node with PAY and is held in its invoke.
      await node.send(b, { type: "PAY" });
      await charged;
      const live = () =>
        r.messages.find(
          (m) => m.type === "@xstate.actor" && m.name === `machine-${b}` && m.sessionId !== `parked:${b}`,
        );
      await vi.waitFor(() => expect(live()).toBeDefined());
      const session = live()!.sessionId;
      expect(JSON.parse(live()!.definition!)).toMatchObject({ id: "order" });
      await vi.waitFor(() =>
        expect(of(r.messages, "@xstate.event", session).map((m) => m.event?.type)).toContain("PAY"),
      );
      await vi.waitFor(() =>
        expect(of(r.messages, "@xstate.snapshot", session).map((m) => m.snapshot?.value)).toContain(
          "charging",
        ),
      );

      // A bridge connected while b runs announces it.
      const r2 = await relay();
      const second = await connectStatelyInspector(node, { url: r2.url, actors: ["machine-"] });
      try {
        await vi.waitFor(() => expect(of(r2.messages, "@xstate.actor", session)).toHaveLength(1));
        expect(of(r2.messages, "@xstate.actor", session)[0]!.snapshot).toMatchObject({ value: "charging" });
      } finally {
        second.close(); // the relay's close waits for its connections to end
        await r2.close();
      }

      // The payment settles: b moves to paid live, then parks again; refresh() shows it parked there.
      const parkedAgain = onAny(nodes, "job:waiting", (e) => e.job.id === b);
      release();
      await vi.waitFor(() =>
        expect(of(r.messages, "@xstate.snapshot", session).map((m) => m.snapshot?.value)).toContain("paid"),
      );
      await parkedAgain;
      expect(await bridge.refresh()).toBe(2);
      await vi.waitFor(() =>
        expect(of(r.messages, "@xstate.snapshot", `parked:${b}`).map((m) => m.snapshot?.value)).toEqual([
          "awaitingPayment",
          "paid",
        ]),
      );
    } finally {
      bridge?.close();
      await r.close();
    }
  });

  it("shows a machine by its states and event types only, without includePayloads", async () => {
    const node = nodes[0]!;
    const c = await parkedOrder(node, { orderId: "c", token: "tok_FROM_PAYLOAD" });
    const vaultParked = onAny(nodes, "job:waiting");
    const { id: v } = await node.enqueue("vault", {});
    await vaultParked;

    const r = await relay();
    const bridge = await connectStatelyInspector(node, { url: r.url, actors: ["machine-"] });
    try {
      await vi.waitFor(() => expect(of(r.messages, "@xstate.actor", `parked:${v}`)).toHaveLength(1));
      await vi.waitFor(() => expect(of(r.messages, "@xstate.actor", `parked:${c}`)).toHaveLength(1));
      const vault = of(r.messages, "@xstate.actor", `parked:${v}`)[0]!;
      expect(JSON.parse(vault.definition!)).toMatchObject({ id: "vault", context: "[redacted]" });
      expect(vault.snapshot).toMatchObject({ value: "idle", status: "active", context: "[redacted]" });
      expect(of(r.messages, "@xstate.actor", `parked:${c}`)[0]!.snapshot).toMatchObject({
        value: "awaitingPayment",
        context: "[redacted]",
      });

      // A live run: NOTE carries the sender's data; the bridge sees its type, and the new state's shape.
      const parkedAgain = onAny(nodes, "job:waiting", (e) => e.job.id === c);
      await node.send(c, { type: "NOTE", text: "note-secret" });
      await parkedAgain;
      const note = () => r.messages.find((m) => m.type === "@xstate.event" && m.event?.type === "NOTE");
      await vi.waitFor(() => expect(note()).toBeDefined());
      expect(note()!.event).toEqual({ type: "NOTE" });
      const live = of(r.messages, "@xstate.snapshot", note()!.sessionId);
      expect(live.length).toBeGreaterThan(0);
      for (const m of live) expect(m.snapshot!.context).toBe("[redacted]");

      const sent = JSON.stringify(r.messages);
      for (const secret of ["tok_FROM_PAYLOAD", "sk_live_STATIC_SECRET", "note-secret"]) {
        expect(sent).not.toContain(secret);
      }
    } finally {
      bridge.close();
      await r.close();
    }
  });

  it("keeps a failed parked read from the host, even when onError throws", async () => {
    const unhandled: unknown[] = [];
    const record = (e: unknown) => unhandled.push(e);
    process.on("unhandledRejection", record);
    const r = await relay();
    let told: unknown = null;
    // A node whose store fails every read (the database is down).
    const failing = {
      nodeRuntime: null,
      on: () => () => {},
      store: { operator: { machines: () => Promise.reject(new Error("database down")) } },
    };
    const bridge = await connectStatelyInspector(failing as never, {
      url: r.url,
      onError: (error) => {
        told = error;
        throw new Error("the host's handler has a bug");
      },
    });
    try {
      await vi.waitFor(() => expect(String(told)).toContain("database down"));
      // An unhandled rejection is reported once the microtasks drain: one turn of the loop is enough.
      await new Promise((resolve) => setImmediate(resolve));
      expect(unhandled.map(String)).toEqual([]);
    } finally {
      process.off("unhandledRejection", record);
      bridge.close();
      await r.close();
    }
  });

  it("bounds the parked machines read, and refuses a bound past one read", async () => {
    const node = nodes[0]!;
    const r = await relay();
    const bridge = await connectStatelyInspector(node, { url: r.url, maxParkedMachines: 1 });
    try {
      await vi.waitFor(() => expect(bridge.connected).toBe(true));
      expect(await bridge.refresh()).toBe(1);
      const none = await connectStatelyInspector(node, { url: r.url, maxParkedMachines: 0 });
      expect(await none.refresh()).toBe(0);
      none.close();
      bridge.close();
      expect(await bridge.refresh()).toBe(0);
    } finally {
      bridge.close();
    }
    await r.close();
    await expect(connectStatelyInspector(node, { url: r.url, maxParkedMachines: 500 })).rejects.toThrow(
      /maxParkedMachines/,
    );
  });
});
