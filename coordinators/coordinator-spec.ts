/**
 * Parsing of coordinator spec strings (`auto`, `none`, `in-memory[://bus]`, `postgres[://url]`,
 * `amqp://...`, `hazelcast://...`). It is synchronous and imports no client library, so `createPawl` can reject a bad
 * spec at config time, before anything connects, and a user of one transport never loads another's.
 * Error messages never echo a password.
 */
import { ValidationError } from "../src/core/errors.js";
import { parseAmqpSpec, type AmqpCoordinatorInput } from "./amqp/amqp-config.js";
import { parseHazelcastSpec, type HazelcastCoordinatorInput } from "./hazelcast/hazelcast-config.js";
import { parseInMemorySpec, type InMemoryCoordinatorConfig } from "./in-memory/in-memory-config.js";
import { parseNoneSpec, type NoneCoordinatorConfig } from "./none/none-config.js";
import { parsePostgresSpec, type PostgresCoordinatorSpec } from "./postgres/postgres-config.js";
import { redactUrl } from "./redact.js";

/**
 * `auto`, the default on a server database: the postgres coordinator when its client library
 * (`pg-listen`) is installed, else `none` with a warning naming the package. It chooses a transport, it
 * is not one, so it is not in {@link COORDINATOR_TRANSPORTS}.
 */
export interface AutoCoordinatorSpec {
  readonly transport: "auto";
}

/** A parsed coordinator spec: the transport and what its string said. */
export type CoordinatorSpec =
  | AutoCoordinatorSpec
  | NoneCoordinatorConfig
  | InMemoryCoordinatorConfig
  | PostgresCoordinatorSpec
  | ({ readonly transport: "amqp" } & AmqpCoordinatorInput)
  | ({ readonly transport: "hazelcast" } & HazelcastCoordinatorInput);

/** The transport names, in the order the documentation lists them. */
export const COORDINATOR_TRANSPORTS = ["none", "in-memory", "postgres", "amqp", "hazelcast"] as const;

/** One of {@link COORDINATOR_TRANSPORTS}. */
export type CoordinatorTransport = (typeof COORDINATOR_TRANSPORTS)[number];

/**
 * Validates and parses a coordinator spec string; throws `ValidationError("INVALID_COORDINATOR")` with a
 * message naming what is wrong. `undefined` and `""` mean `none`. Scheme names are case-insensitive.
 *
 * @example
 * ```ts
 * parseCoordinatorSpec("amqp://guest:guest@localhost:5672?exchange=jobs");
 * // { transport: "amqp", url: "amqp://guest:guest@localhost:5672", exchange: "jobs" }
 * parseCoordinatorSpec("redis://x"); // throws: unknown coordinator "redis"
 * ```
 */
export function parseCoordinatorSpec(spec: string | undefined): CoordinatorSpec {
  if (spec !== undefined && typeof spec !== "string") {
    throw new ValidationError(
      "INVALID_COORDINATOR",
      `coordinator must be a string or a Coordinator, got ${typeof spec}`,
    );
  }
  const text = (spec ?? "").trim();
  const separator = text.indexOf("://");
  const scheme = (separator === -1 ? text : text.slice(0, separator)).toLowerCase();
  // The scheme is lower-cased for matching; the rest (passwords, vhosts, names) keeps its case.
  const normalised = separator === -1 ? scheme : scheme + text.slice(separator);
  switch (scheme) {
    case "":
    case "none":
      if (separator !== -1) break;
      return parseNoneSpec(normalised);
    case "auto":
      if (separator !== -1) break;
      return { transport: "auto" };
    case "in-memory":
      return parseInMemorySpec(normalised);
    case "postgres":
    case "postgresql":
      return parsePostgresSpec(normalised);
    case "amqp":
    case "amqps":
      if (separator === -1) throw needsUrl("amqp", "amqp://user:pass@host:port[/vhost][?exchange=name]");
      return { transport: "amqp", ...parseAmqpSpec(normalised) };
    case "hazelcast":
      if (separator === -1) throw needsUrl("hazelcast", "hazelcast://host:port[,host:port]?cluster=name");
      return { transport: "hazelcast", ...parseHazelcastSpec(normalised) };
  }
  const shown = redactUrl(text);
  throw new ValidationError(
    "INVALID_COORDINATOR",
    `unknown coordinator "${shown.length > 80 ? `${shown.slice(0, 80)}...` : shown}": expected auto, none, ` +
      "in-memory[://bus], postgres[://url], amqp://user:pass@host:port[/vhost][?exchange=name] or " +
      "hazelcast://host:port[,host:port]?cluster=name[&topic=name]",
  );
}

function needsUrl(transport: string, form: string): ValidationError {
  return new ValidationError("INVALID_COORDINATOR", `the ${transport} coordinator needs a URL: ${form}`);
}
