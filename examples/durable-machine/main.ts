/**
 * Durable machines: an order lifecycle (./order-machine.ts) as a job. Each order is a machine job; while
 * it waits for its payment or its delivery it is parked in PostgreSQL (no slot, no connection, no node).
 * A "shop" client enqueues an order every 150 ms; a "customer" pays most of them with `send(id, PAY)`,
 * the rest time out and cancel themselves (a durable `after` timer); the carrier reports deliveries with
 * `send(id, DELIVERED)`. Progress every second: orders by outcome, and parked machines.
 *
 *   npx tsx examples/durable-machine/main.ts            # until Ctrl-C
 *   npx tsx examples/durable-machine/main.ts --once     # a few seconds, then a graceful stop (CI)
 */
import { createPawl, PawlClient } from "pawl";
import { databaseUrl, lifecycle, sleep } from "../shared/lifecycle.js";
import { orderMachine, type OrderInput } from "./order-machine.js";

const life = lifecycle("durable-machine");
const schema = process.env.PAWL_SCHEMA ?? "pawl_durable_machine";
const paymentTimeoutMs = 1_200;

const pawl = createPawl({ connectionString: databaseUrl, schema, concurrency: 8, pollIntervalMs: 250 });
const shop = new PawlClient({ connectionString: databaseUrl, schema });
await pawl.migrate();

const toDeliver: string[] = [];
const jobOf = new Map<string, string>();
pawl.registerMachine(
  "order",
  orderMachine({
    // A payment provider that declines one card in five.
    chargeCard: async ({ orderId, attempt }) => {
      await sleep(20);
      if (Math.random() < 0.2) throw new Error(`card declined (order ${orderId}, try ${attempt})`);
      return { paymentId: `pay-${orderId}-${attempt}` };
    },
    // A carrier that books a shipment and reports the delivery a little later (the webhook below).
    createShipment: async ({ orderId }) => {
      await sleep(30);
      toDeliver.push(orderId);
      return { trackingId: `trk-${orderId}` };
    },
  }),
  { version: 1, retry: { baseMs: 200, jitter: 0 } },
);

const outcomes = { delivered: 0, canceled: 0, failed: 0 };
pawl.on("job:succeeded", (e) => {
  if (e.job.type !== "order") return;
  void pawl.getJob(e.job.id).then((job) => {
    const value = job?.machine?.value;
    if (value === "delivered") outcomes.delivered++;
    else if (value === "canceled") outcomes.canceled++;
  });
});
pawl.on("job:dead", (e) => {
  if (e.job.type === "order") outcomes.failed++;
});
await pawl.start();

let running = true;
let sent = 0;
let n = 0;
const shopLoop = (async () => {
  while (running) {
    const input: OrderInput = { orderId: `o${++n}`, amount: 10 + (n % 90), paymentTimeoutMs };
    const job = await shop.enqueue("order", input);
    jobOf.set(input.orderId, job.id);
    // Three customers in four pay, a moment later; the others never do (their order times out).
    if (n % 4 !== 0) {
      setTimeout(() => {
        if (running)
          void shop.send(job.id, { type: "PAY" }).then(
            () => sent++,
            () => {},
          );
      }, 100).unref();
    }
    // The carrier's delivery webhooks.
    for (const orderId of toDeliver.splice(0)) {
      const id = jobOf.get(orderId);
      if (id)
        await shop.send(id, { type: "DELIVERED" }).then(
          () => sent++,
          () => {},
        );
    }
    await sleep(150);
  }
})();

const report = setInterval(() => {
  void shop
    .listJobs({ type: "order", status: "WAITING", limit: 1000 })
    .then((parked) =>
      life.progress(
        `orders ${n}: delivered ${outcomes.delivered}, canceled ${outcomes.canceled}, dead ${outcomes.failed}; ` +
          `${parked.length} parked; events sent ${sent}`,
      ),
    );
}, 1_000);

const reason = await life.stopping;
life.log(`${reason}: stopping the shop, draining the node`);
running = false;
await shopLoop;
clearInterval(report);
await pawl.stop({ graceMs: 5_000 });
await pawl.close();
await shop.close();
life.progress(
  `final: delivered ${outcomes.delivered}, canceled ${outcomes.canceled}, dead ${outcomes.failed}`,
);
// CI: it must have worked end to end (a delivery, and a timeout that canceled).
if (
  life.durationMs !== null &&
  (outcomes.delivered === 0 || outcomes.canceled === 0 || outcomes.failed > 0)
) {
  life.log("expected at least one delivered and one canceled order, and no dead one");
  process.exit(1);
}
