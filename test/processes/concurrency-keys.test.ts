/**
 * Concurrency keys across node processes (issue 27, docs/fairness.md): a key's limit is enforced in the
 * claim, across nodes, and a node killed with -9 keeps its keyed jobs counted until orphan recovery clears
 * its leases.
 *
 * A running job is a leased row (`status = 'PENDING' AND picked_by IS NOT NULL`, what scheduler_job_all
 * shows as RUNNING). The tests sample, from this process, every key's leased rows in one statement (one
 * snapshot), beside the key's count kept by the lease triggers (`pawl_key_running`, the sum of the deltas in
 * scheduler_concurrency_running): the rows must never exceed the limit, and the two must agree in every
 * snapshot, since a delta commits with the row change that causes it.
 */
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type pg from "pg";
import type { Pawl } from "../../src/index.js";
import { setupSchema, testPawl } from "../helpers/pawl.js";
import {
  fastCluster,
  installRecorders,
  keyCountDrift,
  killAll,
  NodeProcess,
  runStats,
  until,
  withDump,
} from "./harness.js";

const procs: NodeProcess[] = [];
const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  await killAll(procs);
  procs.length = 0;
});
afterAll(async () => {
  for (const cleanup of cleanups) await cleanup();
});

/** A schema of the test's own with the recorders, and a client (never started) to enqueue with. */
async function setup(prefix: string): Promise<{ schema: string; pool: pg.Pool; client: Pawl }> {
  const { schema, pool, cleanup } = await setupSchema(prefix);
  await installRecorders(pool, schema);
  const client = testPawl(schema);
  cleanups.push(async () => {
    await client.close();
    await cleanup();
  });
  return { schema, pool, client };
}

function spawnNode(schema: string, nodeId: string, options: Record<string, unknown> = {}): NodeProcess {
  const p = new NodeProcess(nodeId, schema, { concurrency: 8, ...options });
  procs.push(p);
  return p;
}

/** One snapshot of a key: its leased rows in all, per node, and its count kept by the triggers. */
interface KeySample {
  key: string;
  leased: number;
  byNode: Record<string, number>;
  counted: number;
}

/** Every key's leased rows and trigger count, read in one statement (one snapshot). */
async function sampleKeys(pool: pg.Pool, schema: string, keys: readonly string[]): Promise<KeySample[]> {
  const s = `"${schema}"`;
  const { rows } = await pool.query<{ key: string; by_node: Record<string, number> | null; counted: number }>(
    `SELECT k.key,
            (SELECT jsonb_object_agg(n.picked_by, n.c) FROM (
               SELECT picked_by, count(*)::int AS c FROM ${s}.scheduler_job_queue
               WHERE status = 'PENDING' AND picked_by IS NOT NULL AND concurrency_key = k.key
               GROUP BY picked_by) n) AS by_node,
            ${s}.pawl_key_running(k.key) AS counted
     FROM unnest($1::text[]) AS k(key)`,
    [keys],
  );
  return rows.map((r) => {
    const byNode = r.by_node ?? {};
    return {
      key: r.key,
      byNode,
      counted: r.counted,
      leased: Object.values(byNode).reduce((a, b) => a + b, 0),
    };
  });
}

/** Live rows left (a finished job moves to the finished table). */
async function liveRows(pool: pg.Pool, schema: string): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM "${schema}".scheduler_job_queue`,
  );
  return rows[0]!.n;
}

/**
 * The most handlers of each key that overlapped in time, from the recorded runs: a run is taken as
 * [recorded at - sleepMs, recorded at], database time. The handler started before that (its sleep lasts at
 * least sleepMs) and its lease ended after it (the outcome is written once the record is), so each interval
 * lies inside its lease: an overlap here is an overlap of leases. Unlike the samples, it misses no moment.
 */
async function mostOverlapping(pool: pg.Pool, schema: string): Promise<Record<string, number>> {
  const s = `"${schema}"`;
  const { rows } = await pool.query<{ key: string; most: number }>(
    `WITH iv AS (
       SELECT j.concurrency_key AS key,
              e.at - ((j.payload->>'sleepMs')::int * interval '1 millisecond') AS started, e.at AS ended
       FROM ${s}.executions e JOIN ${s}.scheduler_job_all j ON j.id = e.job_id
       WHERE j.concurrency_key IS NOT NULL),
     ev AS (SELECT key, started AS t, 1 AS d FROM iv UNION ALL SELECT key, ended, -1 FROM iv)
     SELECT key, max(n)::int AS most FROM (
       SELECT key, sum(d) OVER (PARTITION BY key ORDER BY t, d ROWS UNBOUNDED PRECEDING) AS n FROM ev) x
     GROUP BY key`,
  );
  return Object.fromEntries(rows.map((r) => [r.key, r.most]));
}

/** The running count of a key, and its delta rows, read from scheduler_concurrency_running. */
async function deltas(pool: pg.Pool, schema: string, key: string): Promise<{ sum: number; rows: number }> {
  const { rows } = await pool.query<{ sum: number; rows: number; running: number }>(
    `SELECT coalesce(sum(delta), 0)::int AS sum, count(*)::int AS rows, "${schema}".pawl_key_running($1) AS running
     FROM "${schema}".scheduler_concurrency_running WHERE concurrency_key = $1`,
    [key],
  );
  expect(rows[0]!.running).toBe(rows[0]!.sum);
  return { sum: rows[0]!.sum, rows: rows[0]!.rows };
}

describe("concurrency keys across node processes", () => {
  it("two nodes never run more of a key than its limit, and every job succeeds once", async () => {
    const { schema, pool, client } = await setup("ckproc");
    const limits: Record<string, number> = { "t-0": 3, "t-1": 3, "t-2": 3, "t-3": 3, "t-4": 3, solo: 1 };
    const perKey: Record<string, number> = {
      "t-0": 30,
      "t-1": 30,
      "t-2": 30,
      "t-3": 30,
      "t-4": 30,
      solo: 15,
    };
    const keys = Object.keys(limits);
    // Interleaved, so no key's jobs all come first; each sleeps 30-80 ms.
    const items = Array.from({ length: Math.max(...Object.values(perKey)) }, (_, i) =>
      keys.filter((key) => i < perKey[key]!),
    )
      .flat()
      .map((key, n) => ({
        type: "work",
        payload: { sleepMs: 30 + ((n * 17) % 51) },
        concurrencyKey: key,
        concurrencyLimit: limits[key]!,
      }));
    const total = items.length;

    // A prefetch of 2 (the harness's 50 lets the first node to claim lease every slot into its buffer):
    // a node leases its 8 running and 2 buffered jobs, plus the finished ones whose outcomes are still
    // being written (the lease, and the key's slot, end with that write). The two nodes can lease more than
    // the 16 the limits allow, so only the limits hold them back, and both take part in every key's limit.
    const a = spawnNode(schema, "ck-a", { prefetch: 2 });
    const b = spawnNode(schema, "ck-b", { prefetch: 2 });
    await withDump(procs, async () => {
      await Promise.all([a.ready, b.ready]);
      const started = Date.now();
      await client.enqueueMany(items);

      // Sample until every row has left the live table (each job succeeded or died).
      const most: Record<string, number> = Object.fromEntries(keys.map((k) => [k, 0]));
      const disagreements: KeySample[] = [];
      let samples = 0;
      let bothNodesAtOnce = 0;
      let mostByNode = 0;
      for (;;) {
        const snapshot = await sampleKeys(pool, schema, keys);
        samples++;
        for (const k of snapshot) {
          most[k.key] = Math.max(most[k.key]!, k.leased);
          if (k.counted !== k.leased) disagreements.push(k);
          if (Object.keys(k.byNode).length > 1) bothNodesAtOnce++;
        }
        for (const node of ["ck-a", "ck-b"])
          mostByNode = Math.max(
            mostByNode,
            snapshot.reduce((n, k) => n + (k.byNode[node] ?? 0), 0),
          );
        if ((await liveRows(pool, schema)) === 0) break;
        await new Promise((resolve) => setTimeout(resolve, 2));
        if (Date.now() - started > 30_000)
          throw new Error(`jobs still live after 30 s: ${JSON.stringify(most)}`);
      }
      const elapsed = Date.now() - started;

      const stats = await runStats(pool, schema);
      const overlap = await mostOverlapping(pool, schema);
      const { rows: perNode } = await pool.query<{ node_id: string; n: number }>(
        `SELECT node_id, count(*)::int AS n FROM "${schema}".executions GROUP BY node_id ORDER BY node_id`,
      );
      console.log(
        `concurrency keys, 2 processes: ${total} jobs in ${elapsed} ms; ${samples} samples; most leased per key ` +
          `${JSON.stringify(most)}; most overlapping runs per key ${JSON.stringify(overlap)}; ` +
          `runs per node ${JSON.stringify(perNode)}; key samples with leases on both nodes ${bothNodesAtOnce}; ` +
          `most leased by one node ${mostByNode}`,
      );

      // The limits held at every sample and at every moment of the recorded runs.
      for (const key of keys) {
        expect(most[key], `most leased of ${key}`).toBeLessThanOrEqual(limits[key]!);
        expect(overlap[key] ?? 0, `most overlapping runs of ${key}`).toBeLessThanOrEqual(limits[key]!);
      }
      // ... and they were reached, so a claim that let one more through would have shown.
      expect(most).toEqual(limits);
      expect(samples).toBeGreaterThanOrEqual(20);
      // The triggers' count agreed with the rows in every snapshot, and every key ends at 0.
      expect(disagreements).toEqual([]);
      for (const key of keys) expect(await deltas(pool, schema, key)).toMatchObject({ sum: 0 });
      // Both nodes claimed keyed jobs, and held jobs of one key at the same time: the limit was shared.
      expect(perNode.map((r) => r.node_id)).toEqual(["ck-a", "ck-b"]);
      expect(bothNodesAtOnce).toBeGreaterThan(0);
      // Every job succeeded, ran once and was recorded as a success once.
      expect(stats).toEqual({
        jobs: total,
        executions: total,
        ran_twice: 0,
        successes: total,
        success_twice: 0,
        succeeded: total,
      });
      expect(await keyCountDrift(pool, schema)).toEqual([]);

      for (const p of [a, b]) p.term();
      expect((await Promise.all([a.exited, b.exited])).map((e) => e.code)).toEqual([0, 0]);
      for (const p of [a, b]) expect(p.fatalLines()).toEqual([]);
    });
  }, 60_000);

  it("a node killed with -9 keeps its keyed jobs counted until recovery, then they run and the slots free", async () => {
    const { schema, pool, client } = await setup("ckkill");
    const key = "held";
    const limit = 2;
    const opts = { concurrencyKey: key, concurrencyLimit: limit };

    const a = spawnNode(schema, "ck-a");
    await withDump(procs, async () => {
      await a.ready;
      // Two jobs A holds until it dies (on any other node they run 100 ms), then four more of the key that
      // must wait for a slot.
      const heldJobs = await client.enqueueMany(
        [0, 1].map(() => ({ type: "work", payload: { holdOn: "ck-a", sleepMs: 100 }, ...opts })),
      );
      const heldIds = heldJobs.map((j) => j.id);
      const leasedBy = async (nodeId: string) => {
        const { rows } = await pool.query<{ id: string }>(
          `SELECT id FROM "${schema}".scheduler_job_queue
           WHERE status = 'PENDING' AND picked_by = $1 AND concurrency_key = $2 ORDER BY id`,
          [nodeId, key],
        );
        return rows.map((r) => r.id);
      };
      await until(async () => (await leasedBy("ck-a")).length === 2, 20_000, "A to lease both held jobs", 20);
      const waiting = await client.enqueueMany(
        [0, 1, 2, 3].map(() => ({ type: "work", payload: { sleepMs: 50 }, ...opts })),
      );

      const b = spawnNode(schema, "ck-b");
      await b.ready;

      // From here on, sample the key in the background until every job of it has finished.
      const samples: KeySample[] = [];
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          samples.push(...(await sampleKeys(pool, schema, [key])));
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      })();

      a.kill9();
      const { rows: killedRows } = await pool.query<{ t: Date }>("SELECT clock_timestamp() AS t");
      const killedAt = killedRows[0]!.t.getTime();
      await a.exited;

      // While A's leases stand, B is alive and claims keyed work, just not of the held key: six jobs of
      // another key run to the end on B meanwhile.
      const others = await client.enqueueMany(
        Array.from({ length: 6 }, () => ({
          type: "work",
          payload: { sleepMs: 10 },
          concurrencyKey: "other",
          concurrencyLimit: 2,
        })),
      );
      await until(
        async () =>
          (
            await pool.query<{ n: number }>(
              `SELECT count(*)::int AS n FROM "${schema}".scheduler_job_all WHERE id = ANY($1::bigint[]) AND status = 'SUCCEEDED'`,
              [others.map((j) => j.id)],
            )
          ).rows[0]!.n === others.length,
        10_000,
        "the other key's jobs to succeed on B",
        20,
      );
      // A's leases are still there (the dead node's jobs still count), and B took none of the key.
      expect(await leasedBy("ck-a")).toEqual(heldIds);
      expect(await leasedBy("ck-b")).toEqual([]);
      const { rows: heldRuns } = await pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM "${schema}".executions e
         JOIN "${schema}".scheduler_job_all j ON j.id = e.job_id WHERE j.concurrency_key = $1`,
        [key],
      );
      expect(heldRuns[0]!.n).toBe(0);
      const windowSamples = samples.length;

      // B's sweep recovers A's jobs; then the key's six jobs run on B, two at a time.
      await until(async () => (await leasedBy("ck-a")).length === 0, 20_000, "A's jobs to be recovered", 20);
      const { rows: recoveredRows } = await pool.query<{ t: Date }>(
        `SELECT max((e->>'at')::timestamptz) AS t FROM "${schema}".scheduler_job_all j, jsonb_array_elements(j.errors) e
         WHERE j.id = ANY($1::bigint[]) AND e->>'message' = 'node ck-a lost'`,
        [heldIds],
      );
      const recoveredMs = recoveredRows[0]!.t.getTime() - killedAt;
      await until(async () => (await liveRows(pool, schema)) === 0, 20_000, "every job to finish", 20);
      sampling = false;
      await sampler;

      const stats = await runStats(pool, schema);
      const held = await deltas(pool, schema, key);
      const other = await deltas(pool, schema, "other");
      const { rows: jobs } = await pool.query<{
        id: string;
        attempts: number;
        lost: number;
        node: string | null;
      }>(
        `SELECT j.id, j.attempts,
                (SELECT count(*) FROM jsonb_array_elements(j.errors) e WHERE e->>'message' = 'node ck-a lost')::int AS lost,
                (SELECT string_agg(node_id || '#' || attempt, ',') FROM "${schema}".executions e WHERE e.job_id = j.id) AS node
         FROM "${schema}".scheduler_job_all j WHERE j.id = ANY($1::bigint[]) ORDER BY j.id`,
        [heldIds],
      );
      const most = Math.max(...samples.map((s) => s.leased));
      console.log(
        `kill -9 with keyed jobs: recovered ${recoveredMs} ms after the kill (threshold ${fastCluster.deadNodeThresholdMs} ms); ` +
          `${samples.length} samples (${windowSamples} before the check while A's leases stood); most leased ${most}; ` +
          `held key's deltas ${JSON.stringify(held)}, other key's ${JSON.stringify(other)}; held jobs ${JSON.stringify(jobs)}`,
      );

      // The key never had more than its limit leased, A's dead leases included; while A held both, B held
      // none; and the triggers' count agreed with the rows in every snapshot.
      expect(most).toBe(limit);
      expect(samples.filter((s) => s.leased > limit)).toEqual([]);
      expect(samples.filter((s) => s.byNode["ck-a"] === limit && s.byNode["ck-b"] !== undefined)).toEqual([]);
      expect(samples.filter((s) => s.counted !== s.leased)).toEqual([]);
      expect(windowSamples).toBeGreaterThan(0);
      // The recovery freed the slots: the key's count is back to 0 and so is the sum of its deltas.
      expect(held.sum).toBe(0);
      expect(other.sum).toBe(0);
      // The held jobs lost their first attempt with A and ran once on B (attempt 2); every job of the test
      // succeeded, ran once and was recorded once.
      expect(jobs).toEqual(heldIds.map((id) => ({ id, attempts: 2, lost: 1, node: "ck-b#2" })));
      const total = heldJobs.length + waiting.length + others.length;
      expect(stats).toEqual({
        jobs: total,
        executions: total,
        ran_twice: 0,
        successes: total,
        success_twice: 0,
        succeeded: total,
      });
      expect(await keyCountDrift(pool, schema)).toEqual([]);

      b.term();
      expect((await b.exited).code).toBe(0);
      expect(b.fatalLines()).toEqual([]);
    });
  }, 60_000);
});
