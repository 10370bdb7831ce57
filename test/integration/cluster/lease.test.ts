/**
 * Leases on scheduler_lock: acquire with a TTL, renew, release, expiry after a crash (all by the
 * database's clock), and singleton work under competition from several nodes on separate pools, checked
 * by overlapping-interval detection.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { performance } from "node:perf_hooks";
import { ManualClock } from "../../../src/core/clock.js";
import type { Pawl } from "../../../src/index.js";
import { PostgresJobStore } from "../../../src/store/postgres-job-store.js";
import { grantLock } from "../../../src/store/cluster/lock-sql.js";
import { tablesFor } from "../../../src/db/sql.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";
import { clusterNode } from "../../helpers/cluster.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
const ends: (() => Promise<void>)[] = [];

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("lease"));
});
afterAll(() => cleanup());
afterEach(async () => {
  for (const end of ends.splice(0).reverse()) await end();
});

const at = (base: Date, ms: number) => new Date(base.getTime() + ms);

describe("lease statements", () => {
  it("acquire, re-acquire by the owner, refuse others, renew, release", async () => {
    const store = new PostgresJobStore(pool, schema);
    const t0 = new Date("2030-01-01T00:00:00Z");
    const a = await store.acquireLock("l1", "node-a", 1000, t0);
    expect(a).toEqual({ lockedAt: t0, expiresAt: at(t0, 1000) });
    expect(await store.acquireLock("l1", "node-b", 1000, at(t0, 500))).toBeNull();
    // The owner acquiring again extends it and keeps locked_at.
    expect(await store.acquireLock("l1", "node-a", 1000, at(t0, 600))).toEqual({
      lockedAt: t0,
      expiresAt: at(t0, 1600),
    });
    expect(await store.renewLock("l1", "node-a", 1000, at(t0, 1500))).toEqual({
      lockedAt: t0,
      expiresAt: at(t0, 2500),
    });
    expect(await store.renewLock("l1", "node-b", 1000, at(t0, 1500))).toBeNull();
    expect(await store.releaseLock("l1", "node-b")).toBe(false);
    expect(await store.releaseLock("l1", "node-a")).toBe(true);
    expect(await store.acquireLock("l1", "node-b", 1000, at(t0, 1600))).not.toBeNull();
  });

  it("a crashed holder's lease expires by the database's clock; it cannot renew after that", async () => {
    const store = new PostgresJobStore(pool, schema);
    const t0 = new Date("2031-01-01T00:00:00Z");
    expect(await store.acquireLock("l2", "crashed", 1000, t0)).not.toBeNull();
    expect(await store.acquireLock("l2", "survivor", 1000, at(t0, 999))).toBeNull();
    expect(await store.acquireLock("l2", "survivor", 1000, at(t0, 1001))).toEqual({
      lockedAt: at(t0, 1001),
      expiresAt: at(t0, 2001),
    });
    expect(await store.renewLock("l2", "crashed", 1000, at(t0, 1002))).toBeNull();
    // Even unclaimed, an expired lease cannot be renewed: its holder may have been overtaken.
    expect(await store.acquireLock("l3", "x", 100, t0)).not.toBeNull();
    expect(await store.renewLock("l3", "x", 100, at(t0, 101))).toBeNull();
  });

  it("a refused acquire writes nothing: no transaction id, so no WAL and no commit waiting for a flush", async () => {
    const t = tablesFor(schema);
    const t0 = new Date("2032-01-01T00:00:00Z");
    expect(await grantLock(pool, t, "acquire", "l5", "holder", 1000, t0)).not.toBeNull();
    const client = await pool.connect();
    // What one acquire in its own transaction assigned: a transaction id, or null when it only read.
    const xidOf = async (owner: string, now: Date) => {
      await client.query("BEGIN");
      try {
        const grant = await grantLock(client, t, "acquire", "l5", owner, 1000, now);
        const { rows } = await client.query<{ x: string | null }>(
          "SELECT pg_current_xact_id_if_assigned()::text AS x",
        );
        return { grant, xid: rows[0]!.x };
      } finally {
        await client.query("ROLLBACK");
      }
    };
    try {
      // Held by another: refused, read-only.
      expect(await xidOf("other", at(t0, 500))).toEqual({ grant: null, xid: null });
      // Resting (held by rest:<holder>): refused for everyone, the holder too, read-only.
      await pool.query(`UPDATE ${t.locks} SET owner_node = 'rest:holder' WHERE lock_name = 'l5'`);
      expect(await xidOf("holder", at(t0, 500))).toEqual({ grant: null, xid: null });
      // Expired: taken, which is a write.
      const taken = await xidOf("other", at(t0, 1001));
      expect(taken.grant).not.toBeNull();
      expect(taken.xid).not.toBeNull();
    } finally {
      client.release();
    }
  });
});

describe("LeaseManager", () => {
  it("refuses a second local holder, tracks validity on the clock, reports a lost renewal", async () => {
    const clock = new ManualClock(Date.now());
    const n = clusterNode(schema, "mgr", { leaseTtlMs: 5000 }, { clock });
    ends.push(n.end);
    const lease = await n.services.leases.acquire("l4");
    expect(lease).not.toBeNull();
    expect(await n.services.leases.acquire("l4")).toBeNull();
    expect(lease!.valid()).toBe(true);
    clock.advance(4499);
    expect(lease!.valid()).toBe(true);
    clock.advance(1);
    expect(lease!.valid()).toBe(false); // 5 s TTL minus a 500 ms margin
    // Someone else took it in the meantime (the database says it expired).
    await pool.query(`UPDATE "${schema}".scheduler_lock SET owner_node = 'thief' WHERE lock_name = 'l4'`);
    const lost = n.events.next("cluster:lease-lost");
    expect(await lease!.renew()).toBe(false);
    expect(await lost).toMatchObject({ name: "l4", nodeId: "mgr" });
    await lease!.release();
    const { rows } = await pool.query(
      `SELECT owner_node FROM "${schema}".scheduler_lock WHERE lock_name = 'l4'`,
    );
    expect(rows).toEqual([{ owner_node: "thief" }]);
    expect(await n.services.leases.acquire("l4")).toBeNull(); // free locally again, still held remotely
  });
});

describe("singleton work under competition", () => {
  let nodes: Pawl[] = [];
  afterEach(async () => {
    await Promise.all(nodes.map((n) => n.close()));
    nodes = [];
  });

  it("never runs on two nodes at once (no overlapping critical sections)", async () => {
    nodes = ["c1", "c2", "c3", "c4"].map((nodeId) => testPawl(schema, { nodeId, maxConnections: 3 }));
    await Promise.all(nodes.map((n) => n.start()));
    const sections: { node: string; start: number; end: number }[] = [];
    let inside = 0;
    let maxInside = 0;
    const compete = async (node: Pawl) => {
      let won = 0;
      for (let attempt = 0; attempt < 400 && won < 8; attempt++) {
        const r = await node.clusterServices!.leases.withLease("test:singleton", async () => {
          const start = performance.now();
          inside++;
          maxInside = Math.max(maxInside, inside);
          // Real work on the node's own pool while holding the lease.
          await node.store.pool.query("SELECT pg_sleep(0.003)");
          inside--;
          sections.push({ node: node.nodeId, start, end: performance.now() });
        });
        if (r.acquired) won++;
        else await new Promise((resolve) => setImmediate(resolve));
      }
    };
    await Promise.all(nodes.map(compete));
    expect(sections.length).toBeGreaterThanOrEqual(16);
    expect(new Set(sections.map((s) => s.node)).size).toBeGreaterThanOrEqual(2);
    const sorted = [...sections].sort((a, b) => a.start - b.start);
    for (let i = 1; i < sorted.length; i++) {
      const prev = sorted[i - 1]!;
      const cur = sorted[i]!;
      expect(
        cur.start,
        `${prev.node} [${prev.start}, ${prev.end}] overlaps ${cur.node} [${cur.start}, ${cur.end}]`,
      ).toBeGreaterThanOrEqual(prev.end);
    }
    expect(maxInside).toBe(1);
  });
});
