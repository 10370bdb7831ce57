/**
 * One process per node id, the container case: the other process reports the same host name and the same
 * pid as this one (both pid 1 in their containers), holds the node id's session lock and beats. A start
 * under that id must refuse with NodeIdInUseError and leave the other's running jobs alone; once that
 * process's session ends and its heartbeat stops, the same start takes the id over at once and rescues
 * them.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hostname } from "node:os";
import type pg from "pg";
import { NodeIdInUseError, type Pawl } from "../../../src/index.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";
import { insertNode, insertRunning, jobStates } from "../../helpers/cluster.js";
import { until } from "../../processes/harness.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
const nodes: Pawl[] = [];

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("node_id"));
});
afterAll(async () => {
  await Promise.all(nodes.map((n) => n.close()));
  await cleanup();
});

/** The other process: a session holding the id's lock, and a heartbeat it keeps moving. */
async function otherProcess(nodeId: string) {
  const session = await pool.connect();
  await session.query("SELECT pg_advisory_lock(hashtext($1), hashtext($2))", [`pawl.node.${schema}`, nodeId]);
  const beat = () =>
    insertNode(pool, schema, nodeId, 0, {
      host: hostname(),
      pid: process.pid,
      instance: "other",
      idLock: true,
    });
  await beat();
  const timer = setInterval(() => void beat().catch(() => {}), 100);
  return {
    /** The process dies: its heartbeat stops and the server ends its session (the lock goes with it). */
    async die() {
      clearInterval(timer);
      await session.query("SELECT pg_advisory_unlock_all()");
      session.release();
    },
  };
}

describe("a second process under a live node id", () => {
  it("is refused with NodeIdInUseError, even on the same host name and pid, and rescues nothing", async () => {
    const other = await otherProcess("twin");
    const held = await insertRunning(pool, schema, "twin", 3);
    try {
      const node = testPawl(schema, {
        nodeId: "twin",
        deadNodeThresholdMs: 30_000,
        heartbeatIntervalMs: 500,
      });
      nodes.push(node);
      const refused = await node.start().then(
        () => null,
        (e: unknown) => e,
      );
      expect(refused).toBeInstanceOf(NodeIdInUseError);
      expect((refused as NodeIdInUseError).code).toBe("INVALID_STATE");
      expect((refused as NodeIdInUseError).pid).toBe(process.pid);
      const states = await jobStates(pool, schema, held);
      expect(states.map((s) => [s.status, s.picked_by, s.errors.length])).toEqual(
        held.map(() => ["RUNNING", "twin", 0]),
      );
      await node.close();
    } finally {
      await other.die();
    }
  });

  it("takes the id over at once after that process died, rescuing its jobs", async () => {
    const other = await otherProcess("phoenix");
    const held = await insertRunning(pool, schema, "phoenix", 2, { type: "never-registered" });
    await other.die();
    // A threshold far longer than the test: only the free lock can let it start.
    const node = testPawl(schema, { nodeId: "phoenix", deadNodeThresholdMs: 600_000 });
    nodes.push(node);
    const recovered = node.events.next("cluster:orphans-recovered", (e) => e.startup);
    await node.start();
    expect((await recovered).jobs.map((j) => j.id).sort()).toEqual([...held].sort());
  });
});

describe("the node id's lock while the node runs", () => {
  /** The backend holding the node id's session lock, if any. */
  async function holder(nodeId: string): Promise<number | undefined> {
    const { rows } = await pool.query<{ pid: number }>(
      `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 2
         AND classid::bigint = (hashtext($1)::bigint & 4294967295)
         AND objid::bigint = (hashtext($2)::bigint & 4294967295)`,
      [`pawl.node.${schema}`, nodeId],
    );
    return rows[0]?.pid;
  }

  it("is retaken after its connection is lost, and the heartbeat says so", async () => {
    const node = testPawl(schema, { nodeId: "resilient", heartbeatIntervalMs: 200 });
    nodes.push(node);
    await node.start();
    const first = await holder("resilient");
    expect(first).toBeDefined();
    await pool.query("SELECT pg_terminate_backend($1)", [first]);
    await until(
      async () => {
        const now = await holder("resilient");
        return now !== undefined && now !== first;
      },
      10_000,
      "the lock retaken on a new connection",
    );
    await until(
      async () => {
        const { rows } = await pool.query<{ held: string | null }>(
          `SELECT node_info->>'idLock' AS held FROM "${schema}".scheduler_node WHERE node_id = 'resilient'`,
        );
        return rows[0]?.held === "true";
      },
      10_000,
      "the heartbeat to publish idLock again",
    );
    await node.stop();
    expect(await holder("resilient")).toBeUndefined();
  });
});
