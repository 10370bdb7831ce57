/**
 * pawl under a role that cannot change the schema (docs/deployment.md#roles): the owner migrates and runs
 * what `pawl grants <role>` prints; a node logged in as the application role then runs the whole job
 * lifecycle (success, a retry, a dead job, a cancel, a chain, a queue the owner paused, a recurring fire,
 * pruning, a dead letter retry), makes and drops history partitions through the owner's functions,
 * and the CLI's reads run as a read-only role. What needs more (migrate as the application role, any role
 * never granted) fails with INSUFFICIENT_PRIVILEGE saying what to run.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "node:crypto";
import pg from "pg";
import { PawlError, type Pawl } from "../../../src/index.js";
import { JobStore } from "../../../src/store/postgres-job-store.js";
import { main } from "../../../src/cli/main.js";
import { databaseUrl, dropSchema, testPool, uniqueSchema } from "../../helpers/db.js";
import { testPawl } from "../../helpers/pawl.js";

const schema = uniqueSchema("least_priv");
const suffix = randomBytes(3).toString("hex");
const appRole = `pawl_app_${suffix}`;
const readerRole = `pawl_reader_${suffix}`;
const strangerRole = `pawl_none_${suffix}`;
const pool = testPool(2);

/** The test database's URL, logged in as `role` (trust authentication on 127.0.0.1). */
function urlAs(role: string): string {
  const url = new URL(databaseUrl);
  url.username = role;
  url.password = "";
  return url.toString();
}

/** Runs the CLI in-process; returns its exit code and output. */
async function cli(argv: string[], url = databaseUrl) {
  let stdout = "";
  let stderr = "";
  const code = await main([...argv, "--schema", schema, "--database-url", url], {
    stdout: (s) => void (stdout += s),
    stderr: (s) => void (stderr += s),
    env: {},
  });
  return { code, stdout, stderr };
}

beforeAll(async () => {
  for (const role of [appRole, readerRole, strangerRole]) await pool.query(`CREATE ROLE "${role}" LOGIN`);
  const owner = testPawl(schema);
  await owner.migrate();
  await owner.close();
  // The owner runs what `pawl grants` prints.
  for (const [role, flags] of [
    [appRole, []],
    [readerRole, ["--read-only"]],
  ] as const) {
    const printed = await cli(["grants", role, ...flags]);
    expect(printed.code).toBe(0);
    await pool.query(printed.stdout);
  }
});

afterAll(async () => {
  await dropSchema(pool, schema);
  for (const role of [appRole, readerRole, strangerRole]) {
    await pool.query(`DROP OWNED BY "${role}"`).catch(() => {});
    await pool.query(`DROP ROLE IF EXISTS "${role}"`);
  }
  await pool.end();
});

describe("least privilege", () => {
  let node: Pawl;

  afterAll(async () => {
    await node?.stop({ graceMs: 2_000 }).catch(() => {});
    await node?.close();
  });

  it("runs the whole job lifecycle as the application role", async () => {
    node = testPawl(schema, {
      connectionString: urlAs(appRole),
      succeededRetentionMs: 2_000, // long enough for waitFor to read the outcomes, then pruned
      pruneIntervalMs: 200,
      recurringCheckIntervalMs: 200,
    });
    let flaky = 0;
    node.register("ok", async () => "done");
    node.register(
      "flaky",
      async () => {
        if (++flaky === 1) throw new Error("once");
      },
      { retry: { baseMs: 10, factor: 1, jitter: 0 } },
    );
    node.register(
      "doomed",
      async () => {
        throw new Error("always");
      },
      { maxAttempts: 1 },
    );
    node.register("later", async () => {});
    node.register("paused.q", async () => {}, { queue: "held" });
    node.register("tick", async () => {});
    await node.start();

    const ok = await node.enqueue("ok", {});
    const retried = await node.enqueue("flaky", {});
    const dead = await node.enqueue("doomed", {});
    const canceled = await node.enqueue("later", {}, { delayMs: 60_000 });
    expect((await node.cancel(canceled.id)).outcome).toBe("canceled");
    const chain = await node.chain([{ type: "ok" }, { type: "ok" }]);
    // Pausing a queue creates triggers (DDL): the owner does it; the application role is told so.
    const refused = await node.pauseQueue("held").then(
      () => null,
      (e: unknown) => e as PawlError,
    );
    expect(refused?.code).toBe("INSUFFICIENT_PRIVILEGE");
    expect(refused?.message).toContain("owner");
    const owner = testPawl(schema);
    await owner.pauseQueue("held");
    const held = await node.enqueue("paused.q", {});
    expect((await node.getJob(held.id))?.status).toBe("PAUSED");
    await owner.resumeQueue("held");
    await owner.close();
    const fired = node.events.next("recurring:fired", ({ name }) => name === "tick", 20_000);
    const pruned = node.events.next("prune:done", (p) => p.succeeded > 0, 20_000);
    await node.schedule("tick", "* * * * * *", {});

    expect((await node.waitFor(ok, { timeoutMs: 20_000 })).status).toBe("SUCCEEDED");
    expect((await node.waitFor(retried, { timeoutMs: 20_000 })).status).toBe("SUCCEEDED");
    expect((await node.waitFor(dead, { timeoutMs: 20_000 })).status).toBe("DEAD");
    for (const id of chain.jobIds)
      expect((await node.waitFor(id, { timeoutMs: 20_000 })).status).toBe("SUCCEEDED");
    expect((await node.waitFor(held, { timeoutMs: 20_000 })).status).toBe("SUCCEEDED");
    const fire = await fired;
    expect((await node.waitFor(fire.jobId, { timeoutMs: 20_000 })).status).toBe("SUCCEEDED");
    await node.unschedule("tick");
    await pruned;
    expect(await node.dlq.retry(dead.id)).toBeTruthy();
  }, 90_000);

  it("makes and drops history partitions as the application role; the reader may not", async () => {
    const asApp = new pg.Pool({ connectionString: urlAs(appRole), max: 1 });
    const asReader = new pg.Pool({ connectionString: urlAs(readerRole), max: 1 });
    try {
      const app = new JobStore(asApp, schema);
      const start = new Date(Date.UTC(2030, 0, 1));
      const end = new Date(Date.UTC(2030, 0, 1, 2));
      await app.addHistoryPartition(start, end);
      const listed = await app.listHistoryPartitions();
      expect(listed.partitions).toContainEqual({ start, end });
      // The owner made it (SECURITY DEFINER): the application role cannot alter it by hand.
      const { rows } = await pool.query<{ owner: string }>(
        `SELECT pg_get_userbyid(relowner) AS owner FROM pg_class WHERE oid = $1::regclass`,
        [`"${schema}".scheduler_job_finished_20300101t000000`],
      );
      expect(rows[0]!.owner).not.toBe(appRole);
      const reader = new JobStore(asReader, schema);
      const refused = await reader.dropHistoryPartition(start).then(
        () => null,
        (e: unknown) => e as { code?: string },
      );
      expect(refused?.code).toBe("42501");
      expect(await app.dropHistoryPartition(start)).toBe(0);
      expect((await app.listHistoryPartitions()).partitions).not.toContainEqual({ start, end });
    } finally {
      await asApp.end();
      await asReader.end();
    }
  });

  it("serves the CLI's reads as the read-only role", async () => {
    for (const argv of [["jobs"], ["nodes"], ["stats"], ["keys"], ["dlq", "list"], ["schedules"]]) {
      const r = await cli(argv, urlAs(readerRole));
      expect(r.code, `${argv.join(" ")}: ${r.stderr}`).toBe(0);
    }
  });

  it("refuses what needs more with INSUFFICIENT_PRIVILEGE, saying what to run", async () => {
    const app = testPawl(schema, { connectionString: urlAs(appRole) });
    const error = await app.migrate().then(
      () => null,
      (e: unknown) => e,
    );
    await app.close();
    expect(error).toBeInstanceOf(PawlError);
    expect((error as PawlError).code).toBe("INSUFFICIENT_PRIVILEGE");
    expect((error as PawlError).message).toContain("pawl migrate");

    const stranger = testPawl(schema, { connectionString: urlAs(strangerRole) });
    const refused = await stranger.start().then(
      () => null,
      (e: unknown) => e,
    );
    await stranger.close();
    expect((refused as PawlError).code).toBe("INSUFFICIENT_PRIVILEGE");
    expect((refused as PawlError).message).toContain("pawl grants");
  });
});
