/**
 * Durable machines in the actor inspector's JSON (`GET /debug/actors`): a machine held in an invoke runs
 * on the node (live, naming it), the others are parked in PostgreSQL with their state and next timer; the
 * list is bounded and says when there are more; an ended machine is not listed.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Pawl } from "../../../src/index.js";
import {
  createInspector,
  createMetrics,
  serveMetrics,
  type ActorsView,
  type MetricsServer,
} from "../../../observability/index.js";
import { closeAll, setupSchema, startNodes } from "../../helpers/pawl.js";
import { onAny } from "../../helpers/events.js";
import { heldCharge, orderMachine } from "../machines/order-machine.js";

let cleanup: () => Promise<void>;
let nodes: Pawl[] = [];
const servers: MetricsServer[] = [];
const { charge, charged, release } = heldCharge();

beforeAll(async () => {
  const s = await setupSchema("insp_mach");
  cleanup = s.cleanup;
  nodes = await startNodes(s.schema, 1, (n) => n.registerMachine("order", orderMachine(charge)));
});

afterAll(async () => {
  release();
  for (const s of servers) await s.close();
  await closeAll(nodes);
  await cleanup?.();
});

async function tree(maxMachines?: number): Promise<ActorsView> {
  const node = nodes[0]!;
  const inspector = createInspector(node, maxMachines === undefined ? {} : { maxMachines });
  const server = await serveMetrics(createMetrics(node), { port: 0, inspector });
  servers.push(server);
  const res = await fetch(server.url.replace(/\/metrics$/, "/debug/actors"));
  expect(res.status).toBe(200);
  return (await res.json()) as ActorsView;
}

describe("durable machines in the inspector", () => {
  it("lists a live machine with its node and parked ones with their state and next timer, bounded", async () => {
    const node = nodes[0]!;
    const ids: string[] = [];
    for (const orderId of ["a", "b", "c"]) {
      const parked = onAny(nodes, "job:waiting");
      ids.push((await node.enqueue("order", { orderId, amount: 1 })).id);
      await parked;
    }
    // The last machine takes PAY and is held in its invoke: it runs on the node.
    await node.send(ids[2]!, { type: "PAY" });
    await charged;

    const view = await tree();
    expect(view.machines).toMatchObject({ limit: 100, more: false });
    expect(view.machines!.live).toMatchObject([
      { id: `machine-${ids[2]}`, jobStatus: "RUNNING", node: node.nodeId, type: "order", events: 1 },
    ]);
    expect(view.machines!.parked.map((m) => [m.jobId, m.jobStatus, m.value, m.node])).toEqual([
      [ids[1], "WAITING", "awaitingPayment", null],
      [ids[0], "WAITING", "awaitingPayment", null],
    ]);
    const due = Date.parse(view.machines!.parked[0]!.nextTimerAt!);
    expect(due - Date.now()).toBeGreaterThan(3_500_000); // the hour's timeout
    expect(due - Date.now()).toBeLessThanOrEqual(3_600_000);

    // Bounded: the newest first, and it says there are more.
    const one = await tree(1);
    expect(one.machines).toMatchObject({ limit: 1, more: true });
    expect([...one.machines!.live, ...one.machines!.parked].map((m) => m.jobId)).toEqual([ids[2]]);

    // An ended machine leaves the list.
    const done = onAny(nodes, "job:waiting", (e) => e.job.id === ids[2]);
    release();
    await done;
    const ended = onAny(nodes, "job:succeeded", (e) => e.job.id === ids[2]);
    await node.send(ids[2]!, { type: "SHIP", carrier: "dhl" });
    await ended;
    const after = await tree();
    expect([...after.machines!.live, ...after.machines!.parked].map((m) => m.jobId)).toEqual([
      ids[1],
      ids[0],
    ]);
  });

  it("refuses a bound past what one read returns", () => {
    expect(() => createInspector(nodes[0]!, { maxMachines: 500 })).toThrow(/maxMachines/);
  });
});
