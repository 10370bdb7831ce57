/**
 * Starts PGlite (PostgreSQL compiled to WebAssembly) in this process and serves it on the PostgreSQL wire
 * protocol through `@electric-sql/pglite-socket`, so pawl reaches it with the same `pg` driver, the same
 * statements and the same result parsing as a real server: nothing above the socket knows the difference.
 *
 * The socket is a Unix socket in a fresh directory only this user can enter (the socket server has no
 * authentication, and a TCP port on loopback is open to every local user); on Windows, where pg has no
 * Unix sockets, a loopback TCP port chosen by the system. The server takes one connection at a time:
 * PGlite is a single backend, and a second connection would share its session (prepared statements,
 * transaction) with the first.
 *
 * Both packages are loaded with a dynamic `import()` on first use, so an application on a real server
 * never loads the WebAssembly build.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { EmbeddedLocation } from "./embedded-url.js";
import { importOptional } from "../../core/errors.js";

/** Where the embedded server listens, in pg's terms: `host` is the socket's directory on POSIX. */
export interface EmbeddedEndpoint {
  host: string;
  port: number;
}

/** A running embedded server. */
export interface EmbeddedServer {
  /** The socket pg connects to. */
  readonly endpoint: EmbeddedEndpoint;
  /** Stops serving and closes the database (flushing a directory database). Idempotent. */
  close(): Promise<void>;
}

/** Options of {@link startEmbeddedServer}. */
export interface EmbeddedServerOptions {
  /**
   * A data directory dumped by PGlite's `dumpDataDir()` to start from instead of running initdb (about
   * 0.5 s instead of 3-4 s); memory databases only. The testing fixture uses it to boot many databases.
   */
  template?: Blob;
}

/** The socket's place, chosen before the server starts so the pool can be configured synchronously. */
export function reserveEndpoint(): { endpoint: EmbeddedEndpoint; socketDir: string | null } {
  if (process.platform === "win32") return { endpoint: { host: "127.0.0.1", port: 0 }, socketDir: null };
  // mkdtemp creates the directory with mode 0700: only this user can reach the socket inside.
  const socketDir = mkdtempSync(join(tmpdir(), "pawl-pglite-"));
  return { endpoint: { host: socketDir, port: 5432 }, socketDir };
}

/**
 * Boots PGlite at `location` and serves it at `endpoint` (a port of 0 is replaced by the one the system
 * chose). On failure everything started so far is closed again.
 */
export async function startEmbeddedServer(
  location: EmbeddedLocation,
  endpoint: EmbeddedEndpoint,
  options: EmbeddedServerOptions = {},
): Promise<EmbeddedServer> {
  // Optional peers: a user who never opens an embedded database does not install them.
  const [{ PGlite }, { PGLiteSocketServer }] = await Promise.all([
    importOptional("@electric-sql/pglite", "the embedded database", () => import("@electric-sql/pglite")),
    importOptional(
      "@electric-sql/pglite-socket",
      "the embedded database",
      () => import("@electric-sql/pglite-socket"),
    ),
  ]);
  const db = await PGlite.create({
    ...(location.kind === "directory" ? { dataDir: location.dataDir } : {}),
    ...(location.kind === "memory" && options.template ? { loadDataDir: options.template } : {}),
  });
  const isUnix = endpoint.host.startsWith("/");
  const server = new PGLiteSocketServer({
    db,
    maxConnections: 1,
    ...(isUnix
      ? { path: join(endpoint.host, `.s.PGSQL.${endpoint.port}`) }
      : { host: endpoint.host, port: endpoint.port }),
  });
  try {
    await server.start();
  } catch (error) {
    await db.close().catch(() => {});
    throw error;
  }
  const port = isUnix ? endpoint.port : Number(server.getServerConn().split(":").pop());
  let closing: Promise<void> | undefined;
  return {
    endpoint: { host: endpoint.host, port },
    close() {
      closing ??= (async () => {
        await server.stop().catch(() => {});
        await db.close().catch(() => {});
      })();
      return closing;
    },
  };
}

/** Removes the socket directory made by {@link reserveEndpoint}. */
export function removeSocketDir(socketDir: string | null): void {
  if (socketDir === null) return;
  try {
    rmSync(socketDir, { recursive: true, force: true });
  } catch {
    // A leftover empty directory in the temp dir is harmless.
  }
}
