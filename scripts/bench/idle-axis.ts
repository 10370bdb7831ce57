/**
 * The idle axis of `npm run bench -- --curves` (curves.ts): what 1, 10 and 100 idle nodes cost the
 * database per node, without a coordinator and with each coordinator named in `--idle-coordinators`
 * (default `none,postgres`). Each point runs in its own process (idle-cost.ts); up to 10 nodes each have a
 * pool of their own, 100 share one pool of 20, as many instances in one process would.
 *
 * With the postgres coordinator every node also holds a LISTEN connection of its own, as separate
 * processes would. A point that would not fit in the server's free connections is skipped with the count
 * it needs: run the axis against a server with a larger `max_connections` (docs/benchmarks.md says how).
 */
import pg from "pg";
import type { IdleCostInput, IdleCostResult } from "./idle-cost.js";
import { runChild } from "./lib/child.js";
import { databaseName } from "./lib/common.js";
import { coordinatorSpec } from "./lib/coordinators.js";
import { renderTable } from "./lib/table.js";

/** One measured point of the idle axis. */
export interface IdlePoint {
  nodes: number;
  /** The coordinator's short name (or spec URL) as given. */
  coordinator: string;
  result: IdleCostResult | { skipped: string };
}

/** The node counts of the axis. */
const NODES = [1, 10, 100];

/** Pool size shared by the instances of a point above 10 nodes (idle-cost.ts). */
const SHARED_POOL = 20;

/**
 * Connections a point opens: each node's pool (2) or the shared pool, a LISTEN per node with the postgres
 * coordinator, and the measuring process's admin and CPU-meter connections.
 */
export function idleConnections(nodes: number, coordinator: string, shared: boolean): number {
  const pools = shared ? SHARED_POOL : 2 * nodes;
  const listens = coordinator === "postgres" ? nodes : 0;
  return pools + listens + 2;
}

/** Connections the server can still accept (its `max_connections` less the client backends it holds). */
async function freeConnections(url: string): Promise<{ free: number; max: number }> {
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    const { rows } = await db.query<{ max: string; used: string }>(
      `SELECT current_setting('max_connections') AS max,
              (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend') AS used`,
    );
    const max = Number(rows[0]!.max);
    // The backend answering this query is closed before the point starts.
    return { free: max - Number(rows[0]!.used) + 1, max };
  } finally {
    await db.end();
  }
}

/** Measures every point of the idle axis on `url`, prints its table, and returns the points. */
export async function runIdleAxis(url: string, coordinators: readonly string[]): Promise<IdlePoint[]> {
  const database = databaseName(url);
  const idle: IdlePoint[] = [];
  for (const coordinator of coordinators) {
    const spec = coordinatorSpec(coordinator);
    for (const nodes of NODES) {
      process.stderr.write(`curves: idle, ${nodes} nodes, coordinator ${coordinator}\n`);
      const shared = nodes > 10;
      const needed = idleConnections(nodes, spec, shared);
      const { free, max } = await freeConnections(url);
      if (needed > free) {
        idle.push({
          nodes,
          coordinator,
          result: { skipped: `needs ${needed} connections; ${free} of max_connections ${max} free` },
        });
        continue;
      }
      const input: IdleCostInput = {
        url,
        nodes,
        coordinator: spec,
        shared,
        settleMs: 10_000,
        windowMs: 30_000,
      };
      idle.push({
        nodes,
        coordinator,
        result: await runChild<IdleCostResult>("idle-cost.ts", input, { database }),
      });
    }
  }
  console.log("\nIdle cost per node");
  console.log(
    renderTable(
      [
        "nodes",
        "coordinator",
        "transactions/s per node",
        "xids/s per node",
        "WAL B/s per node",
        "db CPU per node (% of a core)",
        "connections",
      ],
      idle.map((p) =>
        "skipped" in p.result
          ? [String(p.nodes), p.coordinator, p.result.skipped, "-", "-", "-", "-"]
          : [
              String(p.nodes),
              p.coordinator,
              p.result.transactionsPerSecondPerNode.toFixed(2),
              p.result.xidsPerSecondPerNode.toFixed(2),
              p.result.walBytesPerSecondPerNode.toFixed(0),
              p.result.dbCpuPctPerNode.toFixed(3),
              String(p.result.connections),
            ],
      ),
    ),
  );
  return idle;
}
