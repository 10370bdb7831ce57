/**
 * Configuration of the AMQP (RabbitMQ) coordinator, parsed from
 * `amqp[s]://user:pass@host:port[/vhost][?exchange=name&heartbeat=s]`.
 *
 * `exchange` is pawl's own parameter and is removed before the URL reaches amqplib; the connection
 * parameters amqplib understands pass through; anything else is rejected, because a misspelt parameter
 * silently ignored (say `?exchnage=`) would put nodes on different exchanges that never hear each other.
 */
import { ValidationError } from "../../src/core/errors.js";
import { coordinatorInt } from "../coordinator-options.js";
import { redactUrl } from "../redact.js";

/** The exchange used when the spec names none. */
export const DEFAULT_AMQP_EXCHANGE = "pawl.wakeup";

/** Input to {@link resolveAmqpConfig}: what a caller sets in code. */
export interface AmqpCoordinatorInput {
  /** The broker URL (amqp:// or amqps://), without pawl's `exchange` parameter. */
  url: string;
  /** The fanout exchange all nodes of one cluster share. Default `pawl.wakeup`. */
  exchange?: string;
  /** AMQP heartbeat in seconds, used when the URL sets none; detects dead connections. Default 10. */
  heartbeatSec?: number;
  /** Bound on one TCP connect, ms. Default 5,000. */
  connectTimeoutMs?: number;
}

/** The resolved configuration of the amqp coordinator. */
export interface AmqpCoordinatorConfig {
  readonly transport: "amqp";
  /** The URL handed to amqplib (with the heartbeat filled in). */
  readonly url: string;
  readonly exchange: string;
  readonly connectTimeoutMs: number;
}

/** Connection parameters amqplib reads from the URL query. */
const AMQPLIB_PARAMS = new Set(["heartbeat", "frameMax", "channelMax", "locale", "maxFrameSize"]);

/** AMQP short-string names, minus RabbitMQ's reserved `amq.` prefix (declaring those is refused). */
const exchangeName = /^(?!amq\.)[A-Za-z0-9._:-]{1,255}$/;

function invalid(message: string): ValidationError {
  return new ValidationError("INVALID_COORDINATOR", message);
}

/**
 * Parses an amqp coordinator spec.
 *
 * @example
 * ```ts
 * parseAmqpSpec("amqp://guest:guest@localhost:5672/?exchange=jobs.wakeup").exchange; // "jobs.wakeup"
 * ```
 */
export function parseAmqpSpec(spec: string): AmqpCoordinatorInput {
  const shown = redactUrl(spec.trim());
  let url: URL;
  try {
    url = new URL(spec.trim());
  } catch {
    throw invalid(
      `amqp coordinator URL "${shown}" is malformed (expected amqp://user:pass@host:port[/vhost])`,
    );
  }
  if (url.protocol !== "amqp:" && url.protocol !== "amqps:") {
    throw invalid(`"${shown}" is not an amqp:// or amqps:// URL`);
  }
  if (url.hostname === "") throw invalid(`amqp coordinator URL "${shown}" has no host`);
  if (url.hash !== "") throw invalid(`amqp coordinator URL "${shown}" must not have a #fragment`);
  let exchange: string | undefined;
  for (const [key, value] of url.searchParams) {
    if (key === "exchange") exchange = value;
    else if (!AMQPLIB_PARAMS.has(key)) {
      throw invalid(
        `amqp coordinator URL has unknown parameter "${key}" (known: exchange, ${[...AMQPLIB_PARAMS].join(", ")})`,
      );
    }
  }
  url.searchParams.delete("exchange");
  const input: AmqpCoordinatorInput = { url: url.toString() };
  if (exchange !== undefined) input.exchange = exchange;
  resolveAmqpConfig(input); // validates now, at config time
  return input;
}

/** Applies defaults and validates. */
export function resolveAmqpConfig(input: AmqpCoordinatorInput): AmqpCoordinatorConfig {
  let url: URL;
  try {
    url = new URL(input.url);
  } catch {
    throw invalid(`amqp coordinator URL "${redactUrl(String(input.url))}" is malformed`);
  }
  const exchange = input.exchange ?? DEFAULT_AMQP_EXCHANGE;
  if (!exchangeName.test(exchange)) {
    throw invalid(
      `amqp exchange "${exchange}" is invalid: 1-255 characters of A-Z a-z 0-9 . _ : -, not starting with "amq."`,
    );
  }
  const heartbeat = coordinatorInt("heartbeatSec", input.heartbeatSec ?? 10, 0, 3_600);
  if (!url.searchParams.has("heartbeat")) url.searchParams.set("heartbeat", String(heartbeat));
  return {
    transport: "amqp",
    url: url.toString(),
    exchange,
    connectTimeoutMs: coordinatorInt("connectTimeoutMs", input.connectTimeoutMs ?? 5_000, 100, 600_000),
  };
}
