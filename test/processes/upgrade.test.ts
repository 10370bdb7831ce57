/**
 * A rolling upgrade from the previous release (scripts/previous-release.txt) under load. The previous
 * release's tree is taken from git history (`git archive`, into a temp directory with this checkout's
 * node_modules linked in) and its own node process (its test/processes/node-process.ts, run from its own
 * sources by tsx) migrates a schema with its migrations and runs jobs. Then a node of this tree migrates
 * the same schema to the newest version while the old node keeps claiming, joins, and the old node is
 * killed with kill -9. The ledger must be exact: every job SUCCEEDED, each success recorded once (a
 * trigger on the transition), nothing left PENDING or leased, and the old node's in-flight jobs rescued by
 * the orphan sweep.
 */
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import type { Pawl } from "../../src/index.js";
import { databaseUrl, dropSchema, testPool, uniqueSchema } from "../helpers/db.js";
import { testPawl } from "../helpers/pawl.js";
import { fastCluster, installRecorders, insertWork, statusCounts, until } from "./harness.js";
import { previousRelease, previousTree } from "../../scripts/lib/previous-release.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const previous = previousRelease();
const tsx = join(root, "node_modules", ".bin", "tsx");
const schema = uniqueSchema("upgrade");
const pool = testPool(4);

/** Runs a script of the old tree's own sources with tsx; resolves with its stdout. */
function runOld(dir: string, file: string, env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(tsx, [file], {
      cwd: dir,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString()));
    child.stderr.on("data", (c: Buffer) => (err += c.toString()));
    child.once("exit", (code) =>
      code === 0 ? resolve(out) : reject(new Error(`${file} exited ${code}: ${err}`)),
    );
  });
}

/** The old release's node process: resolves once it printed `ready`, with its pid and exit promise. */
function startOldNode(dir: string, nodeId: string) {
  const child = spawn(tsx, [join(dir, "test", "processes", "node-process.ts")], {
    cwd: dir,
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      PAWL_SCHEMA: schema,
      PAWL_NODE_ID: nodeId,
      NODE_OPTIONS_JSON: JSON.stringify(fastCluster),
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const ready = new Promise<number>((resolve, reject) => {
    let buffer = "";
    child.stdout.on("data", (c: Buffer) => {
      buffer += c.toString();
      const m = /"event":"ready","pid":(\d+)/.exec(buffer);
      if (m) resolve(Number(m[1]));
    });
    void exited.then(() => reject(new Error(`old node exited before ready: ${stderr.slice(-2000)}`)));
  });
  return { ready, exited, stderr: () => stderr };
}

describe("a rolling upgrade from the previous release", () => {
  let node: Pawl | undefined;
  afterAll(async () => {
    await node?.stop({ graceMs: 2_000 }).catch(() => {});
    await node?.close();
    await dropSchema(pool, schema);
    await pool.end();
  });

  it("loses nothing, runs nothing twice, leaves nothing stuck, and rescues the killed old node's jobs", async () => {
    const dir = previousTree();
    // The old release migrates the schema with its own migrations (what was deployed before).
    const migrateScript = join(dir, "migrate-for-upgrade-test.ts");
    writeFileSync(
      migrateScript,
      `import { createPawl } from "./src/index.js";\n` +
        `const p = createPawl({ connectionString: process.env.DATABASE_URL, schema: process.env.PAWL_SCHEMA });\n` +
        `const r = await p.migrate();\nconsole.log(JSON.stringify(r));\nawait p.close();\n`,
    );
    const migratedOld = JSON.parse(
      await runOld(dir, migrateScript, { DATABASE_URL: databaseUrl, PAWL_SCHEMA: schema }),
    ) as {
      version: number;
    };
    await installRecorders(pool, schema);

    const total = 3_000;
    await insertWork(pool, schema, 1_000, 5);
    const old = startOldNode(dir, "old-release-node");
    const oldPid = await old.ready;
    const executedBy = async (nodeId: string) =>
      (
        await pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM "${schema}".executions WHERE node_id = $1`,
          [nodeId],
        )
      ).rows[0]!.n;
    await until(
      async () => (await executedBy("old-release-node")) >= 100,
      60_000,
      "the old node to run jobs",
    );

    // The new release migrates under load (0012 at least), then joins; more work arrives meanwhile.
    node = testPawl(schema, { ...fastCluster, nodeId: "new-release-node", queues: undefined });
    node.register("work", async (payload: { sleepMs?: number }, ctx) => {
      if (payload.sleepMs) await new Promise((r) => setTimeout(r, payload.sleepMs));
      await pool.query(`INSERT INTO "${schema}".executions (job_id, node_id, attempt) VALUES ($1, $2, $3)`, [
        ctx.jobId,
        ctx.nodeId,
        ctx.attempt,
      ]);
    });
    const applied = await node.migrate();
    expect(applied.version).toBeGreaterThan(migratedOld.version);
    expect(applied.applied).toContain(12);
    await insertWork(pool, schema, 1_000, 5);
    await node.start();
    await insertWork(pool, schema, 1_000, 5);
    await until(
      async () => (await executedBy("new-release-node")) >= 100,
      60_000,
      "the new node to run jobs",
    );
    expect(await executedBy("old-release-node")).toBeGreaterThan(100);

    // kill -9 of the old node while it holds leases.
    const held = await pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM "${schema}".scheduler_job_queue WHERE picked_by = 'old-release-node'`,
    );
    process.kill(oldPid, "SIGKILL");
    await old.exited;

    await until(
      async () => (await statusCounts(pool, schema)).SUCCEEDED === total,
      120_000,
      `all ${total} jobs SUCCEEDED`,
      250,
    );
    const counts = await statusCounts(pool, schema);
    expect(counts).toEqual({ SUCCEEDED: total });
    const twice = await pool.query(
      `SELECT job_id FROM "${schema}".successes GROUP BY job_id HAVING count(*) > 1`,
    );
    expect(twice.rows).toEqual([]);
    const successes = await pool.query<{ n: number }>(
      `SELECT count(DISTINCT job_id)::int AS n FROM "${schema}".successes`,
    );
    expect(successes.rows[0]!.n).toBe(total);
    const leased = await pool.query(`SELECT id FROM "${schema}".scheduler_job_queue`);
    expect(leased.rows).toEqual([]);
    // The old node's leases at the kill were rescued (by the sweep) and run by the new node.
    const rescued = await pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM "${schema}".scheduler_job_finished
        WHERE errors::text LIKE '%node old-release-node lost%'`,
    );
    console.log(
      `upgrade from ${previous}: old node held ${held.rows[0]!.n} leases at kill -9, ${rescued.rows[0]!.n} rescued; ` +
        `executions old ${await executedBy("old-release-node")}, new ${await executedBy("new-release-node")}`,
    );
    if (held.rows[0]!.n > 0) expect(rescued.rows[0]!.n).toBeGreaterThan(0);
  }, 240_000);
});
