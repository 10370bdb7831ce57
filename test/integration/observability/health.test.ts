/**
 * pawl.health() and its probes on a real node: /readyz answers 200 while the node runs and 503 while it
 * stops (a job holds the drain open, so "while" is a state the test controls, not a moment it hopes to
 * catch); /healthz stays 200 through the drain; a client that is not a node is not ready; a database that
 * does not answer fails the database check without a rejection and without its error text.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Pawl } from "../../../src/index.js";
import { createPawl, silentLogger } from "../../../src/index.js";
import {
  createMetrics,
  healthHandler,
  serveMetrics,
  type MetricsServer,
} from "../../../observability/index.js";
import { jobEvent } from "../../helpers/events.js";
import { gate } from "../../helpers/gate.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";

let schema: string;
let cleanup: () => Promise<void>;
const opened: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  const s = await setupSchema("health");
  schema = s.schema;
  cleanup = s.cleanup;
});

afterAll(async () => {
  for (const o of opened.reverse()) await o.close();
  await cleanup?.();
});

const probe = async (server: MetricsServer, path: string) => {
  const res = await fetch(`${server.origin}${path}`);
  return { status: res.status, body: (await res.json()) as Awaited<ReturnType<Pawl["health"]>> };
};

describe("health", () => {
  it("/readyz is 200 while the node runs, 503 while it stops; /healthz stays 200", async () => {
    const node = testPawl(schema, { nodeId: `${schema}-a` });
    opened.push(node);
    const hold = gate();
    node.register("hold", async () => hold.promise);
    const server = await serveMetrics(createMetrics(node), { port: 0 });
    opened.push(server);
    const heartbeat = node.events.next("cluster:heartbeat");
    await node.start();
    await heartbeat;

    const running = await probe(server, "/readyz");
    expect(running.status, JSON.stringify(running.body)).toBe(200);
    expect(running.body).toMatchObject({ ready: true, live: true, state: "running" });
    expect(running.body.checks.database.status).toBe("pass");
    expect(running.body.checks.heartbeat.status).toBe("pass");

    // A job in flight keeps the drain open until the test releases it.
    const started = jobEvent(node.events, "job:started");
    const job = await node.enqueue("hold", {});
    await started.for(job.id);
    const stopped = node.stop({ graceMs: 60_000 });

    const stopping = await probe(server, "/readyz");
    expect(stopping.status).toBe(503);
    expect(stopping.body).toMatchObject({ ready: false, state: "stopping" });
    expect((await probe(server, "/healthz")).status).toBe(200);

    hold.open();
    await stopped;
    expect((await probe(server, "/readyz")).status).toBe(503);
  });

  it("a client (not started) is alive and not ready, and checks only the database", async () => {
    const client = testPawl(schema);
    opened.push(client);
    const report = await client.health();
    expect(report).toMatchObject({ state: "client", ready: false, live: true, status: "pass" });
    expect(report.checks.database.status).toBe("pass");
    expect(report.checks.claimLoop.status).toBe("skip");
  });

  it("a database that refuses fails the database check, says why in its own words, and never rejects", async () => {
    const secret = "pa@ss/w#rd";
    const down = createPawl({
      connectionString: `postgres://someone:${secret}@127.0.0.1:1/nowhere`,
      schema,
      logger: silentLogger,
    });
    opened.push(down);
    const report = await down.health({ databaseTimeoutMs: 5_000 });
    expect(report.checks.database.status).toBe("fail");
    expect(report.checks.database.detail).toMatch(/the query failed|no answer/);
    expect(JSON.stringify(report)).not.toContain("pa@ss");
    expect(report.ready).toBe(false);
  });

  it("healthHandler serves any node:http server, passing other paths on", async () => {
    const client = testPawl(schema);
    opened.push(client);
    const handler = healthHandler(client, { logger: false });
    const server = createServer((req, res) => handler(req, res, () => res.writeHead(418).end()));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    opened.push({ close: () => new Promise<void>((r) => server.close(() => r())) });
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    expect((await fetch(`${base}/readyz`)).status).toBe(503);
    expect((await fetch(`${base}/other`)).status).toBe(418);
    expect((await fetch(`${base}/healthz`, { method: "POST" })).status).toBe(405);
  });
});
