/**
 * pawl through PgBouncer 1.18 in transaction mode (which cannot carry named prepared statements), with
 * `preparedStatements: false` and the postgres coordinator's LISTEN on `directConnectionString`: a
 * 3,000-job run with a retried job, waitFor from a bare client, LISTEN wakeups with a 30 s poll (pickup
 * p50 under 100 ms), a chain and a batch, a rate limit, a recurring schedule, the CLI and the console, and
 * not one warning or error logged. Before `preparedStatements: false`, the same run logged `prepared
 * statement "pawl_..." does not exist` / `already exists` on claims, heartbeats, leases and the pruner,
 * and waitFor never returned.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPawl, PawlClient, type Pawl } from "../../../src/index.js";
import { main } from "../../../src/cli/main.js";
import { createConsole, createMetrics, serveMetrics } from "../../../observability/index.js";
import { dropSchema, testPool, uniqueSchema } from "../../helpers/db.js";
import {
  assertPoolerAnswers,
  capturingLogger,
  directUrl,
  poolerUrl,
  skipMessage,
} from "./pgbouncer-setup.js";

if (!poolerUrl) console.warn(skipMessage("pgbouncer-runtime.test.ts"));

const schema = uniqueSchema("pgbouncer_rt");
const pool = testPool(2);
const logger = capturingLogger();
let node: Pawl;
/** A second started node that only enqueues: its enqueues carry the wakeup NOTIFY (a bare client's do not). */
let producer: Pawl;
let client: PawlClient;

/** The settings a deployment behind a transaction pooler uses, with a 30 s poll so pickups prove LISTEN. */
const poolerConfig = () => ({
  connectionString: poolerUrl as string,
  directConnectionString: directUrl,
  preparedStatements: false,
  schema,
  logger,
});

describe.skipIf(!poolerUrl)("through PgBouncer in transaction mode", () => {
  beforeAll(async () => {
    await assertPoolerAnswers(poolerUrl as string);
    node = createPawl({
      ...poolerConfig(),
      coordinator: "postgres",
      concurrency: 10,
      pollIntervalMs: 30_000,
      polling: { maxDelayMs: 30_000, deepIdleDelayMs: 30_000 },
      // The claim cursors' discovery pass stays at its default (1 s): a retry under an old id waits for it
      // (docs/claim-cursors.md). A pickup under 100 ms at the median still takes a wakeup: a 1 s pass
      // alone would give a median near 500 ms.
      recurringCheckIntervalMs: 1_000,
    });
    await node.migrate(); // through the pooler: one transaction per migration, no session needed
    client = new PawlClient({ ...poolerConfig(), coordinator: "postgres" });
    producer = createPawl({ ...poolerConfig(), coordinator: "postgres", concurrency: 1 });
  }, 60_000);

  afterAll(async () => {
    await node?.stop({ graceMs: 5_000 }).catch(() => {});
    await node?.close();
    await producer?.stop({ graceMs: 1_000 }).catch(() => {});
    await producer?.close();
    await client?.close();
    await dropSchema(pool, schema);
    await pool.end();
  });

  it("runs 3,000 jobs with a retried one, wakes by LISTEN, and waitFor returns", async () => {
    let flakyRuns = 0;
    node.register("bulk", async () => {});
    node.register(
      "flaky",
      async () => {
        flakyRuns++;
        if (flakyRuns === 1) throw new Error("first attempt fails");
        return { ok: true };
      },
      { retry: { baseMs: 50, factor: 1, maxMs: 50, jitter: 0 }, maxAttempts: 3 },
    );
    node.register("ping", async () => {});
    for (const n of [node, producer]) {
      const connected = n.events.next("coordinator:connected", undefined, 20_000);
      await n.start();
      await connected;
    }

    const total = 3_000;
    let succeeded = 0;
    let resolveAll: () => void = () => {};
    const all = new Promise<void>((r) => (resolveAll = r));
    const off = node.events.on("job:succeeded", ({ job }) => {
      if (job.type === "bulk" && ++succeeded === total) resolveAll();
    });
    for (let i = 0; i < total; i += 500) {
      await client.enqueueMany(
        Array.from({ length: 500 }, (_, k) => ({ type: "bulk", payload: { n: i + k } })),
      );
    }
    const flaky = await client.enqueue("flaky", {});
    const done = await client.waitFor(flaky, { timeoutMs: 30_000 });
    expect(done.status).toBe("SUCCEEDED");
    expect(flakyRuns).toBe(2);
    await all;
    off();

    // Pickup of a job another node enqueues into an idle node: with a 30 s poll only a LISTEN wakeup
    // (NOTIFY sent through the pooler, heard on the direct connection) is this fast.
    const pickups: number[] = [];
    const pings = [];
    for (let i = 0; i < 25; i++) {
      const started = node.events.next("job:started", ({ job }) => job.type === "ping", 10_000);
      const t0 = performance.now();
      pings.push(await producer.enqueue("ping", { i }));
      await started;
      pickups.push(performance.now() - t0);
    }
    // A start is not a finish: the last ping's outcome may still be on its way when the loop ends.
    for (const ping of pings) await client.waitFor(ping, { timeoutMs: 10_000 });
    pickups.sort((a, b) => a - b);
    const p50 = pickups[Math.floor(pickups.length / 2)] as number;
    console.log(
      `pickup through PgBouncer (LISTEN direct, 30 s poll): p50 ${p50.toFixed(1)} ms, max ${pickups.at(-1)?.toFixed(1)} ms`,
    );
    expect(p50).toBeLessThan(100);
    const counts = await pool.query<{ status: string; n: number }>(
      `SELECT status, count(*)::int AS n FROM "${schema}".scheduler_job_all GROUP BY status`,
    );
    expect(counts.rows).toEqual([{ status: "SUCCEEDED", n: total + 1 + 25 }]);
  }, 180_000);

  it("runs a chain, a batch, a rate-limited type and a recurring schedule", async () => {
    const ran: string[] = [];
    for (const type of ["step.a", "step.b", "item", "batch.done"]) {
      node.register(type, async () => void ran.push(type));
    }
    node.register("limited", async () => void ran.push("limited"), { rateLimit: { limit: 3, perMs: 500 } });
    node.register("tick", async () => void ran.push("tick"));

    const chain = await node.chain([{ type: "step.a" }, { type: "step.b" }]);
    const batch = await node.batch({ type: "item", items: [{}, {}, {}], onComplete: { type: "batch.done" } });
    const limited = await node.enqueueMany(
      Array.from({ length: 6 }, () => ({ type: "limited", payload: {} })),
    );
    const fired = node.events.next("recurring:fired", ({ name }) => name === "tick", 20_000);
    await node.schedule("tick", "* * * * * *", {});
    const fire = await fired;

    for (const id of [...chain.jobIds, ...batch.jobIds, ...limited.map((j) => j.id), fire.jobId]) {
      expect((await client.waitFor(id, { timeoutMs: 20_000 })).status).toBe("SUCCEEDED");
    }
    await node.unschedule("tick");
    expect(ran.filter((t) => t === "limited")).toHaveLength(6);
    expect(ran.indexOf("step.a")).toBeLessThan(ran.indexOf("step.b"));
  }, 60_000);

  it("serves the CLI and the console through the pooler", async () => {
    let stdout = "";
    let stderr = "";
    for (const argv of [["jobs"], ["nodes"], ["stats"]]) {
      const code = await main([...argv, "--schema", schema, "--database-url", poolerUrl as string], {
        stdout: (s) => void (stdout += s),
        stderr: (s) => void (stderr += s),
        env: { PAWL_PREPARED_STATEMENTS: "false" },
      });
      expect(code, `pawl ${argv.join(" ")}: ${stderr}`).toBe(0);
    }
    expect(stdout).toContain(node.nodeId);

    const server = await serveMetrics(createMetrics(node), { port: 0, console: createConsole(node) });
    try {
      const base = server.url.replace(/\/metrics$/, "");
      for (const path of ["/metrics", "/console", "/console/jobs", "/console/dlq", "/console/nodes"]) {
        const res = await fetch(base + path);
        expect(res.status, path).toBe(200);
        const body = await res.text();
        // The nodes page names each node's release and the schema version it needs.
        if (path === "/console/nodes") expect(body).toMatch(/\(schema \d+\)/);
      }
    } finally {
      await server.close();
    }
  }, 60_000);

  it("logged no warning and no error", () => {
    expect(logger.problems()).toEqual([]);
  });
});
