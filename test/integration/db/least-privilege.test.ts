/**
 * pawl under a role that cannot change the schema (docs/deployment.md#roles): the owner migrates and runs
 * what `pawl grants <role>` prints; a node logged in as the application role then runs the whole job
 * lifecycle (success, a retry, a dead job, a cancel, a chain, a queue the owner paused, a recurring fire,
 * pruning, a dead letter retry), makes and drops history partitions through the owner's functions,
 * and the CLI's reads run as a read-only role. What needs more (migrate as the application role, any role
 * never granted) fails with INSUFFICIENT_PRIVILEGE saying what to run. The application role cannot write
 * the migration record; an enqueue-only role enqueues and does nothing else; a write the reader attempts
 * (a console action) names the grant it lacks. EXECUTE is revoked from PUBLIC on the schema's functions
 * throughout, as a hardened database has it: every role works on what its grants name.
 *
 * The schema's name is 63 characters, PostgreSQL's identifier limit and the longest the docs allow: every
 * identifier pawl derives from it (statement names, partition names, the wakeup channel) must stay within
 * 63 bytes and its own, and nothing may be printed to the host's stderr.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "node:crypto";
import pg from "pg";
import { PawlError, PrivilegeError, type Pawl } from "../../../src/index.js";
import { JobStore } from "../../../src/store/postgres-job-store.js";
import { main } from "../../../src/cli/main.js";
import { databaseUrl, dropSchema, testPool, uniqueSchema } from "../../helpers/db.js";
import { testPawl } from "../../helpers/pawl.js";

// uniqueSchema adds "_" and 8 hex digits: 54 + 9 = 63 characters.
const schema = uniqueSchema("least_priv_".padEnd(54, "x"));
const suffix = randomBytes(3).toString("hex");
const appRole = `pawl_app_${suffix}`;
const readerRole = `pawl_reader_${suffix}`;
const strangerRole = `pawl_none_${suffix}`;
const enqueueRole = `pawl_enq_${suffix}`;
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

/**
 * Everything written to stderr (directly or through console.error / console.warn) until `stop()`, which
 * restores the originals and returns what was written.
 */
function captureStderr(): { stop: () => string[] } {
  const seen: string[] = [];
  const write = process.stderr.write.bind(process.stderr);
  const { error, warn } = console;
  process.stderr.write = ((chunk: unknown) => {
    seen.push(String(chunk));
    return true;
  }) as typeof process.stderr.write;
  console.error = (...args: unknown[]) => void seen.push(args.map(String).join(" "));
  console.warn = (...args: unknown[]) => void seen.push(args.map(String).join(" "));
  return {
    stop: () => {
      process.stderr.write = write;
      console.error = error;
      console.warn = warn;
      return seen;
    },
  };
}

beforeAll(async () => {
  for (const role of [appRole, readerRole, strangerRole, enqueueRole])
    await pool.query(`CREATE ROLE "${role}" LOGIN`);
  const owner = testPawl(schema);
  await owner.migrate();
  await owner.close();
  await pool.query(`REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA "${schema}" FROM PUBLIC`);
  // The owner runs what `pawl grants` prints.
  for (const [role, flags] of [
    [appRole, []],
    [readerRole, ["--read-only"]],
    [enqueueRole, ["--enqueue-only"]],
  ] as const) {
    const printed = await cli(["grants", role, ...flags]);
    expect(printed.code).toBe(0);
    await pool.query(printed.stdout);
  }
});

afterAll(async () => {
  await dropSchema(pool, schema);
  for (const role of [appRole, readerRole, strangerRole, enqueueRole]) {
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

  it("runs the whole job lifecycle as the application role, printing nothing", async () => {
    expect(schema).toHaveLength(63);
    const printed = captureStderr();
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
    expect(printed.stop()).toEqual([]);
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
    const job = await pool.query<{ id: string }>(
      `INSERT INTO "${schema}".scheduler_job_queue (type, concurrency_key, concurrency_limit) VALUES ('read.me', 'k', 2) RETURNING id`,
    );
    for (const argv of [
      ["jobs"],
      ["nodes"],
      ["stats"],
      ["keys"],
      ["dlq", "list"],
      ["schedules"],
      ["doctor"],
      ["explain", job.rows[0]!.id],
    ]) {
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

describe("tightened grants", () => {
  /** `fn` as `role` on a pool of its own; returns the SQLSTATE it failed with, or null. */
  async function sqlstateAs(role: string, sql: string): Promise<string | null> {
    const asRole = new pg.Pool({ connectionString: urlAs(role), max: 1 });
    try {
      await asRole.query(sql);
      return null;
    } catch (error) {
      return (error as { code?: string }).code ?? "?";
    } finally {
      await asRole.end();
    }
  }

  it("keeps the migration record the owner's: the application role reads it and cannot write it", async () => {
    const t = `"${schema}".pawl_migrations`;
    expect(await sqlstateAs(appRole, `SELECT max(version) FROM ${t}`)).toBeNull();
    expect(await sqlstateAs(appRole, `INSERT INTO ${t} (version, name) VALUES (9999, 'forged')`)).toBe(
      "42501",
    );
    expect(await sqlstateAs(appRole, `UPDATE ${t} SET name = name`)).toBe("42501");
    expect(await sqlstateAs(appRole, `DELETE FROM ${t} WHERE version = 9999`)).toBe("42501");
  });

  it("lets an enqueue-only role enqueue every way, and nothing else", async () => {
    const client = testPawl(schema, { connectionString: urlAs(enqueueRole) });
    const owner = testPawl(schema);
    try {
      const plain = await client.enqueue("enq.plain", { n: 1 });
      const first = await client.enqueue("enq.unique", {}, { uniqueKey: "u1", delayMs: 60_000 });
      const again = await client.enqueue("enq.unique", {}, { uniqueKey: "u1" });
      expect(again.id).toBe(first.id);
      const keyed = await client.enqueue("enq.keyed", {}, { concurrencyKey: "tenant", concurrencyLimit: 1 });
      const many = await client.enqueueMany([
        { type: "enq.many", payload: {} },
        { type: "enq.many", payload: {} },
      ]);
      expect(many).toHaveLength(2);
      // A paused queue's trigger turns the new row PAUSED within the enqueue.
      await owner.pauseQueue("enq-held");
      const held = await client.enqueue("enq.held", {}, { queue: "enq-held" });
      const heldStatus = await pool.query<{ status: string }>(
        `SELECT status FROM "${schema}".scheduler_job_queue WHERE id = $1`,
        [held.id],
      );
      expect(heldStatus.rows[0]!.status).toBe("PAUSED");
      await owner.resumeQueue("enq-held");
      // The SQL function, as a database trigger or another service would call it.
      expect(
        await sqlstateAs(
          enqueueRole,
          `SELECT * FROM "${schema}".enqueue('enq.sql', '{"a":1}', '{"priority":"high"}')`,
        ),
      ).toBeNull();
      const { rows } = await pool.query<{ id: string; status: string }>(
        `SELECT id::text, status FROM "${schema}".scheduler_job_all WHERE type LIKE 'enq.%' ORDER BY id`,
      );
      expect(rows.map((r) => r.status)).toEqual(Array(7).fill("PENDING"));
      expect(rows.map((r) => r.id).slice(0, 3)).toEqual([plain.id, first.id, keyed.id]);
      expect(rows[5]!.id).toBe(held.id);

      // Nothing else: no claim, no cancel, no delete, no reading the cluster or the history.
      const s = `"${schema}"`;
      expect(await sqlstateAs(enqueueRole, `UPDATE ${s}.scheduler_job_queue SET picked_by = 'x'`)).toBe(
        "42501",
      );
      expect(await sqlstateAs(enqueueRole, `DELETE FROM ${s}.scheduler_job_queue`)).toBe("42501");
      expect(await sqlstateAs(enqueueRole, `SELECT * FROM ${s}.scheduler_node`)).toBe("42501");
      expect(await sqlstateAs(enqueueRole, `SELECT * FROM ${s}.scheduler_job_finished`)).toBe("42501");
      expect(
        await sqlstateAs(enqueueRole, `SELECT * FROM ${s}.pawl_claim_keyed(1, 'x', '{}', 0, NULL, NULL)`),
      ).toBe("42501");
    } finally {
      await client.close();
      await owner.close();
    }
  });

  it("refuses a console action of the read-only role with INSUFFICIENT_PRIVILEGE naming the grant", async () => {
    const owner = testPawl(schema);
    const reader = testPawl(schema, { connectionString: urlAs(readerRole) });
    try {
      const job = await owner.enqueue("console.target", {}, { delayMs: 60_000 });
      const refused = await reader.cancel(job.id).then(
        () => null,
        (e: unknown) => e,
      );
      expect(refused).toBeInstanceOf(PrivilegeError);
      const e = refused as PrivilegeError;
      expect(e.code).toBe("INSUFFICIENT_PRIVILEGE");
      expect(e.grant).toBe(
        `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "${schema}" TO "${readerRole}";`,
      );
      expect(e.message).toContain("cancel");
      expect(e.message).toContain(e.grant!);
      const purge = await reader.dlq.purge().then(
        () => null,
        (x: unknown) => x as PrivilegeError,
      );
      expect(purge?.grant).toBe(e.grant);
      expect((await owner.getJob(job.id))?.status).toBe("PENDING");
    } finally {
      await reader.close();
      await owner.close();
    }
  });
});
