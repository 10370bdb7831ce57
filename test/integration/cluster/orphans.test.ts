/**
 * Failure detection and orphan recovery against the real database: a dead node's RUNNING jobs go back to
 * PENDING with the attempt counted (NodeLostError), DEAD on the last attempt, permits freed, node marked
 * dead once and deleted after the retention; a live node's jobs are never touched; startup cleanup.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { setupSchema, testPawl } from "../../helpers/pawl.js";
import { jobEvent } from "../../helpers/events.js";
import type { Pawl } from "../../../src/index.js";
import { completeJobs } from "../../../src/store/outcomes/finish-jobs.js";
import { tablesFor } from "../../../src/db/sql.js";
import { ManualClock } from "../../../src/core/clock.js";
import { OrphanSweeper } from "../../../src/cluster/orphan-sweeper.js";
import { sweepRestMs } from "../../../src/logic/cluster-logic.js";
import { LeaseManager } from "../../../src/cluster/lease.js";
import { PawlEventEmitter } from "../../../src/core/events.js";
import { silentLogger } from "../../../src/core/logger.js";
import type { ClusterStore } from "../../../src/store/job-store.js";
import { clusterNode, insertNode, insertPermit, insertRunning, jobStates } from "../../helpers/cluster.js";
import { gate } from "../../helpers/gate.js";

let schema: string;
let pool: pg.Pool;
let cleanup: () => Promise<void>;
const ends: (() => Promise<void>)[] = [];

beforeAll(async () => {
  ({ schema, pool, cleanup } = await setupSchema("orph"));
});
afterAll(() => cleanup());
afterEach(async () => {
  for (const end of ends.splice(0).reverse()) await end();
  await pool.query(
    `TRUNCATE "${schema}".scheduler_job_queue, "${schema}".scheduler_job_finished, "${schema}".scheduler_node, "${schema}".scheduler_lock, "${schema}".scheduler_resource_permit`,
  );
});

function sweeperNode(nodeId = "sweeper", thresholdMs = 3000) {
  const n = clusterNode(schema, nodeId, { deadNodeThresholdMs: thresholdMs, nodeRetentionMs: 60_000 });
  ends.push(n.end);
  return n;
}

describe("orphan recovery", () => {
  it("recovers a dead node's RUNNING jobs: PENDING with the attempt counted, DEAD on the last attempt, permits freed", async () => {
    const { services, events } = sweeperNode();
    await insertNode(pool, schema, "dead-1", 10_000);
    const pending = await insertRunning(pool, schema, "dead-1", 3, { attempts: 1, maxAttempts: 3 });
    const [last] = await insertRunning(pool, schema, "dead-1", 1, { attempts: 3, maxAttempts: 3 });
    await insertPermit(pool, schema, "gpu", pending[0]!, "dead-1");
    await insertPermit(pool, schema, "gpu", last!, "dead-1");
    const recoveredEvent = events.next("cluster:orphans-recovered");
    const deadEvent = events.next("cluster:node-dead");

    const r = await services.sweeper.runOnce();

    expect(r.ran).toBe(true);
    expect(r.recovered.map((j) => j.id).sort()).toEqual([...pending, last!].sort());
    expect(r.permitsFreed).toBe(2);
    expect(r.deadNodes).toEqual([
      expect.objectContaining({ nodeId: "dead-1", newlyDead: true, permitsFreed: 2 }),
    ]);
    const states = await jobStates(pool, schema, [...pending, last!]);
    for (const s of states.filter((x) => x.id !== last)) {
      expect(s).toMatchObject({ status: "PENDING", attempts: 1, picked_by: null });
      expect(s.errors).toEqual([
        expect.objectContaining({ name: "NodeLostError", message: "node dead-1 lost", attempt: 1 }),
      ]);
    }
    expect(states.find((x) => x.id === last)).toMatchObject({ status: "DEAD", attempts: 3 });
    const { rows: permits } = await pool.query(`SELECT * FROM "${schema}".scheduler_resource_permit`);
    expect(permits).toEqual([]);
    expect((await recoveredEvent).jobs).toHaveLength(4);
    expect(await deadEvent).toMatchObject({ nodeId: "dead-1", detectedBy: "sweeper" });
    const { rows: due } = await pool.query(
      `SELECT count(*)::int AS n FROM "${schema}".scheduler_job_all WHERE status = 'PENDING' AND scheduled_time <= now()`,
    );
    expect(due[0].n).toBe(3);

    // The next sweep finds nothing new and reports the node dead only once.
    const again = await services.sweeper.runOnce();
    expect(again.recovered).toEqual([]);
    expect(again.deadNodes).toEqual([expect.objectContaining({ nodeId: "dead-1", newlyDead: false })]);
  });

  it("a job that keeps killing its node ends DEAD after max attempts", async () => {
    const { services } = sweeperNode();
    const [id] = await insertRunning(pool, schema, "crashy-1", 1, { attempts: 1, maxAttempts: 2 });
    await insertNode(pool, schema, "crashy-1", 10_000);
    await services.sweeper.runOnce();
    // The second attempt is claimed by another node that dies too.
    await pool.query(
      `UPDATE "${schema}".scheduler_job_queue SET attempts = attempts + 1, picked_by = 'crashy-2', picked_at = now() WHERE id = $1`,
      [id],
    );
    await insertNode(pool, schema, "crashy-2", 10_000);
    await services.sweeper.runOnce();
    const [s] = await jobStates(pool, schema, [id!]);
    expect(s).toMatchObject({ status: "DEAD", attempts: 2 });
    expect(s!.errors.map((e) => e.message)).toEqual(["node crashy-1 lost", "node crashy-2 lost"]);
  });

  it("never touches the jobs of a live node, and a recovered row is not overwritten by its old node", async () => {
    const { services } = sweeperNode();
    await insertNode(pool, schema, "alive", 500); // beat half a second ago, threshold 3 s
    const live = await insertRunning(pool, schema, "alive", 5, { pickedAgoMs: 60_000 });
    await insertNode(pool, schema, "gone", 5_000);
    const [orphan] = await insertRunning(pool, schema, "gone", 1);

    const r = await services.sweeper.runOnce();
    expect(r.recovered.map((j) => j.id)).toEqual([orphan]);
    expect(
      (await jobStates(pool, schema, live)).every((s) => s.status === "RUNNING" && s.picked_by === "alive"),
    ).toBe(true);

    // The node that lost the row finishes late: its guarded completion does not land.
    const landed = await completeJobs(pool, tablesFor(schema), "gone", [{ id: orphan!, resultJson: null }]);
    expect(landed.size).toBe(0);
    expect((await jobStates(pool, schema, [orphan!]))[0]?.status).toBe("PENDING");
    // With a controlled database time, the live node is judged by the same rule: 3 s later it is dead too.
    const later = await services.sweeper.runOnce(new Date(Date.now() + 5000));
    expect(later.recovered.map((j) => j.id).sort((a, b) => Number(a) - Number(b))).toEqual(live);
  });

  it("recovers rows of node ids with no row only once picked longer than the threshold ago", async () => {
    const { services } = sweeperNode();
    const [old] = await insertRunning(pool, schema, "never-registered", 1, { pickedAgoMs: 10_000 });
    const [fresh] = await insertRunning(pool, schema, "never-registered", 1, { pickedAgoMs: 100 });
    await insertPermit(pool, schema, "db", old!, "never-registered");
    const r = await services.sweeper.runOnce();
    expect(r.recovered.map((j) => j.id)).toEqual([old]);
    expect(r.permitsFreed).toBe(1);
    expect((await jobStates(pool, schema, [fresh!]))[0]?.status).toBe("RUNNING");
  });

  it("reads the running rows when a node went stale, and otherwise once per threshold (no index holds the lease)", async () => {
    const clock = new ManualClock(1_000_000);
    const n = clusterNode(schema, "gated", { deadNodeThresholdMs: 3000, nodeRetentionMs: 60_000 }, { clock });
    ends.push(n.end);
    const sweeper = n.services.sweeper;
    expect((await sweeper.runOnce()).recovered).toEqual([]); // the first sweep reads everything
    // A node id without a row announces nothing: its rows wait for the next sweep that reads everything.
    const [unannounced] = await insertRunning(pool, schema, "gone-without-row", 1, { pickedAgoMs: 10_000 });
    clock.advance(2000);
    expect((await sweeper.runOnce()).recovered).toEqual([]);
    // A node that went stale (and is not yet marked dead) is read for at once.
    await insertNode(pool, schema, "stale-1", 10_000);
    const [fromStale] = await insertRunning(pool, schema, "stale-1", 1);
    clock.advance(500);
    const r = await sweeper.runOnce();
    expect(r.recovered.map((j) => j.id).sort()).toEqual([fromStale, unannounced].sort());
    // Marked dead now: the next sweeps within the threshold read nothing, the one after it everything.
    const [late] = await insertRunning(pool, schema, "gone-without-row", 1, { pickedAgoMs: 10_000 });
    clock.advance(200); // 2,700 ms since the last sweep that read everything
    expect((await sweeper.runOnce()).recovered).toEqual([]);
    clock.advance(300);
    expect((await sweeper.runOnce()).recovered.map((j) => j.id)).toEqual([late]);
  });

  it("recovers a node that crosses the threshold between the recovery's read and the reaper in that sweep", async () => {
    const { store, end } = clusterNode(schema, "unused", {});
    ends.push(end);
    const events = new PawlEventEmitter();
    // The real store, with the node ageing past the threshold just before the reaper reads it: the
    // recovery's gate saw a live node, the reaper marks it dead (a race of milliseconds, made certain).
    const racing: ClusterStore = Object.create(store, {
      reapDeadNodes: {
        value: async (thresholdMs: number, now: Date | null) => {
          await insertNode(pool, schema, "crossing", 10_000);
          return store.reapDeadNodes(thresholdMs, now);
        },
      },
    });
    const clock = new ManualClock(1_000_000);
    const sweeper = new OrphanSweeper({
      store: racing,
      nodeId: "racer",
      thresholdMs: 3000,
      nodeRetentionMs: 60_000,
      leases: new LeaseManager({ store: racing, owner: "racer", ttlMs: 30_000, clock, events }),
      clock,
      events,
      logger: silentLogger,
    });
    expect((await sweeper.runOnce()).recovered).toEqual([]); // the first sweep reads everything
    await insertNode(pool, schema, "crossing", 0);
    const [held] = await insertRunning(pool, schema, "crossing", 1);
    clock.advance(250); // well within the threshold: this sweep's recovery reads only for stale nodes
    const r = await sweeper.runOnce();
    expect(r.deadNodes.find((d) => d.nodeId === "crossing")?.newlyDead).toBe(true);
    expect(r.recovered.map((j) => j.id)).toEqual([held]);
  });

  it("recovers in batches and deletes dead node rows after the retention", async () => {
    const { services } = sweeperNode();
    await insertNode(pool, schema, "big", 10_000);
    const ids = await insertRunning(pool, schema, "big", 2500);
    const r = await services.sweeper.runOnce();
    expect(r.recovered).toHaveLength(2500);
    expect(new Set(r.recovered.map((j) => j.id)).size).toBe(2500);
    expect((await jobStates(pool, schema, ids)).every((s) => s.status === "PENDING")).toBe(true);
    // An hour later (controlled time) the row is past the 60 s retention and goes.
    const later = await services.sweeper.runOnce(new Date(Date.now() + 3_600_000));
    expect(later.nodesDeleted).toContain("big");
    const { rows } = await pool.query(`SELECT node_id FROM "${schema}".scheduler_node WHERE node_id = 'big'`);
    expect(rows).toEqual([]);
  });

  it("a sweep rests its lease for half the sweep interval: no node sweeps within it, any node after", async () => {
    const a = sweeperNode("rest-a");
    const b = sweeperNode("rest-b");
    const t0 = Date.now();
    const at = (ms: number) => new Date(t0 + ms);
    const owner = async () =>
      (
        await pool.query(
          `SELECT owner_node FROM "${schema}".scheduler_lock WHERE lock_name = 'pawl:orphan-sweep'`,
        )
      ).rows;
    // What a node's sweep loop passes: half of orphanSweepIntervalMs (2 s by default).
    const rest = sweepRestMs(2000);
    expect(rest).toBe(1000);
    expect((await a.services.sweeper.runOnce(at(0), rest)).ran).toBe(true);
    expect(await owner()).toEqual([{ owner_node: "rest:rest-a" }]);
    // Within the rest no sweep runs, the last sweeper's neither: a node restarting under a stable id,
    // which waits for this lease in older releases, gets it.
    expect((await b.services.sweeper.runOnce(at(500), rest)).ran).toBe(false);
    expect((await a.services.sweeper.runOnce(at(999), rest)).ran).toBe(false);
    // After it, whoever tries first sweeps.
    expect((await b.services.sweeper.runOnce(at(1001), rest)).ran).toBe(true);
    expect(await owner()).toEqual([{ owner_node: "rest:rest-b" }]);
  });

  it("one sweep at a time: a second sweeper skips while the lease is held", async () => {
    const a = sweeperNode("sweep-a");
    const b = sweeperNode("sweep-b");
    const lease = await a.services.leases.acquire("pawl:orphan-sweep");
    expect(lease).not.toBeNull();
    expect((await b.services.sweeper.runOnce()).ran).toBe(false);
    await lease!.release();
    expect((await b.services.sweeper.runOnce()).ran).toBe(true);
  });
});

describe("with started nodes", () => {
  let nodes: Pawl[] = [];
  afterEach(async () => {
    await Promise.all(nodes.map((n) => n.close()));
    nodes = [];
  });

  it("startup cleanup recovers this node id's rows from a crashed previous run before claiming", async () => {
    // The previous run of "restarted" died moments ago: its heartbeat is still fresh, but it held the node
    // id's session lock and nobody holds that now (its session ended with it).
    await insertNode(pool, schema, "restarted", 200, { idLock: true });
    const stale = await insertRunning(pool, schema, "restarted", 3, { type: "never-registered-type" });
    await insertPermit(pool, schema, "gpu", stale[0]!, "restarted");
    const node = testPawl(schema, { nodeId: "restarted" });
    nodes.push(node);
    const recovered = node.events.next("cluster:orphans-recovered", (e) => e.startup);
    await node.start();
    const e = await recovered;
    expect(e.jobs.map((j) => j.id).sort((a, b) => Number(a) - Number(b))).toEqual(stale);
    const states = await jobStates(pool, schema, stale);
    expect(
      states.every((s) => s.status === "PENDING" && s.errors[0]?.message === "node restarted lost"),
    ).toBe(true);
    const { rows } = await pool.query(`SELECT * FROM "${schema}".scheduler_resource_permit`);
    expect(rows).toEqual([]);
  });

  it("startup cleanup runs only for a configured node id: a generated one has no previous run", async () => {
    // Another node holds the startup-cleanup lease for an hour. Startup cleanup runs under that lease, so
    // a node that needs it waits for it and gives up; a node whose id was generated has nothing to clean
    // up (the cleanup reads every leased row: a scan of the live table) and starts at once.
    await pool.query(
      `INSERT INTO "${schema}".scheduler_lock (lock_name, owner_node, expires_at)
       VALUES ('pawl:startup-cleanup', 'someone-else', now() + interval '1 hour')`,
    );
    try {
      const generated = testPawl(schema, { leaseTtlMs: 500 });
      nodes.push(generated);
      await generated.start();
      const configured = testPawl(schema, { nodeId: "configured-id", leaseTtlMs: 500 });
      nodes.push(configured);
      await expect(configured.start()).rejects.toThrow(/lease stayed held/);
    } finally {
      await pool.query(`DELETE FROM "${schema}".scheduler_lock WHERE owner_node = 'someone-else'`);
    }
  });

  it("a node sweeping on its loop leaves the sweep lease to others between sweeps", async () => {
    // Older releases run their startup cleanup under this lease, trying every 100 ms for a lease TTL plus
    // a second: a node of theirs restarting beside a sweeping node must get it.
    const sweeping = testPawl(schema, { nodeId: "loop-sweeper", deadNodeThresholdMs: 3000 });
    nodes.push(sweeping);
    const swept = sweeping.events.next("cluster:lease-acquired", (e) => e.name === "pawl:orphan-sweep");
    await sweeping.start();
    await swept;
    const older = clusterNode(schema, "older-release-restart");
    ends.push(older.end);
    let lease = null;
    for (let tries = 0; lease === null && tries < 160; tries++) {
      lease = await older.services.leases.acquire("pawl:orphan-sweep");
      if (lease === null) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(lease).not.toBeNull();
    await lease!.release();
  });

  it("a live node keeps its running jobs through sweeps and finishes them", async () => {
    const live = testPawl(schema, { nodeId: "live-worker", deadNodeThresholdMs: 3000 });
    nodes.push(live);
    const release = gate();
    let started = 0;
    live.register("slow", async () => {
      started++;
      await release.promise;
      return "done";
    });
    await live.start();
    const jobStarted = jobEvent(live.events, "job:started");
    const jobs = await live.enqueueMany([{ type: "slow" }, { type: "slow" }]);
    await jobStarted.forAny(jobs.map((j) => j.id));
    const { services } = sweeperNode("other-sweeper");
    const r = await services.sweeper.runOnce();
    expect(r.recovered).toEqual([]);
    expect(r.deadNodes).toEqual([]);
    release.open();
    await Promise.all(jobs.map((j) => live.events.next("job:succeeded", (e) => e.job.id === j.id)));
    expect(started).toBe(2);
    for (const j of jobs) expect((await live.getJob(j.id))?.status).toBe("SUCCEEDED");
  });

  it("an idle node runs the orphans its own sweep recovered at once, not at its next full pass", async () => {
    // The orphan sits below the id floor and the time floor of the claim cursors: before the node starts it
    // is RUNNING on a live node, and it was scheduled an hour ago. Only a full pass (every 60 s here) or
    // the sweep's own request can find it once it is PENDING again.
    await insertNode(pool, schema, "doomed", 0);
    const [orphan] = await insertRunning(pool, schema, "doomed", 1, {
      type: "orphan.work",
      pickedAgoMs: 60_000,
    });
    await pool.query(
      `UPDATE "${schema}".scheduler_job_queue SET scheduled_time = now() - interval '1 hour' WHERE id = $1`,
      [orphan],
    );
    const node = testPawl(schema, {
      nodeId: "idle-sweeper",
      deadNodeThresholdMs: 1000,
      orphanSweepIntervalMs: 100,
      claimCursorFullDiscoveryMs: 60_000,
      claimCursorFullDiscoveryMaxMs: 600_000,
    });
    ends.push(() => node.close());
    node.register("orphan.work", async () => "rescued");
    const firstPoll = node.events.next("poll");
    await node.start();
    await firstPoll;
    const recovered = node.events.next("cluster:orphans-recovered", (e) =>
      e.jobs.some((j) => j.id === orphan),
    );
    const succeeded = node.events.next("job:succeeded", (e) => e.job.id === orphan, 10_000);
    await pool.query(
      `UPDATE "${schema}".scheduler_node SET heartbeat_ts = now() - interval '1 hour' WHERE node_id = 'doomed'`,
    );
    await recovered;
    await succeeded;
    expect(await jobStates(pool, schema, [orphan!])).toMatchObject([{ status: "SUCCEEDED" }]);
  });

  it("refuses to start a second node under the same id in one process", async () => {
    const a = testPawl(schema, { nodeId: "twin" });
    const b = testPawl(schema, { nodeId: "twin" });
    nodes.push(a, b);
    await a.start();
    await expect(b.start()).rejects.toThrow(/already running in this process/);
  });

  it("a stopped node leaves the cluster; its row is gone", async () => {
    const a = testPawl(schema, { nodeId: "leaver" });
    nodes.push(a);
    await a.start();
    expect((await a.cluster()).nodes.map((n) => n.nodeId)).toContain("leaver");
    await a.stop();
    const { rows } = await pool.query(
      `SELECT node_id FROM "${schema}".scheduler_node WHERE node_id = 'leaver'`,
    );
    expect(rows).toEqual([]);
  });
});
