/**
 * The coordinator contract against a real RabbitMQ broker. The fault is `rabbitmqctl stop_app` /
 * `start_app`, which takes the whole broker down: it lives in this file (tests in a file run one after
 * another) and no other test file uses RabbitMQ, so nothing else feels it. `start_app` always runs again,
 * in the test's own `finally` and once more after all tests, so a failure never leaves the broker down.
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { promisify } from "node:util";
import amqp from "amqplib";
import { afterAll, describe, expect, it } from "vitest";
import { createCoordinator, parseCoordinatorSpec, type Coordinator } from "../../coordinators/index.js";
import { describeCoordinatorContract, trackNodeId } from "./coordinator-contract.js";

const broker = process.env.AMQP_URL ?? "amqp://guest:guest@127.0.0.1:5672";
const run = promisify(execFile);
const reconnect = { initialDelayMs: 100, maxDelayMs: 1_000 };

async function create(
  exchange: string,
  nodeId: string,
  coalesceMs?: number,
  url = broker,
): Promise<Coordinator> {
  const spec = `${url}?exchange=${exchange}`;
  const node = await createCoordinator(spec, {
    nodeId,
    connectionString: "",
    schema: "unused",
    coalesceMs,
    reconnect,
  });
  return trackNodeId(nodeId, node);
}

/** Runs `fn` on a short-lived plain amqplib channel (the test's own, outside any coordinator). */
async function withChannel(fn: (channel: amqp.Channel) => Promise<void>): Promise<void> {
  const connection = await amqp.connect(broker);
  connection.on("error", () => {});
  try {
    const channel = await connection.createChannel();
    channel.on("error", () => {});
    await fn(channel);
    // Closing the channel first waits for the broker to process it; a bare connection close can
    // overtake publishes still in amqplib's buffers, and they are lost.
    await channel.close();
  } finally {
    await connection.close().catch(() => {});
  }
}

async function rabbitmqctl(command: "stop_app" | "start_app"): Promise<void> {
  await run("rabbitmqctl", [command], { timeout: 60_000 });
}

/** Whether this process may stop and start the broker (root, local broker, rabbitmqctl installed). */
function canControlBroker(): boolean {
  return process.env.AMQP_URL === undefined && process.getuid?.() === 0;
}

afterAll(async () => {
  if (canControlBroker()) await rabbitmqctl("start_app").catch(() => {});
});

describeCoordinatorContract("amqp", {
  async scope() {
    const exchange = `pawl.contract.${randomBytes(4).toString("hex")}`;
    return {
      create: (nodeId, options) => create(exchange, nodeId, options?.coalesceMs),
      publishRaw: (payload) =>
        withChannel(async (channel) => {
          await channel.assertExchange(exchange, "fanout", { durable: false, autoDelete: false });
          channel.publish(exchange, "", Buffer.from(payload));
        }),
      // The exchange is non-durable but not auto-deleted (see the coordinator), so tests remove their own.
      dispose: () =>
        withChannel((channel) => channel.deleteExchange(exchange).then(() => {})).catch(() => {}),
    };
  },
  unreachable: (nodeId) => create("pawl.unreachable", nodeId, undefined, "amqp://guest:guest@127.0.0.1:1"),
  canInterrupt: canControlBroker,
  interrupt: () => rabbitmqctl("stop_app"),
  restore: () => rabbitmqctl("start_app"),
  recoveryTimeoutMs: 30_000,
});

describe("amqp coordinator specifics", () => {
  it("ignores a message that is not UTF-8 text", async () => {
    const exchange = `pawl.contract.${randomBytes(4).toString("hex")}`;
    const node = await create(exchange, "bytes-a");
    try {
      await node.start();
      const malformed = new Promise((resolve) => node.on("malformed", resolve));
      await withChannel(async (channel) => {
        channel.publish(exchange, "", Buffer.from([0xff, 0xfe, 0x00, 0x7b]));
      });
      await malformed;
      expect(node.status().malformed).toBe(1);
    } finally {
      await node.close();
      await withChannel((channel) => channel.deleteExchange(exchange).then(() => {})).catch(() => {});
    }
  });

  it("rejects a misspelt exchange parameter at config time, without echoing the password", () => {
    expect(() => parseCoordinatorSpec("amqp://guest:s3cret@127.0.0.1:5672?exchnage=x")).toThrow(/exchnage/);
    expect(() => parseCoordinatorSpec("amqp://guest:s3cret@127.0.0.1:5672?exchnage=x")).not.toThrow(/s3cret/);
  });
});
