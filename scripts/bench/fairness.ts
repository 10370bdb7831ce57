/**
 * `npm run bench -- --fairness`: the acceptance figures of concurrency keys (issue 27, docs/fairness.md),
 * each beside the same workload without keys where there is one. pawl only: no peer has this workload's
 * shape in its free edition (graphile-worker's named queues run one job at a time per queue).
 *
 * - noisy neighbour: A enqueues 20,000 jobs, B 20 jobs 1 s later; one node, concurrency 10, 20 ms jobs.
 *   B's pickup (handler start minus enqueue), with keys (A and B) and without.
 * - limit 3 on two nodes: 300 jobs of one key, 20 ms each, two nodes of concurrency 10: the most running at
 *   once (handlers in flight and leased rows sampled from the database) and the slots' use (job time over
 *   3 x wall time).
 * - 1,000 keys x 5 jobs, limit 2, two nodes: all finish, the most in flight per key.
 * - a critical job behind 20,000 low-priority ones (claim cursors on): its pickup.
 * - throughput: 20,000 no-op jobs without keys, with 1,000 keys and no limit, and without keys on the
 *   previous release (scripts/previous-release.txt, from git history: "jobs without a key at today's
 *   speed"). Three rounds, the variants interleaved within each, so load that comes and goes hits them
 *   alike; the median of each is reported.
 */
import pg from "pg";
import { createPawl, type Pawl } from "../../dist/src/index.js";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { queryOnce, quantile, sleep } from "./lib/common.js";
import { previousTree } from "../lib/previous-release.js";

/** What {@link runFairness} reports. */
export interface FairnessResult {
  noisy: { keys: boolean; bP50: number; bP99: number }[];
  limit3: { mostInFlight: number; mostLeased: number; utilization: number; wallMs: number };
  manyKeys: { finished: number; mostInFlight: number; wallMs: number };
  critical: { pickupMs: number }[];
  throughput: { variant: ThroughputVariant; jobsPerSec: number; runs: number[] }[];
}

/** The throughput workload's variants; see the module comment. */
export type ThroughputVariant = "previous release, no keys" | "no keys" | "1,000 keys, no limit";

type CreatePawl = typeof createPawl;

let seq = 0;
async function schemaNode(
  url: string,
  n = 1,
  concurrency = 10,
  create: CreatePawl = createPawl,
): Promise<{ nodes: Pawl[]; schema: string }> {
  const schema = `fair_${process.pid}_${seq++}`;
  const admin = create({ connectionString: url, schema });
  await admin.migrate();
  await admin.close();
  const nodes = Array.from({ length: n }, (_, i) =>
    create({ connectionString: url, schema, nodeId: `${schema}-${i}`, concurrency }),
  );
  return { nodes, schema };
}

async function drop(url: string, schema: string, nodes: Pawl[]): Promise<void> {
  await Promise.all(nodes.map((n) => n.close().catch(() => {})));
  await queryOnce(url, `DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
}

async function enqueueBatches(
  node: Pawl,
  total: number,
  item: (i: number) => Record<string, unknown>,
): Promise<void> {
  for (let i = 0; i < total; i += 1000) {
    await node.enqueueMany(
      Array.from({ length: Math.min(1000, total - i) }, (_, j) => ({ type: "t", ...item(i + j) }) as never),
    );
  }
}

async function noisy(url: string, keys: boolean): Promise<{ keys: boolean; bP50: number; bP99: number }> {
  const { nodes, schema } = await schemaNode(url);
  const node = nodes[0]!;
  const pickups: number[] = [];
  let allB: () => void = () => {};
  const bDone = new Promise<void>((r) => (allB = r));
  node.register("t", async (p: { b?: number }) => {
    if (p.b !== undefined) {
      pickups.push(Date.now() - p.b);
      if (pickups.length === 20) allB();
    }
    await sleep(20);
  });
  await node.start();
  await enqueueBatches(node, 20_000, () => ({ payload: {}, ...(keys ? { concurrencyKey: "A" } : {}) }));
  await sleep(1000);
  const at = Date.now();
  await node.enqueueMany(
    Array.from(
      { length: 20 },
      () => ({ type: "t", payload: { b: at }, ...(keys ? { concurrencyKey: "B" } : {}) }) as never,
    ),
  );
  await bDone;
  await drop(url, schema, nodes);
  return { keys, bP50: Math.round(quantile(pickups, 0.5)), bP99: Math.round(quantile(pickups, 0.99)) };
}

async function limit3(url: string): Promise<FairnessResult["limit3"]> {
  const { nodes, schema } = await schemaNode(url, 2);
  let inFlight = 0;
  let most = 0;
  let done = 0;
  let first = 0;
  let finished: () => void = () => {};
  const all = new Promise<void>((r) => (finished = r));
  for (const n of nodes)
    n.register("t", async () => {
      if (first === 0) first = Date.now();
      most = Math.max(most, ++inFlight);
      await sleep(20);
      inFlight--;
      if (++done === 300) finished();
    });
  await Promise.all(nodes.map((n) => n.start()));
  await enqueueBatches(nodes[0]!, 300, () => ({
    payload: {},
    concurrencyKey: "tenant-42",
    concurrencyLimit: 3,
  }));
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  let mostLeased = 0;
  let over = false;
  void all.then(() => (over = true));
  while (!over) {
    const r = await c.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM "${schema}".scheduler_job_queue WHERE status = 'PENDING' AND picked_by IS NOT NULL`,
    );
    mostLeased = Math.max(mostLeased, r.rows[0]?.n ?? 0);
    await sleep(2);
  }
  const wallMs = Date.now() - first;
  await c.end();
  await drop(url, schema, nodes);
  return {
    mostInFlight: most,
    mostLeased,
    utilization: Math.round(((300 * 20) / (3 * wallMs)) * 100) / 100,
    wallMs,
  };
}

async function manyKeys(url: string): Promise<FairnessResult["manyKeys"]> {
  const { nodes, schema } = await schemaNode(url, 2);
  const now = new Map<string, number>();
  let most = 0;
  let done = 0;
  let finished: () => void = () => {};
  const all = new Promise<void>((r) => (finished = r));
  for (const n of nodes)
    n.register("t", async (p: { k: string }) => {
      const x = (now.get(p.k) ?? 0) + 1;
      now.set(p.k, x);
      most = Math.max(most, x);
      await sleep(5);
      now.set(p.k, (now.get(p.k) ?? 1) - 1);
      if (++done === 5000) finished();
    });
  await Promise.all(nodes.map((n) => n.start()));
  const t0 = Date.now();
  await enqueueBatches(nodes[0]!, 5000, (i) => ({
    payload: { k: `key-${i % 1000}` },
    concurrencyKey: `key-${i % 1000}`,
    concurrencyLimit: 2,
  }));
  await all;
  const wallMs = Date.now() - t0;
  await drop(url, schema, nodes);
  return { finished: done, mostInFlight: most, wallMs };
}

async function critical(url: string): Promise<{ pickupMs: number }> {
  const { nodes, schema } = await schemaNode(url);
  const node = nodes[0]!;
  let got: (ms: number) => void = () => {};
  const picked = new Promise<number>((r) => (got = r));
  node.register("t", async (p: { at?: number }) => {
    if (p.at !== undefined) got(Date.now() - p.at);
    await sleep(20);
  });
  await node.start();
  await enqueueBatches(node, 20_000, () => ({ payload: {}, priority: "low" }));
  await sleep(1000);
  await node.enqueue("t", { at: Date.now() }, { priority: "critical" });
  const pickupMs = await picked;
  await drop(url, schema, nodes);
  return { pickupMs };
}

async function throughput(url: string, create: CreatePawl, keys: boolean): Promise<number> {
  const { nodes, schema } = await schemaNode(url, 1, 10, create);
  const node = nodes[0]!;
  let done = 0;
  let finished: () => void = () => {};
  const all = new Promise<void>((r) => (finished = r));
  node.register("t", async () => {
    if (++done === 20_000) finished();
  });
  await enqueueBatches(node, 20_000, (i) => ({
    payload: {},
    ...(keys ? { concurrencyKey: `key-${i % 1000}` } : {}),
  }));
  const t0 = Date.now();
  await node.start();
  await all;
  const s = (Date.now() - t0) / 1000;
  await drop(url, schema, nodes);
  return Math.round(20_000 / s);
}

/** The previous release's createPawl, from its own sources (tsx runs them). */
async function previousCreatePawl(): Promise<CreatePawl> {
  const dir = previousTree();
  const mod = (await import(pathToFileURL(join(dir, "src", "index.ts")).href)) as { createPawl: CreatePawl };
  return mod.createPawl;
}

async function throughputs(url: string, log: (s: string) => void): Promise<FairnessResult["throughput"]> {
  const variants: [ThroughputVariant, CreatePawl, boolean][] = [
    ["previous release, no keys", await previousCreatePawl(), false],
    ["no keys", createPawl, false],
    ["1,000 keys, no limit", createPawl, true],
  ];
  const runs = new Map<ThroughputVariant, number[]>(variants.map(([v]) => [v, []]));
  for (let round = 0; round < 3; round++) {
    for (const [variant, create, keys] of variants) {
      const r = await throughput(url, create, keys);
      runs.get(variant)!.push(r);
      log(`throughput round ${round + 1} ${variant}: ${r} jobs/s`);
    }
  }
  return variants.map(([variant]) => ({
    variant,
    jobsPerSec: quantile(runs.get(variant)!, 0.5),
    runs: runs.get(variant)!,
  }));
}

/** Runs every fairness workload once on `databaseUrl`; progress goes to `log`. */
export async function runFairness(o: {
  databaseUrl: string;
  log?: (s: string) => void;
}): Promise<FairnessResult> {
  const log = o.log ?? ((s: string) => console.error(s));
  const url = o.databaseUrl;
  const result: FairnessResult = {
    noisy: [],
    limit3: { mostInFlight: 0, mostLeased: 0, utilization: 0, wallMs: 0 },
    manyKeys: { finished: 0, mostInFlight: 0, wallMs: 0 },
    critical: [],
    throughput: [],
  };
  result.throughput = await throughputs(url, log);
  log(`throughput ${JSON.stringify(result.throughput)}`);
  result.noisy.push(await noisy(url, true));
  log(`noisy ${JSON.stringify(result.noisy)}`);
  result.limit3 = await limit3(url);
  log(`limit3 ${JSON.stringify(result.limit3)}`);
  result.manyKeys = await manyKeys(url);
  log(`manyKeys ${JSON.stringify(result.manyKeys)}`);
  for (let i = 0; i < 3; i++) result.critical.push(await critical(url));
  log(`critical ${JSON.stringify(result.critical)}`);
  if (process.env.PAWL_BENCH_NOISY_WITHOUT_KEYS !== "false") {
    result.noisy.push(await noisy(url, false));
    log(`noisy ${JSON.stringify(result.noisy)}`);
  }
  return result;
}
