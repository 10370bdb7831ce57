/**
 * What a node writes into scheduler_node.node_info: pawl's version, the host, the pid, its concurrency
 * and transport, and a random instance id per run (which tells a restarted node id from the run before).
 */
import { loadMigrations } from "../store/migrations/migrate.js";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { hostname } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { NodeInfo } from "../store/cluster/node-sql.js";

let cachedVersion: string | undefined;

/** pawl's version, from the package.json above this file (src/ under tsx, dist/src/ when built). */
export function pawlVersion(): string {
  if (cachedVersion !== undefined) return cachedVersion;
  cachedVersion = "unknown";
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    const file = join(dir, "package.json");
    if (existsSync(file)) {
      try {
        const pkg = JSON.parse(readFileSync(file, "utf8")) as { name?: string; version?: string };
        if (pkg.name === "pawl" && typeof pkg.version === "string") {
          cachedVersion = pkg.version;
          break;
        }
      } catch {
        // An unreadable package.json further up is not ours; keep looking.
      }
    }
    dir = dirname(dir);
  }
  return cachedVersion;
}

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
  return { version: pawlVersion(), schemaVersion: releaseSchemaVersion() };
}

/** A fresh instance id. */
export function newInstanceId(): string {
  return randomBytes(8).toString("hex");
}

/** This process's node info. */
export function localNodeInfo(concurrency: number, coordinator: string, instance: string): NodeInfo {
  return {
    version: pawlVersion(),
    schemaVersion: releaseSchemaVersion(),
    host: hostname(),
    pid: process.pid,
    concurrency,
    coordinator,
    instance,
  };
}
