/**
 * Wakeups over PostgreSQL LISTEN/NOTIFY, through pg-listen on one dedicated connection (LISTEN cannot
 * share a pooled connection). The same connection sends NOTIFY, so the coordinator needs no pool.
 *
 * pg-listen reconnects by itself, but two of its defaults are traps (see docs in api-notes): it stops
 * retrying for good after 3 s of outage unless `retryTimeout` is 0, and it notices a silently dead socket
 * only through `paranoidChecking`. Its reconnect loop also never looks at `close()`, so the retry-interval
 * callback throws once closed, which is the one way to end that loop. Its `connected` event fires after a
 * reconnect has re-run LISTEN; that is where the node's catch-up poll hooks in. One residue remains: if
 * close() lands while pg-listen sleeps between retries (only during an outage), its sleep timer, which
 * it does not unref, keeps the process alive until it ends (at most `reconnect.maxDelayMs`).
 *
 * NOTIFY is not durable: anything sent while this node is reconnecting is lost, hence the catch-up poll.
 * A LISTEN through a transaction pooler hears nothing at all, silently; after each (re)connect a probe
 * (listen-probe.ts) checks that the connection hears, and a deaf one is reported as a warning naming
 * `directConnectionString` and treated as disconnected, so the node and waitFor poll instead.
 * {@link PostgresCoordinator.inTransaction} offers the transactional path: the store runs `pg_notify`
 * inside the enqueuing transaction, so the hint is delivered at COMMIT and a rollback wakes nobody.
 */
import type pgListenModule from "pg-listen";
import { BaseCoordinator } from "../base-coordinator.js";
import { backoffDelay, withJitter, type CoordinatorOptions } from "../coordinator-options.js";
import { encodeHint } from "../hint-codec.js";
import { randomBytes } from "node:crypto";
import { probeChannelName, sendProbe } from "./listen-probe.js";
import type { FoldedNotify, TransactionalNotify, WakeupHint } from "../spi.js";
import {
  resolvePostgresConfig,
  type PostgresCoordinatorConfig,
  type PostgresCoordinatorInput,
} from "./postgres-config.js";

type Subscriber = ReturnType<typeof pgListenModule.default>;

/** How often a connection found deaf is probed again (it may have been a false verdict under load). */
const DEAF_RECHECK_MS = 60_000;

/** NOTIFYs waiting for the connection; beyond this, hints are dropped (they are only wakeups). */
const MAX_QUEUED_NOTIFIES = 256;

/**
 * The LISTEN/NOTIFY coordinator.
 *
 * @example
 * ```ts
 * const c = new PostgresCoordinator(
 *   { connectionString: "postgres://localhost/app", channel: postgresChannelName("pawl") },
 *   { nodeId: "node-a" },
 * );
 * c.onWakeup((hint) => poller.wake(hint));
 * await c.start();
 * ```
 */
export class PostgresCoordinator extends BaseCoordinator {
  /** The resolved configuration. */
  readonly config: PostgresCoordinatorConfig;
  private subscriber: Subscriber | undefined;
  /** False until the first connection attempt has finished; pg-listen's own first `connected` is ignored. */
  private firstAttemptDone = false;
  /**
   * This coordinator's own statements on the listening connection (NOTIFYs, the probe channel's LISTEN),
   * run one at a time by {@link PostgresCoordinator.pump}, and only while the connection is up.
   */
  private readonly queue: ((subscriber: Subscriber) => Promise<unknown>)[] = [];
  private sending = false;
  /** Whether the listening connection is connected and LISTENs (set on connect, cleared on loss). */
  private linkUp = false;
  /** This instance's own channel for the LISTEN probe (listen-probe.ts). */
  private readonly probeChannel = probeChannelName();
  /** The probe in flight: its token and, once sent, its deadline timer. */
  private probing: { token: string; timer: NodeJS.Timeout | undefined } | undefined;
  /** A later probe: after a deaf verdict, or after a probe that could not be sent. */
  private reprobe: NodeJS.Timeout | undefined;
  /** True while the last probe went unheard (the connection cannot LISTEN). */
  private deaf = false;

  constructor(input: PostgresCoordinatorInput, options: CoordinatorOptions) {
    super("postgres", options);
    this.config = resolvePostgresConfig(input);
  }

  /** The `application_name` of the listening connection (how operators and tests find it). */
  get applicationName(): string {
    // PostgreSQL silently truncates application_name to 63 bytes; truncating here keeps the two equal.
    return (this.config.applicationName ?? `pawl-wakeup-${this.options.nodeId}`).slice(0, 63);
  }

  /**
   * The statement that publishes `hint` from inside the caller's transaction (delivered at COMMIT, never
   * after a rollback). Bypasses coalescing and the connection state: it runs on the store's connection.
   */
  inTransaction(hint: WakeupHint): TransactionalNotify {
    this.countPublished();
    return { text: "SELECT pg_notify($1, $2)", values: [this.config.channel, this.payloadOf(hint)] };
  }

  /**
   * The notification for the store to send from its insert statement (see {@link Coordinator.foldNotify}):
   * coalesced outside a transaction, as {@link PostgresCoordinator.inTransaction} inside one.
   */
  foldNotify(hint: WakeupHint, transactional: boolean): FoldedNotify | undefined {
    if (transactional) this.countPublished();
    else if (!this.coalesceFolded(hint)) return undefined;
    return { channel: this.config.channel, payload: this.payloadOf(hint) };
  }

  private payloadOf(hint: WakeupHint): string {
    // An unencodable hint still wakes everyone: a bare work hint is always safe to send.
    return (
      encodeHint(hint) ??
      encodeHint({
        priority: Number.isFinite(hint.priority) ? hint.priority : 0,
        source: this.options.nodeId,
      }) ??
      ""
    );
  }

  protected async open(): Promise<void> {
    if (this.closed) return;
    // Loaded here rather than by a static import: an ESM bundle (esbuild) hoists a static import of an
    // external package to its top, so a worker that never chose this transport would need the package.
    const { default: pgListen } = await import("pg-listen");
    if (this.closed) return;
    const subscriber = pgListen.default(
      {
        connectionString: this.config.connectionString,
        application_name: this.applicationName,
        connectionTimeoutMillis: this.config.connectTimeoutMs,
        keepAlive: true,
      },
      {
        paranoidChecking: this.config.paranoidCheckingMs,
        // 0 disables the give-up timer (the default 3 s ends recovery for good, andywer/pg-listen#56).
        retryTimeout: 0,
        retryLimit: Infinity,
        retryInterval: (attempt) => this.retryDelay(attempt),
        // Payloads are decoded (and counted when malformed) by the base class, not by pg-listen.
        parse: (text) => text,
        serialize: (payload) => String(payload),
      },
    );
    this.subscriber = subscriber;
    const events = subscriber.events;
    events.on("notification", (n) => {
      if (n.channel === this.config.channel) this.receive(n.payload ?? "");
      else if (n.channel === this.probeChannel) this.probeHeard(String(n.payload ?? ""));
    });
    // pg-listen announces each reconnect attempt; the first one of an outage is the moment it was lost.
    events.on("reconnect", () => {
      this.linkUp = false;
      // A probe sent to the lost connection proves nothing; the reconnect's `connected` sends a fresh one.
      this.cancelProbe();
      this.markDisconnected(new Error("PostgreSQL listener connection lost"));
    });
    events.on("connected", () => {
      if (this.closed) {
        void subscriber.close().catch(() => {}); // a reconnect that finished after close()
      } else if (this.firstAttemptDone) {
        this.linkUp = true;
        this.pump();
        this.connectedAndProbe();
      }
    });
    events.on("error", (error) => {
      if (this.closed) return;
      this.log.debug("postgres coordinator: listener error", { error: error.message });
      this.cancelProbe();
      this.markDisconnected(error);
    });

    // LISTEN is registered before connecting so pg-listen re-issues it on every reconnect, including the
    // background retries that begin when this very first attempt fails. One statement only: pg warns the
    // host process (and pg 9 will refuse) when a query is issued while another waits in a client's queue,
    // and before the connection is up every query waits there. The probe channel's LISTEN comes later, on
    // the connected client, through this coordinator's one-at-a-time queue (listenForProbes).
    const listening = subscriber.listenTo(this.config.channel);
    listening?.catch(() => {});
    try {
      await subscriber.connect();
      await listening;
      this.linkUp = true;
      this.pump();
      this.connectedAndProbe();
    } finally {
      this.firstAttemptDone = true;
    }
  }

  protected send(payload: string): boolean {
    if (this.subscriber === undefined || this.queue.length >= MAX_QUEUED_NOTIFIES) return false;
    this.queue.push((subscriber) =>
      subscriber
        .notify(this.config.channel, payload)
        .catch((error: unknown) =>
          this.log.debug("postgres coordinator: NOTIFY failed", { error: String(error) }),
        ),
    );
    this.pump();
    return true;
  }

  protected async shutdown(): Promise<void> {
    this.queue.length = 0;
    this.linkUp = false;
    this.cancelProbe();
    const subscriber = this.subscriber;
    this.subscriber = undefined;
    await subscriber?.close();
  }

  /**
   * Runs the queued statements one at a time, while the connection is up. With pg-listen's own occasional
   * statement (its paranoid check, the LISTENs of a reconnect) that is at most one waiting in pg's queue,
   * which pg accepts without a warning; a few coalesced messages per window need no more.
   */
  private pump(): void {
    const subscriber = this.subscriber;
    if (this.sending || subscriber === undefined || !this.linkUp) return;
    const run = this.queue.shift();
    if (run === undefined) return;
    this.sending = true;
    void run(subscriber)
      .catch(() => {}) // each statement reports its own failure
      .finally(() => {
        this.sending = false;
        this.pump();
      });
  }

  /**
   * Resolves once the connection LISTENs on the probe channel. The first call queues the LISTEN ahead of
   * any NOTIFY; from then on pg-listen counts the channel as subscribed and re-issues it on reconnects.
   */
  private listenForProbes(): Promise<void> {
    if (this.subscriber?.getSubscribedChannels().includes(this.probeChannel)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.queue.unshift((subscriber) =>
        Promise.resolve(subscriber.listenTo(this.probeChannel)).then(() => resolve(), reject),
      );
      this.pump();
    });
  }

  /** Reports the (re)connection, unless the last probe found the connection deaf, and probes it. */
  private connectedAndProbe(): void {
    if (!this.deaf) this.markConnected();
    this.probe();
  }

  /**
   * LISTENs on the probe channel (the first time), sends a probe from another connection and, once it is
   * sent, waits `listenProbeMs` for it. Unheard, the connection is deaf (a transaction pooler): warned
   * once, naming the fix, reported disconnected so the node polls, and probed again every
   * {@link DEAF_RECHECK_MS}. A probe that could not be sent (the server unreachable for a moment) proves
   * nothing: it is tried again after `listenProbeMs`.
   */
  private probe(): void {
    if (this.closed || this.probing) return;
    const token = randomBytes(8).toString("hex");
    const probing: { token: string; timer: NodeJS.Timeout | undefined } = { token, timer: undefined };
    this.probing = probing;
    this.listenForProbes()
      .then(() =>
        sendProbe(this.config.connectionString, this.probeChannel, token, this.config.connectTimeoutMs),
      )
      .then(
        () => {
          if (this.probing !== probing || this.closed) return; // heard already, or closed
          probing.timer = setTimeout(() => this.probeUnheard(probing), this.config.listenProbeMs);
          probing.timer.unref();
        },
        (error: unknown) => {
          if (this.probing !== probing) return;
          this.probing = undefined;
          this.log.debug("postgres coordinator: could not send the LISTEN probe", { error: String(error) });
          this.probeLater(this.config.listenProbeMs);
        },
      );
  }

  /** The probe's deadline passed: the connection is deaf. */
  private probeUnheard(probing: { token: string }): void {
    if (this.probing !== probing || this.closed) return;
    this.probing = undefined;
    if (!this.deaf) {
      this.deaf = true;
      this.log.warn(
        "postgres coordinator: LISTEN hears nothing on this connection (a transaction pooler such as " +
          "PgBouncer, RDS Proxy or Supavisor?); set directConnectionString (env PAWL_DIRECT_DATABASE_URL) " +
          "to a direct connection to the database. Until then wakeups are off and jobs are found by polling",
        { listenProbeMs: this.config.listenProbeMs },
      );
    }
    this.markDisconnected(new Error("LISTEN hears nothing: set directConnectionString"), false);
    this.probeLater(DEAF_RECHECK_MS);
  }

  /** Forgets the probe in flight and any pending re-probe. */
  private cancelProbe(): void {
    if (this.probing?.timer) clearTimeout(this.probing.timer);
    this.probing = undefined;
    if (this.reprobe) clearTimeout(this.reprobe);
    this.reprobe = undefined;
  }

  /** Probes again after `ms` (one pending re-probe at a time). */
  private probeLater(ms: number): void {
    if (this.closed || this.reprobe) return;
    this.reprobe = setTimeout(() => {
      this.reprobe = undefined;
      this.probe();
    }, ms);
    this.reprobe.unref();
  }

  /** A probe came back: the connection hears. */
  private probeHeard(token: string): void {
    if (this.probing?.token !== token) return;
    if (this.probing.timer) clearTimeout(this.probing.timer);
    this.probing = undefined;
    if (this.deaf) {
      this.deaf = false;
      this.log.info("postgres coordinator: LISTEN hears notifications again");
      this.markConnected();
    }
  }

  /** pg-listen's retry interval; throwing is how a closed coordinator stops pg-listen's retry loop. */
  private retryDelay(attempt: number): number {
    if (this.closed) throw new Error("coordinator closed");
    return withJitter(backoffDelay(attempt + 1, this.options.reconnect));
  }
}
