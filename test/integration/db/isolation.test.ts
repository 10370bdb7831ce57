/**
 * pawl pins read committed whatever the role's or database's default_transaction_isolation says (here set
 * by a connection option, as `ALTER ROLE ... SET` would): its transactions take a lock and then read what
 * the lock guards, and its single statements re-read rows others changed. Under repeatable read or
 * serializable the first would read a snapshot older than the lock, the second fail with serialization
 * errors.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPool } from "../../../src/db/pool.js";
import { silentLogger } from "../../../src/core/logger.js";
import { tablesFor } from "../../../src/db/sql.js";
import { acquirePermit } from "../../../src/store/cluster/permits.js";
import { databaseUrl } from "../../helpers/db.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";
import { jobEvent } from "../../helpers/events.js";
import { PawlError } from "../../../src/index.js";
import { insertRunning } from "../../helpers/cluster.js";
import { until } from "../../processes/harness.js";

let schema: string;
let raw: Awaited<ReturnType<typeof setupSchema>>["pool"];
let cleanup: () => Promise<void>;

beforeAll(async () => {
  ({ schema, pool: raw, cleanup } = await setupSchema("isolation"));
});
afterAll(async () => cleanup());

/** The test database with `default_transaction_isolation` set for every session, as a role default would. */
function urlWithDefault(level: string): string {
  const url = new URL(databaseUrl);
  // libpq's options: a backslash keeps the space of "repeatable read" inside the one -c value.
  url.searchParams.set("options", `-c default_transaction_isolation=${level.replace(" ", "\\ ")}`);
  return url.toString();
}

describe.each(["repeatable read", "serializable"])("with default_transaction_isolation %s", (level) => {
  it("runs a node on pawl's own pool: keyed jobs under their limit succeed", async () => {
    const node = testPawl(schema, {
      connectionString: urlWithDefault(level),
      nodeId: `iso-${level.replace(" ", "-")}`,
    });
    const type = `iso.${level.replace(" ", "-")}`;
    let running = 0;
    let most = 0;
    node.register(type, async () => {
      most = Math.max(most, ++running);
      await Promise.resolve();
      running--;
    });
    try {
      await node.start();
      const done = jobEvent(node.events, "job:succeeded");
      const jobs = await node.enqueueMany(
        Array.from({ length: 6 }, () => ({
          type,
          payload: {},
          concurrencyKey: "k",
          concurrencyLimit: 1,
        })),
      );
      await done.forAll(jobs.map((j) => j.id));
      expect(most).toBe(1);
    } finally {
      await node.close();
    }
  });

  it("refuses to start a node whose pool cannot pin it (no session settings), saying what to set", async () => {
    const node = testPawl(schema, { connectionString: urlWithDefault(level), preparedStatements: false });
    try {
      const refused = await node.start().then(
        () => null,
        (e: unknown) => e as PawlError,
      );
      expect(refused).toBeInstanceOf(PawlError);
      expect(refused?.code).toBe("INVALID_CONFIG");
      expect(refused?.message).toContain(`"${level}"`);
      expect(refused?.message).toContain("SET default_transaction_isolation = 'read committed'");
    } finally {
      await node.close();
    }
  });

  it("pins pawl's own connections to read committed", async () => {
    const pool = createPool(urlWithDefault(level), 1, silentLogger);
    try {
      const { rows } = await pool.query<{ level: string }>(
        "SELECT current_setting('transaction_isolation') AS level",
      );
      expect(rows[0]!.level).toBe("read committed");
    } finally {
      await pool.end();
    }
  });

  it("keeps a permit's capacity when the acquirer waited on the lock (no session settings, as behind a pooler)", async () => {
    const app = `pawl-iso-${level.replace(" ", "-")}-${process.pid}`;
    // A pooler's connections carry no session settings: only the transaction's own BEGIN pins the level.
    const pool = createPool(urlWithDefault(level), 1, silentLogger, app, { sessionSettings: false });
    const t = tablesFor(schema);
    const resource = `r-${level.replace(" ", "-")}`;
    const [holderJob, waiterJob] = await insertRunning(raw, schema, "n0", 2);
    const holder = await raw.connect();
    try {
      await holder.query("BEGIN");
      await holder.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`pawl.permit.${schema}.${resource}`]);
      const waiting = acquirePermit(pool, t, resource, waiterJob!, "n0", 1);
      // The acquirer's transaction has begun and waits on the resource's lock.
      await until(
        async () => {
          const { rowCount } = await raw.query(
            `SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`,
            [app],
          );
          return (rowCount ?? 0) > 0;
        },
        10_000,
        "the acquirer waiting on the lock",
      );
      await holder.query(
        `INSERT INTO "${schema}".scheduler_resource_permit (resource, job_id, node_id) VALUES ($1, $2, 'n0')`,
        [resource, holderJob],
      );
      await holder.query("COMMIT");
      // Capacity 1, held by the job that committed first: the waiter must see that row.
      expect(await waiting).toBe(false);
      const { rows } = await raw.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM "${schema}".scheduler_resource_permit WHERE resource = $1`,
        [resource],
      );
      expect(rows[0]!.n).toBe(1);
    } finally {
      holder.release();
      await pool.end();
    }
  });
});
