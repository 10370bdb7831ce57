/**
 * Compatibility between releases (issue 25): start() checks the schema against this release's
 * migrations, and migration 0012 turns rows stored as RUNNING (by nodes from before 0008) into leases the
 * orphan sweep recovers, and refuses new ones.
 */
import { afterAll, describe, expect, it } from "vitest";
import { SchemaVersionError } from "../../../src/index.js";
import { dropSchema, testPool, uniqueSchema } from "../../helpers/db.js";
import { testPawl } from "../../helpers/pawl.js";
import { loadMigrations } from "../../../src/store/migrations/migrate.js";

/**
 * The schema's version once 0012's row is deleted: the newest other migration this tree has (0011 while
 * 0012 was the newest; a later one, such as 0013, once there is one).
 */
const without12 = Math.max(
  ...loadMigrations()
    .map((m) => m.version)
    .filter((v) => v !== 12),
);
/** The newest migration of this tree: the version this release requires. */
const newest = Math.max(...loadMigrations().map((m) => m.version));

const pool = testPool(2);
const schemas: string[] = [];
afterAll(async () => {
  for (const s of schemas) await dropSchema(pool, s);
  await pool.end();
});

async function migrated(prefix: string): Promise<string> {
  const schema = uniqueSchema(prefix);
  schemas.push(schema);
  const p = testPawl(schema);
  await p.migrate();
  await p.close();
  return schema;
}

/** Start's refusal, or null when it started (then stopped). */
async function startError(schema: string): Promise<SchemaVersionError | null> {
  const node = testPawl(schema);
  try {
    await node.start();
    await node.stop({ graceMs: 1_000 });
    return null;
  } catch (error) {
    return error as SchemaVersionError;
  } finally {
    await node.close();
  }
}

describe("the schema version check at start()", () => {
  it("refuses a schema that lacks this release's migrations, naming both versions and the command", async () => {
    const schema = await migrated("sv_behind");
    await pool.query(`DELETE FROM "${schema}".pawl_migrations WHERE version = 12`);
    const error = await startError(schema);
    expect(error).toBeInstanceOf(SchemaVersionError);
    expect(error?.code).toBe("SCHEMA_OUTDATED");
    expect(error?.schemaVersion).toBe(without12);
    expect(error?.requiredVersion).toBe(newest);
    expect(error?.message).toContain(`pawl migrate --schema ${schema}`);
    expect(error?.message).toContain("0012_release_compatibility.sql");
  });

  it("runs beside a newer, compatible migration and refuses a breaking one", async () => {
    const schema = await migrated("sv_ahead");
    await pool.query(
      `INSERT INTO "${schema}".pawl_migrations (version, name) VALUES (98, '0098_future.sql')`,
    );
    expect(await startError(schema)).toBeNull();
    await pool.query(
      `INSERT INTO "${schema}".pawl_migrations (version, name, breaking) VALUES (99, '0099_future.sql', true)`,
    );
    const error = await startError(schema);
    expect(error?.code).toBe("SCHEMA_INCOMPATIBLE");
    expect(error?.message).toMatch(/migration 99 is incompatible with older releases: deploy/);
  });
});

describe("a running node and a newer release's breaking migration", () => {
  it("stops itself cleanly at its next heartbeat, saying why", async () => {
    const schema = await migrated("sv_running_breaking");
    const node = testPawl(schema, { heartbeatIntervalMs: 200, deadNodeThresholdMs: 3_000 });
    node.register("work", async () => {});
    const errors: string[] = [];
    node.events.on("error", ({ where, error }) => errors.push(`${where}: ${error.message}`));
    await node.start();
    const stopped = node.events.next("node:stopped", undefined, 20_000);
    await pool.query(
      `INSERT INTO "${schema}".pawl_migrations (version, name, breaking) VALUES (99, '0099_future.sql', true)`,
    );
    await stopped;
    await node.close();
    expect(errors).toEqual([expect.stringMatching(/^schema check: schema migration 99 is incompatible/)]);
    // It left the cluster as a graceful stop does: its node row is gone.
    const rows = await pool.query(`SELECT node_id FROM "${schema}".scheduler_node`);
    expect(rows.rows).toEqual([]);
  }, 30_000);
});

describe("migration 0012 and rows stored as RUNNING", () => {
  it("turns them into leases recovered once their node is dead, and refuses new ones", async () => {
    const schema = await migrated("sv_running");
    const q = `"${schema}"`;
    // The schema as it was at 0011, with a row a pre-0008 node claimed (status RUNNING) and then died.
    await pool.query(`DELETE FROM ${q}.pawl_migrations WHERE version = 12`);
    await pool.query(`ALTER TABLE ${q}.pawl_migrations DROP COLUMN breaking`);
    await pool.query(`ALTER TABLE ${q}.scheduler_job_queue DROP CONSTRAINT scheduler_job_queue_status_check`);
    await pool.query(
      `ALTER TABLE ${q}.scheduler_job_queue ADD CONSTRAINT scheduler_job_queue_status_check
         CHECK (status IN ('PENDING', 'RUNNING', 'SUCCEEDED', 'CANCELED', 'DEAD', 'WAITING', 'PAUSED')) NOT VALID`,
    );
    const inserted = await pool.query<{ id: string }>(
      `INSERT INTO ${q}.scheduler_job_queue (type, payload, status, picked_by, picked_at, attempts)
       VALUES ('old.work', '{}', 'RUNNING', 'pre-0008-node', now() - interval '1 hour', 1) RETURNING id`,
    );
    const id = inserted.rows[0]!.id;

    const node = testPawl(schema, { deadNodeThresholdMs: 3_000, orphanSweepIntervalMs: 200 });
    try {
      expect((await node.migrate()).applied).toEqual([12]);
      const row = await pool.query(`SELECT status, picked_by FROM ${q}.scheduler_job_queue WHERE id = $1`, [
        id,
      ]);
      expect(row.rows[0]).toEqual({ status: "PENDING", picked_by: "pre-0008-node" });
      // A pre-0008 node's claim (status = 'RUNNING') now fails instead of running a job twice.
      await expect(
        pool.query(`UPDATE ${q}.scheduler_job_queue SET status = 'RUNNING' WHERE id = $1`, [id]),
      ).rejects.toThrow(/scheduler_job_queue_status_check/);

      node.register("old.work", async () => "rescued");
      const done = node.events.next("job:succeeded", ({ job }) => job.id === id, 30_000);
      await node.start();
      await done;
    } finally {
      await node.stop({ graceMs: 1_000 }).catch(() => {});
      await node.close();
    }
    const end = await pool.query(`SELECT status, attempts FROM ${q}.scheduler_job_all WHERE id = $1`, [id]);
    expect(end.rows[0]).toEqual({ status: "SUCCEEDED", attempts: 2 });
  }, 60_000);
});
