/**
 * The coordinator contract against real PostgreSQL LISTEN/NOTIFY, plus what only this transport has: the
 * transactional publish path, and channel names that need quoting. The fault is `pg_terminate_backend` on
 * the listener's connection, found by the application_name the coordinator sets; it touches only this
 * file's own connections, so parallel test files are unaffected.
 */
import { afterAll, describe, expect, it } from "vitest";
import { createCoordinator, postgresChannelName, type Coordinator } from "../../coordinators/index.js";
import { databaseUrl, testPool, uniqueSchema } from "../helpers/db.js";
import { nextHint, record } from "./contract-helpers.js";
import { describeCoordinatorContract, trackNodeId } from "./coordinator-contract.js";

const pool = testPool();
afterAll(() => pool.end());

const reconnect = { initialDelayMs: 50, maxDelayMs: 500 };

async function create(
  schema: string,
  nodeId: string,
  coalesceMs?: number,
  spec = "postgres",
): Promise<Coordinator> {
  const node = await createCoordinator(spec, {
    nodeId,
    connectionString: databaseUrl,
    schema,
    coalesceMs,
    reconnect,
  });
  return trackNodeId(nodeId, node);
}

describeCoordinatorContract("postgres", {
  async scope() {
    // Mixed case on purpose: the channel must survive LISTEN's identifier quoting and pg_notify's exact match.
    const schema = uniqueSchema("Contract");
    return {
      create: (nodeId, options) => create(schema, nodeId, options?.coalesceMs),
      publishRaw: async (payload) => {
        await pool.query("SELECT pg_notify($1, $2)", [postgresChannelName(schema), payload]);
      },
    };
  },
  unreachable: (nodeId) => create(uniqueSchema(), nodeId, undefined, "postgres://postgres@127.0.0.1:1/test"),
  async interrupt(nodeIds) {
    const names = nodeIds.map((nodeId) => `pawl-wakeup-${nodeId}`);
    const { rowCount } = await pool.query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = ANY($1)",
      [names],
    );
    expect(rowCount).toBe(nodeIds.length);
  },
  recoveryTimeoutMs: 15_000,
});

describe("postgres coordinator specifics", () => {
  it("inTransaction: a rolled-back enqueue wakes nobody, a committed one wakes the others", async () => {
    const schema = uniqueSchema("tx");
    const [a, b] = [await create(schema, "tx-a"), await create(schema, "tx-b")];
    try {
      await Promise.all([a.start(), b.start()]);
      const hints = record(b);
      const client = await pool.connect();
      try {
        const rolledBack = a.inTransaction?.({ priority: 1, source: "tx-a", target: "rolled-back" });
        const committed = a.inTransaction?.({ priority: 2, source: "tx-a", target: "committed" });
        expect(rolledBack?.text).toBe("SELECT pg_notify($1, $2)");
        const heard = nextHint(b, (h) => h.target === "committed");
        await client.query("BEGIN");
        await client.query(rolledBack!.text, rolledBack!.values);
        await client.query("ROLLBACK");
        await client.query("BEGIN");
        await client.query(committed!.text, committed!.values);
        await client.query("COMMIT");
        await heard;
      } finally {
        client.release();
      }
      // Commits are delivered in order, so had the rolled-back hint gone out it would be here already.
      expect(hints.map((h) => h.target)).toEqual(["committed"]);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it("shortens channel names beyond PostgreSQL's 63-byte identifier limit, keeping them distinct", () => {
    const long = "s".repeat(60);
    expect(postgresChannelName("pawl")).toBe("pawl_pawl_wakeup");
    expect(Buffer.byteLength(postgresChannelName(long))).toBeLessThanOrEqual(63);
    expect(postgresChannelName(`${long}a`)).not.toBe(postgresChannelName(`${long}b`));
  });

  it("ignores a NOTIFY without payload on its channel", async () => {
    const schema = uniqueSchema("bare");
    const node = await create(schema, "bare-a");
    try {
      await node.start();
      const malformed = new Promise((resolve) => node.on("malformed", resolve));
      await pool.query(`NOTIFY "${postgresChannelName(schema)}"`);
      await malformed;
      expect(node.status().malformed).toBe(1);
    } finally {
      await node.close();
    }
  });
});
