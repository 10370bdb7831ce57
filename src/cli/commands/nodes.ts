/**
 * `pawl nodes`: the cluster as the store sees it. Each node's heartbeat age (by the database's clock, so
 * skewed hosts agree), whether it is within the dead-node threshold, its load and the job types it
 * registered (from the registry its heartbeat publishes), then the maintenance leases and their holders.
 */
import type { NodeStatus } from "../../store/cluster/node-sql.js";
import type { LockRow } from "../../store/cluster/lock-sql.js";
import { flagOpt, jsonOption } from "../args.js";
import type { Command } from "../command.js";
import { cell, iso, json, plural, table } from "../format.js";

/**
 * A duration for people, in its two largest units: `850ms`, `12.3s`, `4m 05s`, `2h 10m`, `3d 4h`.
 * Negative durations (a lease's expiry in the past) are shown as `-` and the duration.
 */
export function duration(ms: number): string {
  if (ms < 0) return `-${duration(-ms)}`;
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const s = Math.floor(ms / 1000);
  const pad = (n: number) => String(n).padStart(2, "0");
  if (s < 3600) return `${Math.floor(s / 60)}m ${pad(s % 60)}s`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h ${pad(Math.floor(s / 60) % 60)}m`;
  return `${Math.floor(s / 86_400)}d ${Math.floor(s / 3600) % 24}h`;
}

/** The types a node registered, from its published registry ("-" for a node that publishes none). */
function typesOf(n: NodeStatus): string[] {
  return n.info.registry?.types.map((t) => t.type) ?? [];
}

/**
 * A node's release: its package version and, from 0.2 on, the schema version it needs (`0.2.0 schema 12`),
 * so a rolling upgrade shows which releases run side by side.
 */
export function releaseOf(n: NodeStatus): string {
  const schema = typeof n.info.schemaVersion === "number" ? ` schema ${n.info.schemaVersion}` : "";
  return cell(`${n.info.version}${schema}`, 40);
}

/** The table of nodes. */
export function nodesTable(nodes: readonly NodeStatus[]): string {
  return table(
    ["NODE", "STATE", "HEARTBEAT AGE", "STARTED", "BUSY", "COORDINATOR", "TYPES", "RELEASE"],
    nodes.map((n) => {
      const dead = !n.alive || n.info.deadAt !== undefined;
      const r = n.info.registry;
      return [
        cell(n.nodeId, 40),
        dead ? "dead" : "alive",
        duration(n.ageMs),
        iso(n.startedAt),
        r ? `${r.busy}/${r.concurrency}` : `-/${n.info.concurrency}`,
        cell(n.info.coordinator, 20),
        cell(typesOf(n).join(",") || null, 80),
        releaseOf(n),
      ];
    }),
  );
}

/** The table of leases; `at` is the database's time of the read. */
export function leasesTable(leases: readonly LockRow[], at: Date): string {
  return table(
    ["LEASE", "OWNER", "HELD", "EXPIRES IN"],
    leases.map((l) => [
      cell(l.name, 40),
      cell(l.owner, 40),
      l.held ? "yes" : "expired",
      duration(l.expiresAt.getTime() - at.getTime()),
    ]),
  );
}

/** `pawl nodes [--json]`. */
export const nodesCommand: Command = {
  words: ["nodes"],
  summary: "list the cluster's nodes (heartbeat age, types) and leases",
  usage: "nodes [--json]",
  details:
    "Lists every node row, oldest first: alive or dead (heartbeat within the dead-node threshold, by the\n" +
    "database's clock), its heartbeat's age, when it started, busy slots of its concurrency, its\n" +
    "coordinator, and the job types it registered. Then the maintenance leases (orphan sweep, pruning,\n" +
    "recurring scheduling): who holds each and when it expires.",
  options: { ...jsonOption },
  positionals: { min: 0, max: 0, names: "" },
  async run(ctx, args) {
    const pawl = ctx.pawl();
    const threshold = pawl.config.runtimeOptions.cluster.deadNodeThresholdMs;
    const at = await pawl.store.databaseTime();
    const nodes = await pawl.store.listNodes(threshold, at);
    const leases = await pawl.store.listLocks(at);
    if (flagOpt(args, "json")) {
      ctx.out(
        json({
          at,
          deadNodeThresholdMs: threshold,
          nodes: nodes.map((n) => ({
            nodeId: n.nodeId,
            alive: n.alive && n.info.deadAt === undefined,
            heartbeatAgeMs: n.ageMs,
            heartbeatAt: n.heartbeatAt,
            startedAt: n.startedAt,
            types: typesOf(n),
            info: n.info,
          })),
          leases,
        }),
      );
      return 0;
    }
    ctx.out(nodes.length === 0 ? "no nodes" : `${nodesTable(nodes)}\n(${plural(nodes.length, "node")})`);
    ctx.out("");
    ctx.out(
      leases.length === 0 ? "no leases" : `${leasesTable(leases, at)}\n(${plural(leases.length, "lease")})`,
    );
    return 0;
  },
};
