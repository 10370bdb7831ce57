/**
 * The SQL enqueue's wakeup: the postgres coordinator's channel and hint text, sent for urgent work only,
 * delivered at COMMIT and never after a rollback; and a node listening with the postgres coordinator wakes
 * for it. "Not before commit" is shown without sleeping: PostgreSQL delivers notifications in commit
 * order, so a marker committed later arrives after anything the earlier transaction sent.
 */
import { randomBytes } from "node:crypto";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import type { Pawl } from "../../../src/index.js";
import { encodeHint, postgresChannelName } from "../../../coordinators/index.js";
import { databaseUrl } from "../../helpers/db.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
let listener: pg.Client;
const heard: { channel: string; payload: string }[] = [];
let arrived: () => void = () => {};
const nodes: Pawl[] = [];

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("sqlwake"));
  listener = new pg.Client({ connectionString: databaseUrl });
  await listener.connect();
  listener.on("notification", (n) => {
    heard.push({ channel: n.channel, payload: n.payload ?? "" });
    arrived();
  });
  await listener.query(`LISTEN "${postgresChannelName(schema)}"`);
});
afterAll(async () => {
  await listener.end();
  await cleanup();
});
afterEach(async () => {
  for (const n of nodes.splice(0)) await n.close();
});

const enqueue = (db: pg.Pool | pg.PoolClient, type: string, options: object = {}) =>
  db.query(`SELECT * FROM "${schema}".enqueue($1, '{}', $2::jsonb)`, [type, JSON.stringify(options)]);

/** Commits a critical marker job and waits until its notification arrives: everything sent before it has. */
async function marker(): Promise<string> {
  const type = `marker-${randomBytes(3).toString("hex")}`;
  const seen = () => heard.some((h) => h.payload.includes(`"${type}"`));
  const done = new Promise<void>((resolve) => {
    arrived = () => seen() && resolve();
  });
  await enqueue(pool, type, { priority: "critical" });
  await done;
  return type;
}

/** The types named by the notifications heard, in order, forgetting them. */
function takeTargets(): string[] {
  return heard.splice(0).map((h) => (JSON.parse(h.payload) as { target: string }).target);
}

describe("the SQL enqueue's wakeup", () => {
  it("is the postgres coordinator's hint on the schema's channel, sent at COMMIT", async () => {
    await marker();
    heard.length = 0;
    const client = await pool.connect();
    try {
      await client.query("BEGIN");
      await enqueue(client, "wake.now", { priority: "high" }); // due now: urgent
      const before = await marker();
      expect(takeTargets()).toEqual([before]); // the open transaction's notify has not been delivered
      await client.query("COMMIT");
    } finally {
      client.release();
    }
    const after = await marker();
    expect(heard.map((h) => h.channel)).toEqual([postgresChannelName(schema), postgresChannelName(schema)]);
    expect(heard[0]!.payload).toBe(encodeHint({ priority: 20, source: "sql", target: "wake.now" }));
    expect(takeTargets()).toEqual(["wake.now", after]);
  });

  it("sends nothing after a rollback, for work not due, or when a live job holds the unique key", async () => {
    await marker();
    heard.length = 0;
    await enqueue(pool, "wake.critical.later", { delayMs: 60_000, priority: "critical" }); // critical: urgent
    await enqueue(pool, "wake.key", { uniqueKey: "wake-k" }); // inserted and due now: urgent
    const first = await marker();
    expect(takeTargets()).toEqual(["wake.critical.later", "wake.key", first]);

    const client = await pool.connect();
    try {
      await client.query("BEGIN");
      await enqueue(client, "wake.rolled", { priority: "critical" });
      await client.query("ROLLBACK");
    } finally {
      client.release();
    }
    await enqueue(pool, "wake.later", { delayMs: 60_000 }); // normal priority, not due: polling finds it
    await enqueue(pool, "wake.key", { uniqueKey: "wake-k" }); // returns the live job, inserts nothing
    const last = await marker();
    expect(takeTargets()).toEqual([last]);
  });

  it("uses the coordinator's shortened channel for a long schema name", async () => {
    const long = `s_${"x".repeat(58)}`;
    const { rows } = await pool.query<{ channel: string }>(
      `SELECT "${schema}".pawl_wakeup_channel($1) AS channel`,
      [long],
    );
    expect(postgresChannelName(long)).not.toBe(`pawl_${long}_wakeup`); // the hashed branch
    expect(rows[0]!.channel).toBe(postgresChannelName(long));
    const short = await pool.query(`SELECT "${schema}".pawl_wakeup_channel($1) AS channel`, [schema]);
    expect(short.rows[0].channel).toBe(postgresChannelName(schema));
  });

  it("wakes an idle node listening with the postgres coordinator", async () => {
    const type = `sql-woken-${randomBytes(3).toString("hex")}`;
    const node = testPawl(schema, {
      coordinator: "postgres",
      pollIntervalMs: 30_000,
      cancelRecheckMs: 600_000,
      claimCursorFullDiscoveryMs: 60_000,
      claimCursorFullDiscoveryMaxMs: 600_000,
    });
    nodes.push(node);
    node.register(type, async () => "done");
    const connected = node.events.next("coordinator:connected", undefined, 5000);
    const firstPoll = node.events.next("poll");
    await node.start();
    await Promise.all([firstPoll, connected]);
    const woken = node.events.next("wakeup", (e) => e.source === "coordinator", 5000);
    const succeeded = node.events.next("job:succeeded", (e) => e.job.type === type, 5000);
    await enqueue(pool, type, { priority: "critical" });
    expect((await woken).hint).toMatchObject({ source: "sql", target: type, priority: 30 });
    await succeeded; // its next poll was 30 s away
  });
});
