/**
 * A session-level advisory lock held on a connection of its own, for as long as this process lives:
 * PostgreSQL releases it when the session ends, so when the process dies (kill -9 included) the lock is
 * free as soon as the server sees the socket close. The cluster uses one per node id
 * (cluster/cluster-services.ts) to tell a crashed previous run from a live duplicate.
 *
 * It never throws: a failed connect or a lost connection makes the lock "unavailable" (not held), and
 * {@link SessionLock.ensure} tries again. The connection must reach PostgreSQL itself: behind a
 * transaction pooler a session lock lands on whichever server connection the pooler picked, so callers
 * do not create one there.
 */
import pg from "pg";
import type { Logger } from "../core/logger.js";
import { connectTimeoutOf } from "./pool.js";

/** What {@link SessionLock.ensure} found. */
export type SessionLockState = "acquired" | "busy" | "unavailable";

/** A session lock on `(classKey, key)`, each hashed with hashtext. */
export class SessionLock {
  private client: pg.Client | null = null;
  private holding = false;
  private closed = false;

  constructor(
    private readonly connectionString: string,
    private readonly classKey: string,
    private readonly key: string,
    private readonly logger: Logger,
    private readonly applicationName = "pawl-session-lock",
  ) {}

  /** Whether the lock is held now (false after its connection was lost). */
  get held(): boolean {
    return this.holding;
  }

  /**
   * Takes the lock if it is not held: connects when there is no connection, then tries once without
   * waiting. Never throws.
   */
  async ensure(): Promise<SessionLockState> {
    if (this.holding) return "acquired";
    if (this.closed) return "unavailable";
    try {
      const client = this.client ?? (await this.connect());
      const res = await client.query<{ ok: boolean }>(
        "SELECT pg_try_advisory_lock(hashtext($1), hashtext($2)) AS ok",
        [this.classKey, this.key],
      );
      // A close() that ran meanwhile ended the session, and the lock with it.
      this.holding = res.rows[0]?.ok === true && this.client === client && !this.closed;
      return this.holding ? "acquired" : "busy";
    } catch (error) {
      this.logger.warn("could not take the node id's session lock", { error: String(error) });
      this.drop();
      return "unavailable";
    }
  }

  /** Ends the session, which releases the lock. Idempotent; never throws. */
  async close(): Promise<void> {
    this.closed = true;
    const client = this.client;
    this.drop();
    await client?.end().catch(() => {});
  }

  private async connect(): Promise<pg.Client> {
    const client = new pg.Client({
      connectionString: this.connectionString,
      connectionTimeoutMillis: connectTimeoutOf(this.connectionString),
      keepAlive: true,
      application_name: this.applicationName,
    });
    // A lost session lost the lock: say so once, and let the next ensure() reconnect.
    client.on("error", (error) => {
      if (this.client !== client) return;
      this.logger.warn("the node id's session lock connection failed; retaking it", { error: String(error) });
      this.drop();
    });
    client.on("end", () => {
      if (this.client === client) this.drop();
    });
    try {
      await client.connect();
    } catch (error) {
      await client.end().catch(() => {});
      throw error;
    }
    if (this.closed) {
      await client.end().catch(() => {});
      throw new Error("closed");
    }
    this.client = client;
    return client;
  }

  private drop(): void {
    const client = this.client;
    this.client = null;
    this.holding = false;
    if (client) void client.end().catch(() => {});
  }
}
