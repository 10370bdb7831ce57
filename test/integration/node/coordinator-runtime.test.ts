import { randomBytes } from "node:crypto";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import type { Pawl } from "../../../src/index.js";
import { decodeHint, encodeHint, postgresChannelName, type WakeupHint } from "../../../coordinators/index.js";
import { databaseUrl } from "../../helpers/db.js";
import { jobEvent } from "../../helpers/events.js";
import { setupSchema, startConnected, testPawl } from "../../helpers/pawl.js";
import { ensureHazelcast, sharedMember } from "../../helpers/hazelcast.js";

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

function node(coordinator: string, config: Parameters<typeof testPawl>[1] = {}): Pawl {
  const n = testPawl(schema, { coordinator, ...config });
  nodes.push(n);
  return n;
}

/** A receiver that polls once at start and then sleeps for 30 s: only a wakeup can bring work early. */
async function idleReceiver(coordinator: string, register: (n: Pawl) => void): Promise<Pawl> {
  const b = node(coordinator, {
    pollIntervalMs: 30_000,
    cancelRecheckMs: 600_000,
    claimCursorFullDiscoveryMs: 60_000,
    claimCursorFullDiscoveryMaxMs: 600_000,
  });
  register(b);
  const firstPoll = b.events.next("poll");
  await startConnected(b);
  await firstPoll;
  return b;
}

describe.each(transports())("wakeups through the %s coordinator", (coordinator) => {
  it("wakes an idle node in another process's place at once for a critical job", async () => {
    const type = `urgent-${randomBytes(3).toString("hex")}`;
    const b = await idleReceiver(coordinator, (n) => n.register(type, async () => "done"));
    const a = node(coordinator); // the producer does not run this type
    await startConnected(a);
    const woken = b.events.next("wakeup", (e) => e.source === "coordinator", 5000);
    // Listened for before the enqueue: the receiver may run the job before the call returns.
    const succeeded = b.events.next("job:succeeded", (e) => e.job.type === type, 5000);
    const t0 = performance.now();
    const job = await a.enqueue(type, {}, { priority: "critical" });
    const wake = await woken;
    expect(wake.hint).toMatchObject({ source: a.nodeId, target: type, priority: 30 });
    expect((await succeeded).job.id).toBe(job.id);
    expect(performance.now() - t0).toBeLessThan(2000); // the receiver's next poll was 30 s away
  });

  it("says whether the woken work carries concurrency keys", async () => {
    const type = `keys-${randomBytes(3).toString("hex")}`;
    const b = await idleReceiver(coordinator, (n) => n.register(type, async () => "done"));
    const a = node(coordinator);
    await startConnected(a);
    const hintOf = async (options: Parameters<Pawl["enqueue"]>[2]) => {
      const woken = b.events.next("wakeup", (e) => e.source === "coordinator", 5000);
      const done = b.events.next("job:succeeded", (e) => e.job.type === type, 5000);
      await a.enqueue(type, {}, options);
      const { hint } = await woken;
      await done;
      return hint;
    };
    // Unkeyed work lets an idle receiver claim without the keyed statement (docs/fairness.md).
    expect((await hintOf({ priority: "critical" }))?.unkeyed).toBe(true);
    expect((await hintOf({ priority: "critical", concurrencyKey: "acct-1" }))?.unkeyed).toBeUndefined();
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
    await startConnected(a);
    const started = b.events.next("job:started", (e) => e.job.type === type, 5000);
    const jobCanceled = jobEvent(b.events, "job:canceled", undefined, 5000);
    const job = await a.enqueue(type, {}, { priority: "critical" });
    expect((await started).job.id).toBe(job.id);
    await a.cancel(job.id);
    await jobCanceled.for(job.id);
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

describe("postgres coordinator on the caller's own pool", () => {
  it("listens on the pool's database when no connectionString is given", async () => {
    // The pool names the test database; the default URL (and the postgres coordinator's LISTEN, before
    // this was fixed) names the `postgres` database, where no notify from the test database arrives.
    const ownPool = new pg.Pool({ connectionString: databaseUrl, max: 4 });
    ownPool.on("error", () => {});
    try {
      const type = `pooled-${randomBytes(3).toString("hex")}`;
      const b = await idleReceiver("postgres", (n) => n.register(type, async () => "done"));
      const pooled = node("postgres", { connectionString: undefined, pool: ownPool });
      pooled.register(type, async () => "done");
      const firstPoll = pooled.events.next("poll");
      await pooled.start();
      await firstPoll;
      const woken = pooled.events.next("wakeup", (e) => e.source === "coordinator", 5000);
      await b.enqueue(type, {}, { priority: "critical" });
      const w = await woken;
      expect(w.hint).toMatchObject({ target: type });
    } finally {
      for (const n of nodes.splice(0)) await n.close();
      await ownPool.end();
    }
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
    const jobSucceeded = jobEvent(n.events, "job:succeeded", undefined, 5000);
    const job = await n.enqueue(type, {}, { priority: "critical" });
    await jobSucceeded.for(job.id);
    expect((await n.getJob(job.id))?.status).toBe("SUCCEEDED");
    expect(errors.filter((w) => w !== "coordinator")).toEqual([]);
  });
});

describe("postgres coordinator: the notify folded into the insert", () => {
  /** A plain LISTEN connection on the schema's channel, recording every notification. */
  async function listen(): Promise<{
    seen: WakeupHint[];
    waitFor: (match: (h: WakeupHint) => boolean) => Promise<WakeupHint>;
    close: () => Promise<void>;
  }> {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    const seen: WakeupHint[] = [];
    const waiters: { match: (h: WakeupHint) => boolean; resolve: (h: WakeupHint) => void }[] = [];
    client.on("notification", (m) => {
      const hint = decodeHint(m.payload ?? "");
      if (!hint) return;
      seen.push(hint);
      for (const w of waiters.splice(0)) {
        if (w.match(hint)) w.resolve(hint);
        else waiters.push(w);
      }
    });
    await client.query(`LISTEN "${postgresChannelName(schema)}"`);
    return {
      seen,
      // Resolves with the first hint, seen already or to come, that matches.
      waitFor: (match) =>
        new Promise((resolve) => {
          const found = seen.find(match);
          if (found) resolve(found);
          else waiters.push({ match, resolve });
        }),
      close: () => client.end(),
    };
  }

  it("wakes nobody when the insert added no row, and notifies at commit when it did", async () => {
    const a = node("postgres");
    await a.start(); // the coordinator is ready, so enqueues fold their notify
    const type = `fold-${randomBytes(3).toString("hex")}`;
    const existing = await a.enqueue(type, {}, { uniqueKey: `k-${type}` });
    const l = await listen();
    try {
      const client = await pool.connect();
      try {
        await client.query("BEGIN");
        const dup = await a.enqueue(type, {}, { priority: "critical", uniqueKey: `k-${type}`, client });
        expect(dup).toMatchObject({ id: existing.id, inserted: false });
        await client.query("COMMIT");
        await client.query("BEGIN");
        await a.enqueue(`${type}-fresh`, {}, { priority: "critical", client });
        await client.query("COMMIT");
        // Notifications arrive in commit order: had the first transaction notified, it would come first.
        await l.waitFor((h) => h.target === `${type}-fresh`);
        expect(l.seen.map((h) => h.target)).toEqual([`${type}-fresh`]);
      } finally {
        client.release();
      }
    } finally {
      await l.close();
    }
  });

  it("keeps coalescing: a burst of urgent enqueues sends a bounded number of notifications", async () => {
    const a = node("postgres");
    await a.start();
    const type = `burst-${randomBytes(3).toString("hex")}`;
    const l = await listen();
    try {
      const t0 = performance.now();
      await Promise.all(Array.from({ length: 300 }, () => a.enqueue(type, {}, { priority: "critical" })));
      const elapsed = performance.now() - t0;
      // Every insert that carried a notify has committed: a marker sent after them arrives after their
      // notifications. (The coalescer's trailing hint may come later still; it could only add one.)
      await pool.query(`SELECT pg_notify($1, $2)`, [
        postgresChannelName(schema),
        encodeHint({ priority: 0, source: "marker" }),
      ]);
      await l.waitFor((h) => h.source === "marker");
      const fromA = l.seen.filter((h) => h.source === a.nodeId);
      expect(fromA.length).toBeGreaterThanOrEqual(1);
      // One per 5 ms window at most (plus the leading and the trailing edge), never one per job.
      expect(fromA.length).toBeLessThanOrEqual(Math.ceil(elapsed / 5) + 2);
      expect(fromA.length).toBeLessThan(300);
      expect((a.inspect()?.coordinator as { published: number }).published).toBeGreaterThanOrEqual(
        fromA.length,
      );
    } finally {
      await l.close();
    }
  });
});

describe("released work through a coordinator", () => {
  const coordinator = `in-memory://crt-rel-${tag}`;
  it("makes an idle node look below its claim cursors' floors at once", async () => {
    const type = `released-${randomBytes(3).toString("hex")}`;
    const a = node(coordinator); // resumes the job; does not run the type
    // A priority no other row of this file uses, so B has never seen its level.
    const paused = await a.enqueue(type, {}, { priority: 77 });
    await a.pauseJob(paused.id);
    // B starts after the job was paused: its floors lie above the job's id and it has never seen the
    // job's level, so only a full pass finds the job once it is PENDING again, and B's is a minute away.
    const b = await idleReceiver(coordinator, (n) => n.register(type, async () => "ran"));
    expect(b.nodeRuntime?.claimer.describe()).toMatchObject({ kind: "cursors", fullDiscoveryDue: false });
    const succeeded = b.events.next("job:succeeded", (e) => e.job.id === paused.id, 5000);
    await a.start();
    await a.resumeJob(paused.id);
    await succeeded;
  });
});
