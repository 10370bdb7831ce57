/**
 * What idle nodes cost the database (scripts/bench/curves.ts): `nodes` pawl instances in this process,
 * started with nothing to do, settled for `settleMs`, then watched for `windowMs`. Reported per node:
 * transactions per second (pg_stat_database; each of pawl's idle statements, a poll or a heartbeat, is one),
 * the transaction ids assigned and the WAL written (both the whole server's: a quiet server is assumed),
 * and the CPU the bench database's backends spent. A read-only statement takes no transaction id and
 * writes no WAL; a write, or a row lock, takes one and its commit waits for a WAL flush. With `sharedPool`, the instances share one pg.Pool (as
 * many instances in one process would), since this server's max_connections cannot hold a pool of each.
 */
import pg from "pg";
import { createPawl, type Pawl } from "../../dist/src/index.js";
import { childInput, childMain, closeWindow, openWindow } from "./lib/child.js";
import { databaseName, sleep, walBytes } from "./lib/common.js";
import { PAWL_SCHEMA, resetPawlSchema } from "./systems/pawl.js";

/** One point of the idle-cost table. */
export interface IdleCostInput {
  url: string;
  nodes: number;
  /** The coordinator spec the nodes are created with (lib/coordinators.ts). */
  coordinator: string;
  /** Each node's own pool size (`maxConnections`); each such node also opens its heartbeat connection. */
  nodePool: number;
  /** When set, the nodes share one pool of this size instead (and open no heartbeat connection). */
  sharedPool: number | null;
  settleMs: number;
  windowMs: number;
}

/** What the idle nodes cost. */
export interface IdleCostResult {
  transactionsPerSecondPerNode: number;
  /** Transaction ids assigned per second per node (the server's: txid_current_snapshot()'s xmax moving). */
  xidsPerSecondPerNode: number;
  /** WAL bytes per second per node (the server's pg_current_wal_lsn() moving). */
  walBytesPerSecondPerNode: number;
  /** Database CPU per node, as a share of one core (%). */
  dbCpuPctPerNode: number;
  connections: number;
}

async function transactions(db: pg.Pool): Promise<number> {
  const { rows } = await db.query<{ n: string }>(
    "SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = current_database()",
  );
  return Number(rows[0]!.n);
}

/** The next transaction id the server will assign (reading it assigns none). */
async function nextXid(db: pg.Pool): Promise<number> {
  const { rows } = await db.query<{ x: string }>("SELECT txid_snapshot_xmax(txid_current_snapshot()) AS x");
  return Number(rows[0]!.x);
}

async function measure(input: IdleCostInput): Promise<IdleCostResult> {
  const admin = new pg.Pool({ connectionString: input.url, max: 1 });
  await resetPawlSchema(input.url, PAWL_SCHEMA, admin);
  const shared =
    input.sharedPool === null ? null : new pg.Pool({ connectionString: input.url, max: input.sharedPool });
  const nodes: Pawl[] = [];
  try {
    for (let k = 0; k < input.nodes; k++) {
      const node = createPawl({
        ...(shared ? { pool: shared } : { connectionString: input.url, maxConnections: input.nodePool }),
        schema: PAWL_SCHEMA,
        nodeId: `idle-${k}`,
        coordinator: input.coordinator,
      });
      node.register("noop", () => {});
      await node.start();
      nodes.push(node);
    }
    await sleep(input.settleMs);
    // pg_stat_database is updated when a backend goes idle, at most about once a second: the window is
    // long enough that the edges do not matter.
    const x0 = await transactions(admin);
    const xid0 = await nextXid(admin);
    const wal0 = await walBytes(admin);
    await openWindow(databaseName(input.url));
    await sleep(input.windowMs);
    const cpu = await closeWindow();
    const xid1 = await nextXid(admin);
    const wal1 = await walBytes(admin);
    await sleep(1500);
    const x1 = await transactions(admin);
    const { rows } = await admin.query<{ n: string }>(
      "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database()",
    );
    const seconds = input.windowMs / 1000;
    return {
      transactionsPerSecondPerNode: (x1 - x0) / seconds / input.nodes,
      xidsPerSecondPerNode: (xid1 - xid0) / seconds / input.nodes,
      walBytesPerSecondPerNode: Number(wal1 - wal0) / seconds / input.nodes,
      dbCpuPctPerNode: (100 * cpu.dbCpuMs) / cpu.wallMs / input.nodes,
      connections: Number(rows[0]!.n),
    };
  } finally {
    await Promise.all(nodes.map((n) => n.close()));
    await shared?.end();
    await admin.end();
  }
}

childMain(() => measure(childInput<IdleCostInput>()));
