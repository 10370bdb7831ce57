/**
 * The embedded database as a `pg.Pool`: one connection to PGlite served in this process
 * (embedded-server.ts). Everything above it (the job store, held clients and transactions, migrations,
 * the runtime) is the code that runs against a server, unchanged.
 *
 * Why one connection: PGlite is a single backend. Several socket connections would share its one
 * session, so pawl's named prepared statements would collide (`prepared statement ... already exists`)
 * and one connection's BEGIN would take in another's statements. With one connection, statements queue
 * in pg-pool, which is also where a statement waits while a held transaction runs. The catch is that
 * code holding the connection must never wait for a second one: pawl's held transactions run all their
 * statements on the held client (test/integration/db/embedded-*.test.ts run every path that holds one).
 *
 * The pool is built synchronously (createPawl is synchronous) and boots the database in the background:
 * `connect()` (and so `query()`) waits for the boot before pg-pool's connect timeout starts, so the first
 * statement of a cold start is not failed by a 10 s timeout while WebAssembly compiles. A boot that fails
 * fails every statement with a DatabaseUnavailableError naming the cause.
 */
import pg from "pg";
import { DatabaseUnavailableError } from "../../core/errors.js";
import type { Logger } from "../../core/logger.js";
import { connectHook, watchIdleErrors } from "../pool-hooks.js";
import { lockDataDir, type DataDirLock } from "./data-dir-lock.js";
import {
  removeSocketDir,
  reserveEndpoint,
  startEmbeddedServer,
  type EmbeddedServer,
  type EmbeddedServerOptions,
} from "./embedded-server.js";
import { parseEmbeddedUrl, type EmbeddedLocation } from "./embedded-url.js";

type ConnectCallback = (
  err: Error | undefined,
  client: pg.PoolClient | undefined,
  done: (release?: unknown) => void,
) => void;

/**
 * A pool of one connection to an embedded PGlite database, opened from a `pglite://` URL. Ending the pool
 * closes the database (and flushes a directory database).
 *
 * @example
 * ```ts
 * const pool = new EmbeddedPool("pglite://memory", silentLogger);
 * await pool.ready;
 * await pool.query("SELECT 1");
 * await pool.end();
 * ```
 */
export class EmbeddedPool extends pg.Pool {
  /** Where the data lives. */
  readonly location: EmbeddedLocation;
  /** Resolves once the database answers; rejects with the boot's DatabaseUnavailableError. */
  readonly ready: Promise<void>;
  /** How long the boot took (ms), once it has. */
  bootMs: number | undefined;
  private booted = false;
  private server: EmbeddedServer | undefined;
  private readonly lock: DataDirLock | null;
  private readonly socketDir: string | null;
  private closing: Promise<void> | undefined;

  /**
   * @param connectionString A `pglite://` URL (see parseEmbeddedUrl).
   * @param options `template`: a dumped data directory to boot a memory database from.
   * @throws PawlError `INVALID_CONFIG` for a malformed URL, or a directory another open holds.
   */
  constructor(connectionString: string, logger: Logger, options: EmbeddedServerOptions = {}) {
    const location = parseEmbeddedUrl(connectionString);
    const lock = location.kind === "directory" ? lockDataDir(location.dataDir) : null;
    let reserved: ReturnType<typeof reserveEndpoint>;
    try {
      reserved = reserveEndpoint();
    } catch (error) {
      lock?.release();
      throw error;
    }
    const { endpoint, socketDir } = reserved;
    super({
      host: endpoint.host,
      port: endpoint.port,
      user: "postgres",
      database: "postgres",
      max: 1,
      // The one connection stays: closing it frees nothing in PGlite, and (over TCP on Windows) would
      // leave the server's single slot to whichever local process connects first.
      idleTimeoutMillis: 0,
      connectionTimeoutMillis: 10_000,
      application_name: "pawl",
      onConnect: async (client) => {
        // A new connection after a broken one meets the same backend session: clear what the old one
        // left (its prepared statements above all), as a fresh backend would start.
        await client.query("DISCARD ALL");
        await connectHook(logger)(client);
      },
    });
    this.location = location;
    this.lock = lock;
    this.socketDir = socketDir;
    watchIdleErrors(this, logger);
    const started = Date.now();
    this.ready = startEmbeddedServer(location, endpoint, options).then(
      (server) => {
        this.server = server;
        // On Windows the system chose the port only now; pg-pool reads its options per new client.
        this.options.port = server.endpoint.port;
        this.booted = true;
        this.bootMs = Date.now() - started;
        logger.info("embedded database ready", { location: describeLocation(location), ms: this.bootMs });
      },
      (error: unknown) => {
        this.releaseResources();
        throw new DatabaseUnavailableError(
          `pawl: the embedded database (${describeLocation(location)}) could not start: ${String(error)}`,
          false,
          { cause: error },
        );
      },
    );
    // Nobody may ever connect; the boot's failure then must not become an unhandled rejection.
    this.ready.catch(() => {});
  }

  override connect(): Promise<pg.PoolClient>;
  override connect(callback: ConnectCallback): void;
  override connect(callback?: ConnectCallback): Promise<pg.PoolClient> | void {
    if (!callback) {
      return new Promise((resolve, reject) =>
        this.connect((error, client) => (error || !client ? reject(error) : resolve(client))),
      );
    }
    // Once booted, straight through: held-client.ts relies on pg-pool calling back synchronously.
    if (this.booted) return this.connectWithHandover(callback, 0);
    this.ready.then(
      () => this.connectWithHandover(callback, 0),
      (error: Error) => callback(error, undefined, () => {}),
    );
  }

  /**
   * pg-pool drops a connection whose query failed (pool.query releases it with the error) and opens a new
   * one at once. The socket server takes one connection and notices the old one's close a tick later, so
   * the new one can be turned away (EPIPE, a reset, or an early end) in that gap. Such a refusal is retried
   * a few times, a few milliseconds apart; success is still handed over synchronously, inside pg-pool's
   * callback.
   */
  private connectWithHandover(callback: ConnectCallback, attempt: number): void {
    super.connect((error, client, done) => {
      if (error !== undefined && attempt < maxHandoverRetries && isHandoverRefusal(error)) {
        setTimeout(() => this.connectWithHandover(callback, attempt + 1), handoverRetryMs * (attempt + 1));
        return;
      }
      callback(error, client, done);
    });
  }

  override end(): Promise<void>;
  override end(callback: () => void): void;
  override end(callback?: () => void): Promise<void> | void {
    this.closing ??= (async () => {
      const ok = await this.ready.then(
        () => true,
        () => false,
      );
      if (ok) await super.end();
      await this.server?.close();
      this.releaseResources();
    })();
    if (callback) {
      this.closing.then(callback, callback);
      return;
    }
    return this.closing;
  }

  private releaseResources(): void {
    removeSocketDir(this.socketDir);
    this.lock?.release();
  }
}

/** The location for logs and errors. */
export function describeLocation(location: EmbeddedLocation): string {
  return location.kind === "memory" ? "in memory" : location.dataDir;
}

/** How often a connection turned away during a handover is tried again, and how far apart (ms, growing). */
const maxHandoverRetries = 5;
const handoverRetryMs = 5;

/** Whether a failed connect is the socket server still holding the previous connection. */
function isHandoverRefusal(error: Error): boolean {
  const code = (error as { code?: unknown }).code;
  return (
    code === "EPIPE" ||
    code === "ECONNRESET" ||
    /Connection terminated unexpectedly|Connection terminated/.test(error.message)
  );
}
