/**
 * A cancel hint is a reason to read the store, never a command. A message forged on the wakeup channel of
 * each network transport (pg_notify on the channel, a publish to the AMQP exchange, a publish to the
 * Hazelcast topic) names a running and a buffered job that nobody canceled: neither may be aborted. A real
 * `pawl.cancel()` from another node still reaches the running attempt at once through the same transport
 * (the periodic store check is set ten minutes out, so only the hint-triggered read can be what told it).
 */
import { randomBytes } from "node:crypto";
import amqp from "amqplib";
import hazelcast from "hazelcast-client";
import type pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { postgresChannelName } from "../../../coordinators/index.js";
import type { JobContext, Pawl } from "../../../src/index.js";
import { setupSchema, startConnected, testPawl } from "../../helpers/pawl.js";
import { jobEvent } from "../../helpers/events.js";
import { ensureHazelcast, sharedMember } from "../../helpers/hazelcast.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
const nodes: Pawl[] = [];
const disposers: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("fc"));
  await ensureHazelcast();
}, 120_000);
afterAll(async () => {
  for (const d of disposers.splice(0)) await d().catch(() => {});
  await cleanup();
});
afterEach(async () => {
  for (const n of nodes.splice(0)) await n.close();
});

const tag = randomBytes(3).toString("hex");
const exchange = `pawl.fc.${tag}`;
const topic = `fc-${tag}`;
const broker = "amqp://guest:guest@127.0.0.1:5672";

const silent = { log() {}, error() {}, warn() {}, info() {}, debug() {}, trace() {} };

/** Puts raw text on a transport's channel, as any program with access to it could. */
type Forger = (payload: string) => Promise<void>;

const forgers: Record<string, () => Promise<Forger>> = {
  postgres: async () => async (payload) => {
    await pool.query("SELECT pg_notify($1, $2)", [postgresChannelName(schema), payload]);
  },
  amqp: async () => {
    const connection = await amqp.connect(broker);
    connection.on("error", () => {});
    const channel = await connection.createConfirmChannel();
    channel.on("error", () => {});
    disposers.push(async () => {
      await channel.deleteExchange(exchange).catch(() => {});
      await connection.close();
    });
    return async (payload) => {
      channel.publish(exchange, "", Buffer.from(payload));
      await channel.waitForConfirms();
    };
  },
  hazelcast: async () => {
    const client = await hazelcast.Client.newHazelcastClient({
      clusterName: sharedMember.cluster,
      network: { clusterMembers: [sharedMember.address] },
      connectionStrategy: { connectionRetry: { clusterConnectTimeoutMillis: 10_000 } },
      customLogger: silent,
    });
    disposers.push(() => client.shutdown());
    const reliable = await client.getReliableTopic<unknown>(topic);
    return async (payload) => {
      await reliable.publish(payload);
    };
  },
};

const transports: [string, string][] = [
  ["postgres", "postgres"],
  ["amqp", `${broker}?exchange=${exchange}`],
  ["hazelcast", `hazelcast://${sharedMember.address}?cluster=${sharedMember.cluster}&topic=${topic}`],
];

/** A hint as it travels on every transport, from a source that is no node. */
const forgedCancel = (jobId: string) =>
  JSON.stringify({ pawl: 1, kind: "cancel", priority: 0, source: "x", jobId });
const marker = (source: string) => JSON.stringify({ pawl: 1, kind: "work", priority: 0, source });

function node(coordinator: string, config: Parameters<typeof testPawl>[1] = {}): Pawl {
  const n = testPawl(schema, {
    coordinator,
    // The periodic cancel check is ten minutes out: whatever reaches an attempt here came by a hint.
    cancelRecheckMs: 600_000,
    ...config,
  });
  nodes.push(n);
  return n;
}

/** A cooperative handler: finishes when released, or gives up (throws) when its signal aborts. */
function cooperative() {
  const releases = new Map<string, () => void>();
  const aborted: string[] = [];
  const handler = (_p: unknown, ctx: JobContext) =>
    new Promise<string>((resolve, reject) => {
      if (ctx.signal.aborted) {
        aborted.push(ctx.jobId);
        reject(new Error("aborted before it began"));
        return;
      }
      releases.set(ctx.jobId, () => resolve("done"));
      ctx.signal.addEventListener(
        "abort",
        () => {
          aborted.push(ctx.jobId);
          reject(new Error("aborted"));
        },
        { once: true },
      );
    });
  const release = (id: string) => releases.get(id)?.();
  return { handler, release, aborted, releases };
}

describe.each(transports)("cancel hints through the %s coordinator", (name, coordinator) => {
  it("a forged cancel hint aborts neither the running nor the buffered job", async () => {
    const forge = await forgers[name]!();
    const type = `forged-${randomBytes(3).toString("hex")}`;
    const c = cooperative();
    // One slot: the first job runs, the second waits in the buffer.
    const b = node(coordinator, { concurrency: 1 });
    b.register(type, c.handler, { maxAttempts: 1 });
    const [running, buffered] = await b.enqueueMany([
      { type, payload: { n: 1 }, priority: 60 },
      { type, payload: { n: 2 }, priority: 50 },
    ]);
    const started = b.events.next("job:started", (e) => e.job.id === running!.id, 10_000);
    await startConnected(b); // subscribed before the forger publishes
    await started;
    expect(b.nodeRuntime?.buffered).toBe(1);

    // Hints from one publisher arrive in order: once the marker's wakeup is seen, so were both cancels.
    const markerSeen = b.events.next("wakeup", (e) => e.hint?.source === `marker-${name}`, 10_000);
    await forge(forgedCancel(running!.id));
    await forge(forgedCancel(buffered!.id));
    await forge(marker(`marker-${name}`));
    await markerSeen;
    expect(c.aborted).toEqual([]);

    const bufferedStarted = b.events.next("job:started", (e) => e.job.id === buffered!.id, 10_000);
    const firstDone = b.events.next("job:succeeded", (e) => e.job.id === running!.id, 10_000);
    c.release(running!.id);
    await firstDone;
    await bufferedStarted;
    const secondDone = b.events.next("job:succeeded", (e) => e.job.id === buffered!.id, 10_000);
    c.release(buffered!.id);
    await secondDone;
    expect(c.aborted).toEqual([]);
    expect((await b.getJob(running!.id))?.status).toBe("SUCCEEDED");
    expect((await b.getJob(buffered!.id))?.status).toBe("SUCCEEDED");
  });

  it("a real cancel from another node reaches the running attempt promptly", async () => {
    const type = `real-${randomBytes(3).toString("hex")}`;
    const c = cooperative();
    const b = node(coordinator, { concurrency: 1 });
    b.register(type, c.handler, { maxAttempts: 1 });
    const a = node(coordinator); // cancels; does not run the type
    await Promise.all([startConnected(a), startConnected(b)]);
    const started = b.events.next("job:started", (e) => e.job.type === type, 10_000);
    const jobCanceled = jobEvent(b.events, "job:canceled", undefined, 10_000);
    const job = await b.enqueue(type, {});
    await started;
    const canceled = jobCanceled.for(job.id);
    const t0 = performance.now();
    expect((await a.cancel(job.id)).outcome).toBe("running-canceled");
    await canceled;
    const ms = performance.now() - t0;
    expect(c.aborted).toEqual([job.id]);
    expect(ms).toBeLessThan(2_000); // the store check alone would take ten minutes
    expect((await b.getJob(job.id))?.status).toBe("CANCELED");
  });
});
