/**
 * The configuration rules of the embedded database, applied by resolveConfig: what it defaults to and
 * what it refuses, decided once at createPawl.
 */
import type pg from "pg";
import type { Coordinator } from "../../coordinators/spi.js";
import { ValidationError } from "../core/errors.js";
import { EmbeddedPool } from "../db/embedded/embedded-pool.js";
import { isEmbeddedUrl } from "../db/embedded/embedded-url.js";

/** Whether pawl will run on an embedded database: the pool given is one, or (no pool) the URL is one. */
export function usesEmbeddedDatabase(pool: pg.Pool | undefined, connectionString: string): boolean {
  return pool === undefined ? isEmbeddedUrl(connectionString) : pool instanceof EmbeddedPool;
}

/**
 * The coordinator on an embedded database: `in-memory` unless one is chosen (`auto` means it too). `postgres` (LISTEN on the
 * job database) is refused: its LISTEN needs a connection of its own, and the embedded database serves
 * one (a `postgres://` URL naming another, real server is left alone). Every node on an embedded
 * database is in this process, so the in-memory bus reaches all of them.
 *
 * @throws ValidationError `INVALID_CONFIG` for the postgres coordinator.
 */
export function embeddedCoordinator(chosen: string | Coordinator | undefined): string | Coordinator {
  // `auto` picks LISTEN on a server; here the in-memory bus is what reaches every node.
  if (chosen === undefined || (typeof chosen === "string" && /^auto$/i.test(chosen.trim())))
    return "in-memory";
  if (typeof chosen === "string" && /^postgres(ql)?$/i.test(chosen.trim())) {
    throw new ValidationError(
      "INVALID_CONFIG",
      "the postgres coordinator needs a LISTEN connection of its own, which the embedded database " +
        "(one connection, one process) cannot give: use in-memory (its default) or none",
    );
  }
  return chosen;
}
