/**
 * What a node writes into scheduler_node.node_info: pawl's version, the host, the pid, its concurrency
 * and transport, and a random instance id per run (which tells a restarted node id from the run before).
 */
import { packageVersion } from "../core/package-version.js";
import { loadMigrations } from "../store/migrations/migrate.js";
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { NodeInfo } from "../store/cluster/node-sql.js";

/** The newest migration this release ships: the schema version its nodes need. */
export function releaseSchemaVersion(): number {
  return Math.max(0, ...loadMigrations().map((m) => m.version));
}

/**
 * This release: the package's version and the schema version its nodes need (what heartbeats publish and
 * the metrics' `pawl_build_info` labels carry).
 *
 * @example
 * ```ts
 * releaseInfo(); // { version: "0.2.0", schemaVersion: 12 }
 * ```
 */
export function releaseInfo(): { version: string; schemaVersion: number } {
  return { version: packageVersion(), schemaVersion: releaseSchemaVersion() };
}

/** A fresh instance id. */
export function newInstanceId(): string {
  return randomBytes(8).toString("hex");
}

/** This process's node info. */
export function localNodeInfo(concurrency: number, coordinator: string, instance: string): NodeInfo {
  return {
    version: packageVersion(),
    schemaVersion: releaseSchemaVersion(),
    host: hostname(),
    pid: process.pid,
    concurrency,
    coordinator,
    instance,
  };
}
