import { randomBytes } from "node:crypto";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import type { Pawl } from "../../src/index.js";
import { setupSchema } from "../helpers/pawl.js";
import { testNode } from "../helpers/node.js";
import { ensureHazelcast, sharedMember } from "../helpers/hazelcast.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
const nodes: Pawl[] = [];

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("crt"));
  await ensureHazelcast();
}, 120_000);
afterAll(() => cleanup());
afterEach(async () => {
  for (const n of nodes.splice(0)) await n.close();
});

const tag = randomBytes(3).toString("hex");
// Every transport on its real server; names unique to this run so parallel test files never cross-talk.
const transports = () => [
  `in-memory://crt-${tag}`,
  "postgres",
  `amqp://guest:guest@127.0.0.1:5672?exchange=pawl.crt.${tag}`,
  `hazelcast://${sharedMember.address}?cluster=${sharedMember.cluster}&topic=crt-${tag}`,
];

function node(coordinator: string, config: Parameters<typeof testNode>[1] = {}): Pawl {
  const n = testNode(schema, { coordinator, ...config });
  nodes.push(n);
  return n;
}

/** A receiver that polls once at start and then sleeps for 30 s: only a wakeup can bring work early. */
async function idleReceiver(coordinator: string, register: (n: Pawl) => void): Promise<Pawl> {
  const b = node(coordinator, { pollIntervalMs: 30_000, cancelRecheckMs: 600_000 });
  register(b);
  const firstPoll = b.events.next("poll");
  await b.start();
  await firstPoll;
  return b;
}

describe.each(transports())("wakeups through the %s coordinator", (coordinator) => {
  it("wakes an idle node in another process's place at once for a critical job", async () => {
    const type = `urgent-${randomBytes(3).toString("hex")}`;
    const b = await idleReceiver(coordinator, (n) => n.register(type, async () => "done"));
    const a = node(coordinator); // the producer does not run this type
    await a.start();
    const woken = b.events.next("wakeup", (e) => e.source === "coordinator", 5000);
    const t0 = performance.now();
    const job = await a.enqueue(type, {}, { priority: "critical" });
    const wake = await woken;
    expect(wake.hint).toMatchObject({ source: a.nodeId, target: type, priority: 30 });
    await b.events.next("job:succeeded", (e) => e.job.id === job.id, 5000);
    expect(performance.now() - t0).toBeLessThan(2000); // the receiver's next poll was 30 s away
  });

  it("carries the cancellation of a running job to the node running it", async () => {
    const type = `long-${randomBytes(3).toString("hex")}`;
    const seen: boolean[] = [];
    const b = await idleReceiver(coordinator, (n) =>
      n.register(type, async (_p, ctx) => {
        await new Promise<void>((resolve) =>
          ctx.signal.addEventListener("abort", () => resolve(), { once: true }),
        );
        seen.push(ctx.isCancellationRequested());
      }),
    );
    const a = node(coordinator);
    const job = await a.enqueue(type, {}, { priority: "critical" });
    await b.events.next("job:started", (e) => e.job.id === job.id, 5000);
    await a.cancel(job.id);
    await b.events.next("job:canceled", (e) => e.job.id === job.id, 5000);
    expect(seen).toEqual([true]);
  });
});

describe("postgres coordinator and the caller's transaction", () => {
  it("notifies at commit, and a rolled-back enqueue wakes nobody", async () => {
    const rolled = `rolled-${randomBytes(3).toString("hex")}`;
    const committed = `committed-${randomBytes(3).toString("hex")}`;
    const b = await idleReceiver("postgres", (n) => {
      n.register(rolled, async () => "no");
      n.register(committed, async () => "yes");
    });
    const a = node("postgres");
    const woken = b.events.next("wakeup", (e) => e.source === "coordinator", 5000);
    const client = await pool.connect();
    try {
      await client.query("BEGIN");
      await a.enqueue(rolled, {}, { priority: "critical", client });
      await client.query("ROLLBACK");
      await client.query("BEGIN");
      await a.enqueue(committed, {}, { priority: "critical", client });
      await client.query("COMMIT");
    } finally {
      client.release();
    }
    expect((await woken).hint?.target).toBe(committed);
  });
});

describe("a coordinator that cannot connect", () => {
  it("never blocks start or enqueue, and jobs still run by polling", async () => {
    const n = node("amqp://guest:guest@127.0.0.1:1", { pollIntervalMs: 50 });
    const type = `unreached-${randomBytes(3).toString("hex")}`;
    n.register(type, async () => "polled");
    const errors: string[] = [];
    n.on("error", (e) => errors.push(e.where));
    await n.start();
    expect(n.inspect()?.coordinator).toMatchObject({ transport: "amqp", connected: false });
    const job = await n.enqueue(type, {}, { priority: "critical" });
    await n.events.next("job:succeeded", (e) => e.job.id === job.id, 5000);
    expect((await n.getJob(job.id))?.status).toBe("SUCCEEDED");
    expect(errors.filter((w) => w !== "coordinator")).toEqual([]);
  });
});
