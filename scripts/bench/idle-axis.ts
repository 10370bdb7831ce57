/**
 * The idle axis of `npm run bench -- --curves` (curves.ts): what 1, 10 and 100 idle nodes cost the
 * database per node, with each coordinator `--coordinator` names (`none,postgres` by default; `none` is
 * without one). Each point runs in its own process (idle-cost.ts); up to 10 nodes each have a pool of two
 * and a heartbeat connection of their own, as separate processes would; 100 share one pool of 20, as many
 * instances in one process would.
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

/** How a point of `nodes` nodes connects: its own pools up to 10 nodes, one shared pool above. */
const poolsFor = (nodes: number): Pick<IdleCostInput, "nodePool" | "sharedPool"> => ({
  nodePool: 2,
  sharedPool: nodes > 10 ? 20 : null,
});

/**
 * Connections a point opens at most: each node's pool and heartbeat connection (or the shared pool), a
 * LISTEN per node with the postgres coordinator, and the measuring process's own two.
 */
function idleConnections(input: IdleCostInput): number {
  const pools = input.sharedPool ?? input.nodes * (input.nodePool + 1);
  const listens = input.coordinator === "postgres" ? input.nodes : 0;
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
      const input: IdleCostInput = {
        url,
        nodes,
        coordinator: spec,
        ...poolsFor(nodes),
        settleMs: 10_000,
        windowMs: 30_000,
      };
      const needed = idleConnections(input);
      const { free, max } = await freeConnections(url);
      if (needed > free) {
        idle.push({
          nodes,
          coordinator,
          result: { skipped: `needs ${needed} connections; ${free} of max_connections ${max} free` },
        });
        continue;
      }
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
