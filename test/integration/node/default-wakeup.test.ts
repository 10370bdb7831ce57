/**
 * Fast by default (issue 43): a node given only a connection string LISTENs (coordinator `auto`), and a
 * job enqueued by another process, through pawl or through the SQL function, wakes it through that
 * LISTEN instead of waiting for its next poll (up to 60 s on an idle node). Each pickup is shown to come
 * from a coordinator wakeup, an event, never from a timing.
 */
import type pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { PawlClient, type Pawl } from "../../../src/index.js";
import { databaseUrl } from "../../helpers/db.js";
import { jobEvent } from "../../helpers/events.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
const closers: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("dw"));
});
afterAll(() => cleanup());
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c.close();
});

/** A started node with pawl's defaults but the logger (the default one writes to stderr). */
async function defaultNode(): Promise<{ node: Pawl; transport: string }> {
  const node = testPawl(schema, { logger: false }, { pawlDefaults: true });
  closers.push(node);
  node.register("dw.ping", () => "pong");
  const connected = node.events.next("coordinator:connected", undefined, 20_000);
  await node.start();
  return { node, transport: (await connected).transport };
}

describe("a node with only a connection string", () => {
  it("LISTENs on the database", async () => {
    expect((await defaultNode()).transport).toBe("postgres");
  });

  it("is woken by a job another process enqueues with its own defaults", async () => {
    const { node } = await defaultNode();
    const web = new PawlClient({ connectionString: databaseUrl, schema, logger: false });
    closers.push(web);
    const woken = node.events.next("wakeup", (e) => e.source === "coordinator");
    const started = jobEvent(node.events, "job:started");
    const job = await web.enqueue("dw.ping");
    await woken;
    await started.for(job.id);
  });

  it("is woken by a job enqueued in SQL", async () => {
    const { node } = await defaultNode();
    const woken = node.events.next("wakeup", (e) => e.source === "coordinator");
    const started = jobEvent(node.events, "job:started");
    const { rows } = await pool.query<{ job_id: string }>(
      `SELECT job_id FROM "${schema}".enqueue('dw.ping')`,
    );
    await woken;
    await started.for(String(rows[0]!.job_id));
  });
});
