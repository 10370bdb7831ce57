/**
 * `pawl/coordinators`: the wakeup transports behind one factory.
 *
 * {@link createCoordinator} turns a spec string into a coordinator, not yet started. Each network
 * transport is loaded with a dynamic `import()` when chosen, so an application using LISTEN/NOTIFY never
 * loads amqplib or hazelcast-client. Their client libraries (`pg-listen`, `amqplib`, `hazelcast-client`)
 * are optional peer dependencies: the application installs the one it chooses, and choosing a transport
 * whose client is missing is a `MissingDependencyError` naming the package. Everything exported statically here
 * is free of client libraries: the SPI types, spec parsing, the shared building blocks for writing a
 * custom transport, and the dependency-free `none` and `in-memory` coordinators. This file is the only
 * entry point: the transport folders have no index of their own.
 */
import { importOptional, MissingDependencyError, ValidationError } from "../src/core/errors.js";
import type { CoordinatorOptions } from "./coordinator-options.js";
import { parseCoordinatorSpec } from "./coordinator-spec.js";
import { postgresChannelName } from "./postgres/postgres-config.js";
import type { Coordinator } from "./spi.js";

export type {
  Coordinator,
  CoordinatorEvents,
  CoordinatorStatus,
  FoldedNotify,
  TransactionalNotify,
  WakeupHint,
} from "./spi.js";
export {
  COORDINATOR_TRANSPORTS,
  parseCoordinatorSpec,
  type AutoCoordinatorSpec,
  type CoordinatorSpec,
  type CoordinatorTransport,
} from "./coordinator-spec.js";
export {
  backoffDelay,
  resolveCoordinatorOptions,
  withJitter,
  type CoordinatorOptions,
  type ReconnectOptions,
  type ResolvedCoordinatorOptions,
} from "./coordinator-options.js";
export { BaseCoordinator } from "./base-coordinator.js";
export { DEFAULT_COALESCE_MS, HintCoalescer, mergeHints, type HintCoalescerOptions } from "./coalescer.js";
export {
  decodeHint,
  encodeHint,
  HINT_FORMAT_VERSION,
  isValidHint,
  MAX_ENCODED_HINT_BYTES,
} from "./hint-codec.js";
export { redactUrl } from "./redact.js";
export { NoneCoordinator } from "./none/none-coordinator.js";
export { parseNoneSpec, type NoneCoordinatorConfig } from "./none/none-config.js";
export { InMemoryCoordinator } from "./in-memory/in-memory-coordinator.js";
export { InMemoryBus, publishRawInMemory, type BusMember } from "./in-memory/in-memory-bus.js";
export {
  DEFAULT_IN_MEMORY_BUS,
  parseInMemorySpec,
  validateInMemoryConfig,
  type InMemoryCoordinatorConfig,
} from "./in-memory/in-memory-config.js";
export {
  parsePostgresSpec,
  postgresChannelName,
  resolvePostgresConfig,
  type PostgresCoordinatorConfig,
  type PostgresCoordinatorInput,
  type PostgresCoordinatorSpec,
} from "./postgres/postgres-config.js";
export {
  DEFAULT_AMQP_EXCHANGE,
  parseAmqpSpec,
  resolveAmqpConfig,
  type AmqpCoordinatorConfig,
  type AmqpCoordinatorInput,
} from "./amqp/amqp-config.js";
export {
  DEFAULT_HAZELCAST_TOPIC,
  parseHazelcastSpec,
  resolveHazelcastConfig,
  type HazelcastCoordinatorConfig,
  type HazelcastCoordinatorInput,
} from "./hazelcast/hazelcast-config.js";
// Type-only, so naming a class does not load its client library.
export type { PostgresCoordinator } from "./postgres/postgres-coordinator.js";
export type { AmqpCoordinator } from "./amqp/amqp-coordinator.js";
export type { HazelcastCoordinator } from "./hazelcast/hazelcast-coordinator.js";

/** Options of {@link createCoordinator}: the shared coordinator options plus what the runtime knows. */
export interface CreateCoordinatorOptions extends CoordinatorOptions {
  /** The job database; the `postgres` coordinator listens there unless its spec names another URL. */
  connectionString: string;
  /** The pawl schema; the `postgres` coordinator derives its channel from it (`pawl_<schema>_wakeup`). */
  schema: string;
}

/**
 * Builds the coordinator a spec names, loading its transport on demand; an instance is returned as is.
 * `auto` (createPawl's default on a server database) is `postgres` when pg-listen is installed, else
 * `none`, with a warning on `options.logger` naming the package.
 * The result is not started: the runtime subscribes, then calls `start()`. Throws
 * `ValidationError("INVALID_COORDINATOR")` for a bad spec, and `MissingDependencyError`
 * (`MISSING_DEPENDENCY`) when the transport's client library is not installed; never for an unreachable
 * server.
 *
 * @example
 * ```ts
 * const coordinator = await createCoordinator("postgres", {
 *   nodeId: "node-a",
 *   connectionString: "postgres://localhost/app",
 *   schema: "pawl",
 *   logger,
 * });
 * coordinator.onWakeup(() => poller.wake());
 * await coordinator.start();
 * ```
 */
export async function createCoordinator(
  spec: string | Coordinator | undefined,
  options: CreateCoordinatorOptions,
): Promise<Coordinator> {
  if (typeof spec === "object" && spec !== null) {
    if (!isCoordinator(spec)) {
      throw new ValidationError(
        "INVALID_COORDINATOR",
        "coordinator object does not implement the Coordinator interface",
      );
    }
    return spec;
  }
  const parsed = parseCoordinatorSpec(spec);
  const common: CoordinatorOptions = {
    nodeId: options.nodeId,
    logger: options.logger,
    coalesceMs: options.coalesceMs,
    clock: options.clock,
    startTimeoutMs: options.startTimeoutMs,
    reconnect: options.reconnect,
  };
  switch (parsed.transport) {
    case "auto": {
      try {
        return await createCoordinator("postgres", options);
      } catch (error) {
        if (!(error instanceof MissingDependencyError)) throw error;
        // The default must not fail a start over an optional package; it says what it costs instead.
        options.logger?.warn(
          "pg-listen is not installed, so this node hears no wakeups and finds new jobs by polling " +
            "(seconds to a minute on an idle node); install it for sub-second pickup: npm install pg-listen",
        );
        return createCoordinator("none", options);
      }
    }
    case "none": {
      const { NoneCoordinator } = await import("./none/none-coordinator.js");
      return new NoneCoordinator();
    }
    case "in-memory": {
      const { InMemoryCoordinator } = await import("./in-memory/in-memory-coordinator.js");
      return new InMemoryCoordinator(parsed, common);
    }
    case "postgres": {
      await importOptional("pg-listen", "the postgres coordinator", () => import("pg-listen"));
      const { PostgresCoordinator } = await import("./postgres/postgres-coordinator.js");
      return new PostgresCoordinator(
        {
          connectionString: parsed.connectionString ?? options.connectionString,
          channel: postgresChannelName(options.schema),
        },
        common,
      );
    }
    case "amqp": {
      await importOptional("amqplib", "the amqp coordinator", () => import("amqplib"));
      const { AmqpCoordinator } = await import("./amqp/amqp-coordinator.js");
      return new AmqpCoordinator(parsed, common);
    }
    case "hazelcast": {
      await importOptional("hazelcast-client", "the hazelcast coordinator", () => import("hazelcast-client"));
      const { HazelcastCoordinator } = await import("./hazelcast/hazelcast-coordinator.js");
      return new HazelcastCoordinator(parsed, common);
    }
  }
}

const coordinatorMethods = ["start", "notifyNewWork", "onWakeup", "on", "status", "close"] as const;

/** Whether a value has every method of the {@link Coordinator} interface. */
export function isCoordinator(value: unknown): value is Coordinator {
  if (typeof value !== "object" || value === null) return false;
  const record = value as Record<string, unknown>;
  return coordinatorMethods.every((method) => typeof record[method] === "function");
}
