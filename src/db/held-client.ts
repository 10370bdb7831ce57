/**
 * The one way pawl holds a pooled connection. pg-pool listens for a client's `error` only while the client
 * sits idle in the pool; between `pool.connect()` and `release()` nobody does, so a FATAL that reaches a
 * checked-out client (an administrator's `pg_terminate_backend`, a server restart) becomes an unhandled
 * `error` event and kills the host process. And it does so even when a query is in flight: pg rejects
 * the query, then reports the closed socket as an `error` event as well.
 *
 * {@link withHeldClient} listens for `error` for exactly as long as the client is held, turns the error
 * into a failure of the operation (the query in flight fails by itself; the next one is refused with the
 * original error), and releases the client as broken (`release(err)`) so the pool drops it instead of
 * handing a dead connection to the next caller. Every fault is also reported on the pool as a
 * {@link CONNECTION_FAULT} event, which the runtime counts. No code of pawl calls `pool.connect()`
 * anywhere else (test/integration/db/fault-checkout-sites.test.ts enforces it).
 */
import type { EventEmitter } from "node:events";
import type pg from "pg";
import type { QueryConfig, QueryResult, QueryResultRow } from "pg";
import { toError } from "../core/events.js";
import { asDatabaseUnavailable, poisonsConnection } from "./connection-failure.js";
import type { Queryable } from "./sql.js";

/**
 * The event a pawl pool emits for every connection fault it survived: a held client's error, or an idle
 * client's (see createPool). Not `error`, which a pool the user brings may have no listener for.
 */
export const CONNECTION_FAULT = "pawl:connection-fault";

/** What a {@link CONNECTION_FAULT} event carries. */
export interface ConnectionFault {
  /** `held`: a client checked out by pawl; `idle`: a client waiting in pawl's own pool. */
  source: "held" | "idle";
  error: Error;
}

/** Reports a fault on the pool's {@link CONNECTION_FAULT} channel (a no-op when nobody listens). */
export function reportConnectionFault(pool: pg.Pool, fault: ConnectionFault): void {
  try {
    pool.emit(CONNECTION_FAULT, fault);
  } catch {
    // A listener's throw must not turn a survived fault into a crash.
  }
}

/** Calls `listener` for every fault reported on `pool`; returns the unsubscribe function. */
export function onConnectionFault(pool: pg.Pool, listener: (fault: ConnectionFault) => void): () => void {
  // pg's typings list only pg-pool's own events; the pool is a plain EventEmitter underneath.
  const emitter: EventEmitter = pool;
  // Every node on a shared pool (a pool the user passes to several instances) listens here: each of
  // pawl's listeners raises the limit by one, so they never trip Node's leak warning on the host's pool.
  const limited = emitter.getMaxListeners() > 0;
  if (limited) emitter.setMaxListeners(emitter.getMaxListeners() + 1);
  emitter.on(CONNECTION_FAULT, listener);
  let subscribed = true;
  return () => {
    if (!subscribed) return;
    subscribed = false;
    emitter.removeListener(CONNECTION_FAULT, listener);
    if (limited && emitter.getMaxListeners() > 0) emitter.setMaxListeners(emitter.getMaxListeners() - 1);
  };
}

/** A checked-out client as the operation sees it: queries fail once its connection has failed. */
export interface HeldClient extends Queryable {
  /** The connection's error, once it has had one (the client is then released as broken). */
  readonly failure: Error | undefined;
  /** Marks the connection broken from outside pg's own `error` event (a ROLLBACK that failed). */
  markBroken(error: unknown): void;
}

/**
 * Checks out a client, runs `fn` with it, and releases it, dropping it from the pool when its connection
 * failed meanwhile. A failure to connect at all is a DatabaseUnavailableError.
 *
 * @example
 * ```ts
 * const n = await withHeldClient(pool, async (db) => (await db.query("SELECT 1 AS n")).rows[0].n);
 * ```
 */
export async function withHeldClient<T>(pool: pg.Pool, fn: (db: HeldClient) => Promise<T>): Promise<T> {
  let failure: Error | undefined;
  const onError = (error: unknown): void => {
    if (failure !== undefined) return; // pg reports the FATAL, then the closed socket: one fault
    failure = toError(error);
    reportConnectionFault(pool, { source: "held", error: failure });
  };
  const client = await checkOut(pool, onError);
  const held: HeldClient = {
    get failure() {
      return failure;
    },
    markBroken: onError,
    query<R extends QueryResultRow = QueryResultRow>(
      config: QueryConfig | string,
      values?: unknown[],
    ): Promise<QueryResult<R>> {
      // pg would refuse it too, but with "not queryable"; the connection's own error says what happened.
      if (failure !== undefined) return Promise.reject(failure);
      return client.query<R>(config, values);
    },
  };
  try {
    return await fn(held);
  } catch (error) {
    // A statement refused by a read-only or recovering server (a failover in progress) leaves a healthy
    // socket to the wrong server: it must not go back to the pool (pool.query drops its client on any error).
    if (failure === undefined && poisonsConnection(error)) failure = toError(error);
    throw error;
  } finally {
    // Released with the listener still attached: pg-pool adds its own idle listener inside release(),
    // and an error landing between a removal and that would again have nobody to hear it.
    client.release(failure);
    client.removeListener("error", onError);
  }
}

/** How pawl opens each of its transactions (see inHeldTransaction). */
export const BEGIN_READ_COMMITTED = "BEGIN ISOLATION LEVEL READ COMMITTED";

/** Options of {@link inHeldTransaction}. */
export interface HeldTransactionOptions {
  /** Each statement of the transaction is canceled after this long (ms; SQLSTATE 57014); absent or 0: none. */
  statementTimeoutMs?: number;
}

/** Whether `error` is a statement canceled by `statement_timeout` (or a cancel request): SQLSTATE 57014. */
export function isStatementCanceled(error: unknown): boolean {
  return typeof error === "object" && error !== null && (error as { code?: unknown }).code === "57014";
}

/**
 * Runs `fn` in a read-committed transaction of its own on a held client: committed when `fn` resolves, rolled back when
 * it throws (a rollback that fails marks the connection broken, so the pool drops it).
 *
 * @example
 * ```ts
 * await inHeldTransaction(pool, async (db) => {
 *   await db.query("SELECT pg_advisory_xact_lock(1)");
 *   await db.query("INSERT INTO t VALUES (1)");
 * });
 * ```
 */
export function inHeldTransaction<T>(
  pool: pg.Pool,
  fn: (db: HeldClient) => Promise<T>,
  options: HeldTransactionOptions = {},
): Promise<T> {
  const ms = options.statementTimeoutMs;
  // The budget is set in the transaction's first round trip (one simple query, two statements), so it
  // costs no extra round trip and holds behind a transaction pooler too: SET LOCAL ends with the transaction.
  const begin =
    ms !== undefined && ms > 0
      ? `${BEGIN_READ_COMMITTED}; SET LOCAL statement_timeout = ${Math.floor(ms)}`
      : BEGIN_READ_COMMITTED;
  return withHeldClient(pool, async (db) => {
    // Pinned, whatever the role's or database's default_transaction_isolation says: pawl's transactions
    // take a lock and then read what the lock guards (a permit count, a key's running count), which needs
    // each statement's own snapshot. Under repeatable read or serializable the snapshot would be taken
    // before the lock was granted, and the read would miss what the previous holder committed. Here, not
    // in the session settings, because a transaction pooler or the user's own pool carries none of those.
    let out: T;
    try {
      // Inside the try: with a budget, BEGIN and SET LOCAL are two statements, and a SET that failed after
      // the BEGIN would otherwise hand the connection back inside an aborted transaction.
      await db.query(begin);
      out = await fn(db);
    } catch (error) {
      if (db.failure === undefined) {
        await db.query("ROLLBACK").catch((rollbackError: unknown) => {
          // A connection that cannot roll back is of no use to anyone: report it, and it is dropped.
          db.markBroken(rollbackError);
        });
      }
      throw error;
    }
    await db.query("COMMIT");
    return out;
  });
}

/**
 * `pool.connect()` with `onError` attached inside pg-pool's callback, synchronously. With the promise form
 * there is a gap of a microtask between pg-pool removing its idle listener and the caller attaching one:
 * when a client is handed over from inside its own socket's data handler (released on ReadyForQuery, then
 * given to the next waiter), a FATAL in the same chunk of bytes is parsed in that gap, with nobody
 * listening. The chaos tests hit exactly that.
 */
function checkOut(pool: pg.Pool, onError: (error: unknown) => void): Promise<pg.PoolClient> {
  return new Promise((resolve, reject) => {
    pool.connect((error, client) => {
      if (error !== undefined || client === undefined) {
        reject(asDatabaseUnavailable(error ?? new Error("pg-pool handed out no client")));
        return;
      }
      client.on("error", onError);
      resolve(client);
    });
  });
}
