/**
 * Wakeups over AMQP 0-9-1 (RabbitMQ), using amqplib 2's built-in connection recovery.
 *
 * Topology: one non-durable fanout exchange per cluster; per node an exclusive, auto-delete, server-named
 * queue bound to it and consumed with `noAck`. Nothing is durable because a wakeup is worthless once stale:
 * when a node is gone its queue goes with it, and a node that reconnects polls instead of replaying.
 *
 * amqplib's recovery reconnects the connection and calls our `setup` after every connect, which is where
 * the topology is rebuilt (queues and channels die with their connection). A channel can also die alone
 * (an operator deletes the exchange or the queue); then the connection is closed on purpose so recovery
 * rebuilds everything through the same single path. Publishing honours backpressure by dropping: when
 * `publish` returns false, hints are dropped until `drain`, since buffering stale wakeups helps nobody.
 */
import type { Channel, ChannelModel, ConsumeMessage, RecoveringChannelModel } from "amqplib";
import { BaseCoordinator } from "../base-coordinator.js";
import type { CoordinatorOptions } from "../coordinator-options.js";
import { resolveAmqpConfig, type AmqpCoordinatorConfig, type AmqpCoordinatorInput } from "./amqp-config.js";

/** Per-queue bounds: a node that stops consuming must not grow a queue without limit. */
const QUEUE_MAX_LENGTH = 1_000;
const QUEUE_MESSAGE_TTL_MS = 60_000;

/**
 * The AMQP coordinator.
 *
 * @example
 * ```ts
 * const c = new AmqpCoordinator({ url: "amqp://guest:guest@localhost:5672" }, { nodeId: "node-a" });
 * c.onWakeup((hint) => poller.wake(hint));
 * await c.start();
 * ```
 */
export class AmqpCoordinator extends BaseCoordinator {
  /** The resolved configuration. */
  readonly config: AmqpCoordinatorConfig;
  private connection: RecoveringChannelModel | undefined;
  /** The connection of the current topology, closed on purpose when its channel dies alone. */
  private model: ChannelModel | undefined;
  /** The channel that consumes and publishes; undefined while the topology is down. */
  private channel: Channel | undefined;
  /** Set when `publish` reported a full buffer, or the broker blocked the connection; cleared on `drain`. */
  private backpressure = false;
  private settleStart: (() => void) | undefined;

  constructor(input: AmqpCoordinatorInput, options: CoordinatorOptions) {
    super("amqp", options);
    this.config = resolveAmqpConfig(input);
  }

  protected async open(): Promise<void> {
    if (this.closed) return;
    // Loaded here rather than by a static import: an ESM bundle (esbuild) hoists a static import of an
    // external package to its top, so a worker that never chose this transport would need the package.
    const { default: amqp } = await import("amqplib");
    if (this.closed) return;
    const { initialDelayMs, maxDelayMs } = this.options.reconnect;
    const connection = await amqp.connect(this.config.url, {
      recovery: {
        // Resolve at once, so listeners are attached before the first attempt and close() can cancel it.
        waitForConnect: false,
        initialDelay: initialDelayMs,
        maxDelay: maxDelayMs,
        factor: 2,
        jitter: 0.2,
        maxRetries: Infinity,
        setup: (model: ChannelModel) => this.setupTopology(model),
      },
      timeout: this.config.connectTimeoutMs,
      // A hint is one small frame that should leave at once; amqplib leaves Nagle's algorithm on by default.
      noDelay: true,
      clientProperties: { connection_name: `pawl-wakeup-${this.options.nodeId}` },
    });
    if (this.closed) {
      // close() ran while connect() was being called; nobody else holds this connection to close it.
      await connection.close();
      return;
    }
    this.connection = connection;
    const firstAttempt = new Promise<void>((resolve) => (this.settleStart = resolve));
    connection.on("connect", () => {
      this.settleStart?.();
      this.markConnected();
    });
    connection.on("connect-failed", (error: Error) => {
      this.settleStart?.();
      this.markDisconnected(error);
    });
    connection.on("disconnect", (error: Error) => {
      this.channel = undefined;
      this.model = undefined;
      this.markDisconnected(error);
    });
    connection.on("reconnect-failed", (error: Error) => {
      this.log.error("amqp coordinator: gave up reconnecting", { error: error.message });
    });
    connection.on("blocked", () => (this.backpressure = true));
    connection.on("unblocked", () => (this.backpressure = false));
    // Without an 'error' listener an EventEmitter throws; the close that follows is what we act on.
    connection.on("error", (error: Error) =>
      this.log.debug("amqp coordinator: connection error", { error: error.message }),
    );
    connection.on("handler-error", (error: Error, event: string) =>
      this.log.error("amqp coordinator: a handler threw", { event, error: error.message }),
    );
    await firstAttempt;
  }

  protected send(payload: string): boolean {
    const channel = this.channel;
    if (channel === undefined || this.backpressure) return false;
    // false means "written, but the buffer is full": this hint went out, the next ones wait for drain.
    if (
      !channel.publish(this.config.exchange, "", Buffer.from(payload), { contentType: "application/json" })
    ) {
      this.backpressure = true;
    }
    return true;
  }

  protected async shutdown(): Promise<void> {
    this.settleStart?.();
    const connection = this.connection;
    this.connection = undefined;
    this.channel = undefined;
    this.model = undefined;
    await connection?.close();
  }

  /** amqplib's recovery `setup`: builds the topology on a fresh connection. A throw makes it retry. */
  private async setupTopology(model: ChannelModel): Promise<void> {
    // Recovery listens to the connection only once setup has returned. Until then a socket error (a
    // reset, the broker's host dying) is emitted on a model nobody listens to, and EventEmitter throws it
    // into the host as an uncaughtException (reproduced in test/processes/fault-coordinators.test.ts).
    // The failed channel calls below then make setup throw, and recovery retries.
    model.on("error", (error: Error) =>
      this.log.debug("amqp coordinator: connection error during setup", { error: error.message }),
    );
    // A close parsed in the same chunk as the last reply is emitted before this function resumes, and
    // before recovery listens for it: returning then would leave recovery holding a dead connection.
    let lost = false;
    model.once("close", () => (lost = true));
    const channel = await model.createChannel();
    channel.on("error", (error: Error) =>
      this.log.debug("amqp coordinator: channel error", { error: error.message }),
    );
    channel.on("close", () => this.channelLost(channel));
    channel.on("drain", () => {
      if (channel === this.channel) this.backpressure = false;
    });
    await channel.assertExchange(this.config.exchange, "fanout", { durable: false, autoDelete: false });
    const { queue } = await channel.assertQueue("", {
      exclusive: true,
      autoDelete: true,
      durable: false,
      maxLength: QUEUE_MAX_LENGTH,
      messageTtl: QUEUE_MESSAGE_TTL_MS,
    });
    await channel.bindQueue(queue, this.config.exchange, "");
    await channel.consume(queue, (message: ConsumeMessage | null) => this.onMessage(channel, message), {
      noAck: true,
      exclusive: true,
    });
    if (lost) throw new Error("the connection closed while its topology was being set up");
    this.channel = channel;
    this.model = model;
    this.backpressure = false;
  }

  private onMessage(channel: Channel, message: ConsumeMessage | null): void {
    // null: the broker cancelled the consumer (its queue was deleted); the channel is useless now.
    if (message === null) this.channelLost(channel);
    else this.receive(message.content);
  }

  /**
   * The topology's channel died. If the whole connection went down, recovery is already on it (its
   * `disconnect` arrives in the same tick, so the check waits one turn). If the channel died alone, closing
   * the connection hands the repair to recovery: one rebuild path, not two racing each other.
   */
  private channelLost(channel: Channel): void {
    if (channel !== this.channel || this.closed) return;
    this.channel = undefined;
    const model = this.model;
    setImmediate(() => {
      if (this.closed || model === undefined || this.model !== model) return;
      this.model = undefined;
      this.markDisconnected(new Error("amqp channel closed while its connection stayed up"));
      model.close().catch(() => {});
    });
  }
}
