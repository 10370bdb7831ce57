/**
 * pawl's configuration: every field documented, defaulted and validated here, once, with environment
 * variables for the deployment-specific ones. The one {@link ResolvedConfig} feeds both the client and the
 * node (which reads its options from `runtimeOptions`), so a bad value is a clear error at createPawl
 * (or `new PawlClient`), never later.
 */
import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import type pg from "pg";
import type { Coordinator } from "../../coordinators/spi.js";
import { createCoordinator } from "../../coordinators/index.js";
import { systemClock, type Clock } from "../core/clock.js";
import { ValidationError } from "../core/errors.js";
import { describeValue, storableText } from "../core/input-text.js";
import { resolveLogger, type HostLogger, type Logger, type PinoLike } from "../core/logger.js";
import { defaultMaxPayloadBytes } from "./payload.js";
import { defaultSchema, validateSchemaName } from "../db/schema-name.js";
import { intOption } from "./int-option.js";
import {
  resolveRuntimeOptions,
  runtimeOptionKeys,
  type ResolvedRuntimeOptions,
  type RuntimeOptions,
} from "./runtime-config.js";
import { resolveQueueLimits } from "./queue-config.js";
import { resolveTracing, type ResolvedTracing, type TracingOptions } from "./tracing-options.js";
import { embeddedCoordinator, usesEmbeddedDatabase } from "./embedded-config.js";
import { poolConnectionString } from "../db/pool-url.js";
import {
  defaultServerCoordinator,
  emptyToUndefined,
  resolveDirectConnectionString,
} from "./pooler-config.js";

/** Options of {@link createPawl}. Every field is optional. */
export interface PawlConfig extends RuntimeOptions {
  /**
   * PostgreSQL URL. Env `DATABASE_URL`; default `postgres://postgres@127.0.0.1:5432/postgres`.
   * `pglite://memory` or `pglite://<directory>` runs an embedded PostgreSQL in this process instead
   * (docs/embedded.md): one process, one connection, the in-memory coordinator by default.
   */
  connectionString?: string;
  /**
   * Your own pool instead of `connectionString` (pawl will not end it on close). The connections pawl must
   * open itself (the postgres coordinator's LISTEN) go to the pool's database, read from its settings;
   * give `connectionString` too when they cannot be written as a URL (a password function).
   */
  pool?: pg.Pool;
  /**
   * A direct (session) connection to the same database, for what cannot go through a transaction pooler
   * (docs/deployment.md#transaction-poolers): the postgres coordinator's LISTEN connection. Everything
   * else uses `connectionString` (or `pool`): pawl holds no session state there (its advisory locks and
   * `SET LOCAL`s end with their transaction, and migrations run in one transaction each). Env `PAWL_DIRECT_DATABASE_URL`;
   * default: none (everything uses `connectionString`).
   */
  directConnectionString?: string;
  /**
   * Whether pawl names its statements, so PostgreSQL prepares each once per connection. `false` runs every
   * statement unnamed and sets nothing on the session, which transaction poolers need (PgBouncer before
   * 1.21, RDS Proxy, Supavisor and most managed poolers: docs/deployment.md#transaction-poolers). Env
   * `PAWL_PREPARED_STATEMENTS` (`true`/`false`); default true.
   */
  preparedStatements?: boolean;
  /** Connections in pawl's own pool. Default 10 (an embedded database always has one). */
  maxConnections?: number;
  /** The schema holding pawl's tables. Env `PAWL_SCHEMA`; default `pawl`. */
  schema?: string;
  /**
   * Whether a job that succeeds keeps its row (docs/job-lifecycle.md#where-a-job-lives). `true` (the
   * default): it moves to the finished table with its result, readable with `getJob` / `listJobs` until
   * `succeededRetentionMs` prunes it. `false`: the completion deletes the row, the fastest completion there
   * is (graphile-worker's model): no result is stored, and `getJob` returns null for a job that succeeded.
   * Flow members and completion jobs keep their rows either way, so flows still count and fan in. DEAD and
   * CANCELED jobs are always kept. Applies to the outcomes this process writes.
   */
  keepSucceeded?: boolean;
  /** This node's id, unique in the cluster. Env `PAWL_NODE_ID`; default host-pid-random. */
  nodeId?: string;
  /** Jobs run at once on this node. Env `PAWL_CONCURRENCY`; default 10. */
  concurrency?: number;
  /**
   * Per-queue concurrency on this node (docs/composition.md#queues), e.g. `{ default: 10, mail: 5 }`: the
   * node claims and runs each queue's jobs up to its own limit, so a full queue never starves another,
   * and claims only from these queues. The node's concurrency is the sum (`concurrency`, if given, must
   * equal it; `PAWL_CONCURRENCY` is ignored). Default: none (one claim for every queue, up to `concurrency`).
   */
  queues?: Record<string, number>;
  /**
   * Jobs claimed ahead of free slots into a local buffer, so claiming overlaps with running. Buffered
   * jobs are RUNNING in the store under this node (handed back at shutdown, recovered if it dies).
   * Default 50 x concurrency, at most 500.
   */
  prefetch?: number;
  /** Lower bound of the adaptive poll delay in normal mode (ms). Default 2000. */
  pollIntervalMs?: number;
  /** Age boost: one priority level per this many ms of waiting past the scheduled time; 0 disables. Default 15 min. */
  boostIntervalMs?: number;
  /** The largest payload accepted, in bytes of JSON. Default 256 KiB. */
  maxPayloadBytes?: number;
  /** `full` claims payloads with the batch; `lazy` claims ids and loads payloads when execution starts. Default `full`. */
  claimMode?: "full" | "lazy";
  /** How long completed outcomes may wait to be written in one batch (ms). Default 2. */
  completionFlushMs?: number;
  /**
   * Claim cursors (docs/claim-cursors.md): polls seek past each priority level's last claimed row instead
   * of rescanning the claim index from its start, and send no statement when there is nothing to find, so
   * dead index entries that a long-running transaction keeps alive are not rescanned every poll. Discovery
   * passes on their own cadences find what the cursors cannot see. `false` restores the classic claim
   * (one full claim statement per poll). Env `PAWL_CLAIM_CURSORS` (`true`/`false`); default true.
   */
  claimCursors?: boolean;
  /**
   * Claim cursors: the floored discovery pass's cadence (ms, each interval shortened by up to 25% at random).
   * It finds new rows (any priority) and rows that became due since the last full pass; a wakeup runs it at
   * once. Default 1000.
   */
  claimCursorDiscoveryMs?: number;
  /**
   * Claim cursors: the full discovery pass's cadence (ms, jittered downward like the floored pass): the
   * classic claim, which heals whatever the cursors and floors missed. At least `claimCursorDiscoveryMs`.
   * Default 10,000.
   */
  claimCursorFullDiscoveryMs?: number;
  /**
   * Claim cursors: the cap of the full pass's interval while the node finds no work (ms). Each full pass
   * that finds nothing doubles the interval from `claimCursorFullDiscoveryMs`, up to this; any claim
   * brings it back. Rows made PENDING again under old ids by another process can wait this long on an
   * idle node. At least `claimCursorFullDiscoveryMs`. Default 60,000 (or `claimCursorFullDiscoveryMs`
   * if that is longer).
   */
  claimCursorFullDiscoveryMaxMs?: number;
  /**
   * The wakeup transport: `auto`, `none`, `in-memory`, `postgres`, an amqp:// or hazelcast:// URL, or an
   * instance. Env `PAWL_COORDINATOR`. Default `auto`: LISTEN/NOTIFY on the database (`postgres`, on
   * `directConnectionString` if given) when `pg-listen` is installed, else `none` with a warning; behind a
   * transaction pooler without `directConnectionString` the LISTEN probe finds the connection deaf, warns
   * and the node polls. `in-memory` on an embedded database, which refuses `postgres`.
   */
  coordinator?: string | Coordinator;
  /**
   * OpenTelemetry tracing (docs/tracing.md): a producer span per enqueued job, a consumer span per
   * attempt, one trace from the enqueue to the last attempt. Default on when `@opentelemetry/api` is
   * installed and a tracer provider is registered, and then only (without the API it costs nothing);
   * `false` turns it off; an object tunes it ({@link TracingOptions}). Env `PAWL_TRACING` (`true`/`false`).
   */
  tracing?: boolean | TracingOptions;
  /**
   * Where pawl logs: `console`, a pino logger (recognised and adapted), winston, any {@link HostLogger},
   * or `false` for nothing. Default: warnings and errors as JSON lines on stderr.
   */
  logger?: HostLogger | PinoLike | false;
  /** The clock for in-process timers and machine delays (tests pass a ManualClock). */
  clock?: Clock;
}

/** {@link PawlConfig} with defaults applied. */
export interface ResolvedConfig {
  /** The runtime options, as given (kept for callers that read them back; the node uses `runtimeOptions`). */
  runtime: RuntimeOptions;
  /** The runtime options resolved and validated, with `pollIntervalMs` applied: what the node runs with. */
  runtimeOptions: ResolvedRuntimeOptions;
  connectionString: string;
  /** The direct (session) connection for LISTEN and migrations, or undefined (use `connectionString`). */
  directConnectionString: string | undefined;
  /** Whether statements are named and prepared (false behind a transaction pooler). */
  preparedStatements: boolean;
  pool: pg.Pool | undefined;
  maxConnections: number;
  schema: string;
  keepSucceeded: boolean;
  nodeId: string;
  /**
   * The node id was made for this process (neither `nodeId` nor `PAWL_NODE_ID` given): it carries a random
   * part, so no earlier run can have claimed rows under it.
   */
  nodeIdGenerated: boolean;
  concurrency: number;
  /** Per-queue limits, or null (no `queues`). */
  queues: ReadonlyMap<string, number> | null;
  prefetch: number;
  pollIntervalMs: number | undefined;
  boostIntervalMs: number;
  maxPayloadBytes: number;
  claimMode: "full" | "lazy";
  completionFlushMs: number;
  claimCursors: boolean;
  claimCursorDiscoveryMs: number;
  claimCursorFullDiscoveryMs: number;
  claimCursorFullDiscoveryMaxMs: number;
  coordinator: string | Coordinator;
  /** Tracing, or null when off (`tracing: false`). */
  tracing: ResolvedTracing | null;
  logger: Logger;
  clock: Clock;
}

const known = new Set<string>([
  "connectionString",
  "pool",
  "directConnectionString",
  "preparedStatements",
  "maxConnections",
  "schema",
  "keepSucceeded",
  "nodeId",
  "concurrency",
  "queues",
  "prefetch",
  "pollIntervalMs",
  "boostIntervalMs",
  "maxPayloadBytes",
  "claimMode",
  "completionFlushMs",
  "claimCursors",
  "claimCursorDiscoveryMs",
  "claimCursorFullDiscoveryMs",
  "claimCursorFullDiscoveryMaxMs",
  "coordinator",
  "tracing",
  "logger",
  "clock",
  ...runtimeOptionKeys,
]);

function envInt(name: string): number | undefined {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n)) throw new ValidationError("INVALID_CONFIG", `${name}=${raw} is not an integer`);
  return n;
}

function envBool(name: string): boolean | undefined {
  return booleanEnv(name, process.env[name]);
}

/**
 * Reads a boolean environment variable (`true`/`1`/`on`/`yes` or `false`/`0`/`off`/`no`); undefined when
 * unset or empty. The CLI reads its own environment with it.
 *
 * @throws ValidationError `INVALID_CONFIG` naming the variable for any other value.
 */
export function booleanEnv(name: string, raw: string | undefined): boolean | undefined {
  if (raw === undefined || raw === "") return undefined;
  if (/^(true|1|on|yes)$/i.test(raw)) return true;
  if (/^(false|0|off|no)$/i.test(raw)) return false;
  throw new ValidationError("INVALID_CONFIG", `${name}=${raw} is not a boolean: use true or false`);
}

/** A node id that is unique by default: host, pid and a random suffix. */
export function defaultNodeId(): string {
  return `${hostname()}-${process.pid}-${randomBytes(3).toString("hex")}`;
}

/**
 * Applies defaults and environment variables, and validates.
 *
 * @throws ValidationError `INVALID_CONFIG` (or `INVALID_SCHEMA_NAME`) naming the field.
 */
export function resolveConfig(config: PawlConfig = {}): ResolvedConfig {
  for (const key of Object.keys(config)) {
    if (!known.has(key)) {
      throw new ValidationError("INVALID_CONFIG", `unknown option ${JSON.stringify(key)} for createPawl`);
    }
  }
  const queues = resolveQueueLimits(config.queues, config.concurrency);
  const concurrency =
    queues?.concurrency ??
    intOption("concurrency", config.concurrency ?? envInt("PAWL_CONCURRENCY") ?? 10, 1, 10_000);
  const nodeId = config.nodeId ?? process.env.PAWL_NODE_ID ?? defaultNodeId();
  if (typeof nodeId !== "string" || nodeId.length === 0 || nodeId.length > 200) {
    throw new ValidationError(
      "INVALID_CONFIG",
      `invalid nodeId ${describeValue(nodeId)}: use 1-200 characters`,
    );
  }
  // The node id is written into every row it claims: text PostgreSQL refuses would fail every claim.
  storableText("nodeId", nodeId, "INVALID_CONFIG");
  const claimMode = config.claimMode ?? "full";
  if (claimMode !== "full" && claimMode !== "lazy") {
    throw new ValidationError(
      "INVALID_CONFIG",
      `invalid claimMode ${JSON.stringify(claimMode)}: use full or lazy`,
    );
  }
  // With the user's own pool, the connections pawl opens itself (the postgres coordinator's LISTEN) go to
  // the pool's database, not to DATABASE_URL's or the default's.
  const fromPool =
    config.pool !== undefined && !usesEmbeddedDatabase(config.pool, "")
      ? poolConnectionString(config.pool)
      : undefined;
  const connectionString =
    config.connectionString ??
    fromPool ??
    process.env.DATABASE_URL ??
    "postgres://postgres@127.0.0.1:5432/postgres";
  if (typeof connectionString !== "string" || connectionString.length === 0) {
    throw new ValidationError("INVALID_CONFIG", "connectionString must be a non-empty string");
  }
  const directConnectionString = resolveDirectConnectionString(
    config.directConnectionString ?? emptyToUndefined(process.env.PAWL_DIRECT_DATABASE_URL),
    config.pool,
    connectionString,
  );
  const preparedStatements = config.preparedStatements ?? envBool("PAWL_PREPARED_STATEMENTS") ?? true;
  if (typeof preparedStatements !== "boolean") {
    throw new ValidationError(
      "INVALID_CONFIG",
      `invalid preparedStatements ${describeValue(preparedStatements)}: use true, or false behind a transaction pooler`,
    );
  }
  const claimCursors = config.claimCursors ?? envBool("PAWL_CLAIM_CURSORS") ?? true;
  if (typeof claimCursors !== "boolean") {
    throw new ValidationError(
      "INVALID_CONFIG",
      `invalid claimCursors ${JSON.stringify(claimCursors)}: use true or false`,
    );
  }
  const claimCursorDiscoveryMs = intOption(
    "claimCursorDiscoveryMs",
    config.claimCursorDiscoveryMs ?? 1000,
    1,
    3_600_000,
  );
  const claimCursorFullDiscoveryMs = intOption(
    "claimCursorFullDiscoveryMs",
    config.claimCursorFullDiscoveryMs ?? Math.max(10_000, claimCursorDiscoveryMs),
    claimCursorDiscoveryMs,
    24 * 3_600_000,
  );
  const claimCursorFullDiscoveryMaxMs = intOption(
    "claimCursorFullDiscoveryMaxMs",
    config.claimCursorFullDiscoveryMaxMs ?? Math.max(60_000, claimCursorFullDiscoveryMs),
    claimCursorFullDiscoveryMs,
    24 * 3_600_000,
  );
  const keepSucceeded = config.keepSucceeded ?? true;
  if (typeof keepSucceeded !== "boolean") {
    throw new ValidationError(
      "INVALID_CONFIG",
      `invalid keepSucceeded ${describeValue(keepSucceeded)}: use true or false`,
    );
  }
  const runtime: RuntimeOptions = {};
  for (const k of runtimeOptionKeys) if (config[k] !== undefined) Object.assign(runtime, { [k]: config[k] });
  const pollIntervalMs =
    config.pollIntervalMs === undefined
      ? undefined
      : intOption("pollIntervalMs", config.pollIntervalMs, 1, 3_600_000);
  return {
    runtime,
    runtimeOptions: resolveRuntimeOptions(runtime, pollIntervalMs),
    connectionString,
    directConnectionString,
    preparedStatements,
    pool: config.pool,
    maxConnections: intOption("maxConnections", config.maxConnections ?? 10, 2, 1000),
    schema: validateSchemaName(config.schema ?? process.env.PAWL_SCHEMA ?? defaultSchema),
    keepSucceeded,
    nodeId,
    nodeIdGenerated: config.nodeId === undefined && process.env.PAWL_NODE_ID === undefined,
    concurrency,
    queues: queues?.limits ?? null,
    prefetch: intOption("prefetch", config.prefetch ?? Math.min(500, concurrency * 50), 0, 100_000),
    pollIntervalMs,
    boostIntervalMs: intOption("boostIntervalMs", config.boostIntervalMs ?? 15 * 60_000, 0, 2 ** 31 - 1),
    maxPayloadBytes: intOption(
      "maxPayloadBytes",
      config.maxPayloadBytes ?? defaultMaxPayloadBytes,
      2,
      64 * 1024 * 1024,
    ),
    claimMode,
    completionFlushMs: intOption("completionFlushMs", config.completionFlushMs ?? 2, 0, 10_000),
    claimCursors,
    claimCursorDiscoveryMs,
    claimCursorFullDiscoveryMs,
    claimCursorFullDiscoveryMaxMs,
    coordinator: usesEmbeddedDatabase(config.pool, connectionString)
      ? embeddedCoordinator(config.coordinator ?? process.env.PAWL_COORDINATOR)
      : (config.coordinator ??
        process.env.PAWL_COORDINATOR ??
        defaultServerCoordinator({
          pool: config.pool,
          poolUrl: fromPool,
          connectionString: config.connectionString,
          direct: directConnectionString,
        })),
    tracing: resolveTracing(config.tracing ?? envBool("PAWL_TRACING")),
    logger: resolveLogger(config.logger),
    clock: config.clock ?? systemClock,
  };
}

/**
 * Creates the coordinator a resolved configuration names, with the node's identity, database, logger and
 * clock: the one place the client (for waitFor) and the node build theirs from the config.
 */
export function coordinatorFor(c: ResolvedConfig): Promise<Coordinator> {
  return createCoordinator(c.coordinator, {
    nodeId: c.nodeId,
    // LISTEN needs a session: a transaction pooler hands each statement to any server connection.
    connectionString: c.directConnectionString ?? c.connectionString,
    schema: c.schema,
    logger: c.logger,
    clock: c.clock,
  });
}
