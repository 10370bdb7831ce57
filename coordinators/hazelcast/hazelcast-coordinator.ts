/**
 * Wakeups over a Hazelcast reliable topic (the only topic kind the Node client has; it is backed by a
 * ringbuffer, so the member config needs nothing special).
 *
 * The client is started with `asyncStart` and `ReconnectMode.ON` and an unbounded cluster-connect timeout:
 * it keeps retrying in the background forever, while `start()` returns quickly (on the first connection,
 * when every member address refuses a TCP probe, or at the shared start deadline). Its lifecycle
 * CONNECTED/DISCONNECTED states drive our connected/disconnected events.
 *
 * Two client behaviours shape the rest. A message listener begins reading at tail+1 asynchronously, so
 * "subscribed" is only reported after a barrier read of the same ringbuffer has returned. And a listener
 * does not survive a member restart (the fresh ringbuffer rejects its old sequence and the client drops
 * it), so every CONNECTED re-subscribes from scratch; what was published meanwhile is lost, which the
 * node's catch-up poll on `connected` covers. Client logging goes to our logger at debug level only: the
 * client logs every retry, and we report an outage once ourselves.
 */
import { Socket } from "node:net";
import type hazelcastModule from "hazelcast-client";
import type { Client as HazelcastClient, ILogger, ITopic, LifecycleState, Message } from "hazelcast-client";
import type { Logger } from "../../src/core/logger.js";
import { BaseCoordinator } from "../base-coordinator.js";
import type { CoordinatorOptions } from "../coordinator-options.js";
import {
  resolveHazelcastConfig,
  type HazelcastCoordinatorConfig,
  type HazelcastCoordinatorInput,
} from "./hazelcast-config.js";

/** Publishes awaiting the member; beyond this, hints are dropped rather than queued. */
const MAX_IN_FLIGHT_PUBLISHES = 256;

/**
 * The client's heartbeat: a ping after 5 s without writes, and a connection with nothing read for 15 s is
 * closed (the client's default is 60 s). A member killed outright is normally seen at once by its socket
 * closing, but the fault test caught a client that missed it; with the default, its wakeups would have
 * been silently off for a minute. A ping answered within 15 s is all a loaded node needs to stay up.
 */
const HEARTBEAT = {
  "hazelcast.client.heartbeat.interval": 5000,
  "hazelcast.client.heartbeat.timeout": 15_000,
};

/**
 * The Hazelcast coordinator.
 *
 * @example
 * ```ts
 * const c = new HazelcastCoordinator({ members: ["127.0.0.1:5701"], clusterName: "pawl" }, { nodeId: "a" });
 * c.onWakeup((hint) => poller.wake(hint));
 * await c.start();
 * ```
 */
export class HazelcastCoordinator extends BaseCoordinator {
  /** The resolved configuration. */
  readonly config: HazelcastCoordinatorConfig;
  private client: HazelcastClient | undefined;
  private topic: ITopic<unknown> | undefined;
  private listenerId: string | undefined;
  /** Whether the client reports a live cluster connection (lifecycle CONNECTED, no DISCONNECTED since). */
  private linkUp = false;
  /** Bumped on every CONNECTED; a subscription made for an older connection is redone. */
  private generation = 0;
  private subscribing = false;
  private inFlight = 0;
  private settleStart: (() => void) | undefined;
  /** hazelcast-client, loaded by open() (before any lifecycle event can arrive). */
  private lib: typeof hazelcastModule | undefined;

  constructor(input: HazelcastCoordinatorInput, options: CoordinatorOptions) {
    super("hazelcast", options);
    this.config = resolveHazelcastConfig(input);
  }

  protected async open(): Promise<void> {
    if (this.closed) return;
    // Loaded here rather than by a static import: an ESM bundle (esbuild) hoists a static import of an
    // external package to its top, so a worker that never chose this transport would need the package.
    // The module's named exports, not its `default`: Node gives a CommonJS package's exports both ways, but
    // a loader that honours the package's `__esModule` flag (tsx, some bundlers) gives no `default`.
    const hazelcast: typeof hazelcastModule = await import("hazelcast-client");
    this.lib = hazelcast;
    if (this.closed) return;
    const firstConnection = new Promise<void>((resolve) => (this.settleStart = resolve));
    const { initialDelayMs, maxDelayMs } = this.options.reconnect;
    const client = await hazelcast.Client.newHazelcastClient({
      clusterName: this.config.clusterName,
      instanceName: `pawl-wakeup-${this.options.nodeId}`,
      network: { clusterMembers: this.config.members, connectionTimeout: this.config.connectTimeoutMs },
      connectionStrategy: {
        asyncStart: true,
        reconnectMode: hazelcast.ReconnectMode.ON,
        connectionRetry: {
          initialBackoffMillis: initialDelayMs,
          maxBackoffMillis: maxDelayMs,
          multiplier: 2,
          jitter: 0.2,
          clusterConnectTimeoutMillis: -1, // never give up; start() is bounded separately
        },
      },
      properties: HEARTBEAT,
      lifecycleListeners: [(state) => this.onLifecycle(state)],
      // Never block a publisher on a full ringbuffer: the oldest wakeup is the least useful one.
      reliableTopics: {
        [this.config.topic]: { overloadPolicy: hazelcast.TopicOverloadPolicy.DISCARD_OLDEST },
      },
      customLogger: debugOnlyLogger(this.log),
    });
    if (this.closed) {
      await client.shutdown().catch(() => {});
      return;
    }
    this.client = client;
    this.subscribe(); // CONNECTED may have fired before the client object was handed to us
    await Promise.race([firstConnection, allRefused(this.config.members, this.config.connectTimeoutMs)]);
  }

  protected send(payload: string): boolean {
    const topic = this.topic;
    if (topic === undefined || this.inFlight >= MAX_IN_FLIGHT_PUBLISHES) return false;
    this.inFlight++;
    topic
      .publish(payload)
      .catch((error: unknown) =>
        this.log.debug("hazelcast coordinator: publish failed", { error: String(error) }),
      )
      .finally(() => this.inFlight--);
    return true;
  }

  protected async shutdown(): Promise<void> {
    this.settleStart?.();
    this.dropListener();
    const client = this.client;
    this.client = undefined;
    await client?.shutdown();
  }

  private onLifecycle(state: LifecycleState): void {
    const hazelcast = this.lib;
    if (this.closed || hazelcast === undefined) return;
    if (state === hazelcast.LifecycleState.CONNECTED) {
      this.linkUp = true;
      this.generation++;
      this.subscribe();
    } else if (state === hazelcast.LifecycleState.DISCONNECTED) {
      this.linkUp = false;
      this.dropListener();
      this.markDisconnected(new Error("lost the connection to the Hazelcast cluster"));
    } else if (state === hazelcast.LifecycleState.SHUTDOWN) {
      this.linkUp = false;
      this.markDisconnected(new Error("the Hazelcast client shut down"));
    }
  }

  /**
   * (Re)subscribes for the current connection, then reports connected. Runs one at a time; a CONNECTED
   * that arrives meanwhile bumps the generation and the loop goes round again.
   */
  private subscribe(): void {
    if (this.subscribing || this.client === undefined || !this.linkUp || this.closed) return;
    this.subscribing = true;
    let retry = false;
    void (async () => {
      try {
        for (let done = -1; done !== this.generation && this.linkUp && !this.closed;) {
          const generation = this.generation;
          await this.subscribeOnce();
          done = generation;
        }
        if (this.linkUp && !this.closed && this.topic !== undefined) {
          this.markConnected();
          this.settleStart?.();
        }
      } catch (error) {
        // The member refused, or the link dropped mid-subscribe and the invocation timed out. If the
        // link is up again, no further CONNECTED will come to trigger a retry, so schedule one.
        this.log.debug("hazelcast coordinator: subscribe failed", { error: String(error) });
        this.dropListener();
        retry = this.linkUp && !this.closed;
      } finally {
        this.subscribing = false;
      }
      if (retry) setTimeout(() => this.subscribe(), this.options.reconnect.initialDelayMs).unref();
    })();
  }

  private async subscribeOnce(): Promise<void> {
    const client = this.client;
    if (client === undefined) return;
    this.dropListener();
    const topic = await client.getReliableTopic<unknown>(this.config.topic);
    if (this.closed) return;
    this.listenerId = topic.addMessageListener((message: Message<unknown>) =>
      this.receive(message.messageObject),
    );
    this.topic = topic;
    // Barrier: the listener fetches the tail asynchronously; a tail read on the same ringbuffer, issued
    // after it on the same partition, returns after it, so messages published from now on are heard.
    const ringbuffer = await client.getRingbuffer<unknown>(`_hz_rb_${this.config.topic}`);
    await ringbuffer.tailSequence();
  }

  private dropListener(): void {
    if (this.topic !== undefined && this.listenerId !== undefined) {
      try {
        this.topic.removeMessageListener(this.listenerId);
      } catch {
        // the client may already be shutting down; the listener dies with it
      }
    }
    this.topic = undefined;
    this.listenerId = undefined;
  }
}

/** Routes the client's own logging to our logger at debug level: it logs every retry of an outage. */
function debugOnlyLogger(log: Logger): ILogger {
  const write = (objectName: string, message: string): void =>
    log.debug(`hazelcast: ${message}`, { objectName });
  const skip = (): void => {};
  return {
    log: (level, objectName, message) => (level <= 1 ? write(objectName, message) : skip()),
    error: write,
    warn: write,
    info: skip,
    debug: skip,
    trace: skip,
  };
}

/**
 * Resolves once every member address has refused (or timed out) a plain TCP connect, which tells
 * `start()` the first connection cannot succeed soon; never resolves if any member accepts.
 */
function allRefused(members: readonly string[], timeoutMs: number): Promise<void> {
  return new Promise((resolve) => {
    let failures = 0;
    for (const address of members) {
      const at = address.lastIndexOf(":");
      const socket = new Socket();
      const fail = (): void => {
        socket.destroy();
        if (++failures === members.length) resolve();
      };
      socket.setTimeout(timeoutMs, fail);
      socket.once("error", fail);
      socket.once("connect", () => socket.destroy());
      socket.connect(Number(address.slice(at + 1)), address.slice(0, at).replace(/^\[|\]$/g, ""));
      socket.unref();
    }
  });
}
