/**
 * Configuration of the PostgreSQL LISTEN/NOTIFY coordinator.
 *
 * The channel is derived from the pawl schema, so two pawl installations sharing one database (two
 * schemas) never wake each other. PostgreSQL truncates identifiers to 63 bytes in LISTEN but rejects
 * longer channel names in `pg_notify()`, so long names are shortened here, deterministically, with a hash
 * keeping them distinct.
 */
import { createHash } from "node:crypto";
import { ValidationError } from "../../src/core/errors.js";
import { coordinatorInt } from "../coordinator-options.js";

/** What a `postgres` spec says: the listening database, when it differs from the job database. */
export interface PostgresCoordinatorSpec {
  readonly transport: "postgres";
  /** A separate database URL for the listening connection; absent means "the job database". */
  readonly connectionString?: string;
}

/** Input to {@link resolvePostgresConfig}: what a caller sets in code. */
export interface PostgresCoordinatorInput {
  /** The database to LISTEN on (the same database the notifying store writes to). */
  connectionString: string;
  /** The channel name: 1-63 bytes. Use {@link postgresChannelName} to derive it from the schema. */
  channel: string;
  /** How often the listener runs a trivial query to detect a silently dead connection, ms. Default 10,000. */
  paranoidCheckingMs?: number;
  /** Bound on one connection attempt, ms. Default 5,000. */
  connectTimeoutMs?: number;
  /** `application_name` of the listening connection (finds it in pg_stat_activity). Default `pawl-wakeup-<nodeId>`. */
  applicationName?: string;
  /**
   * How long a LISTEN probe may take before the connection is judged deaf (a transaction pooler), ms.
   * Default 5,000.
   */
  listenProbeMs?: number;
}

/** The resolved configuration of the postgres coordinator. */
export interface PostgresCoordinatorConfig {
  readonly transport: "postgres";
  readonly connectionString: string;
  readonly channel: string;
  readonly paranoidCheckingMs: number;
  readonly connectTimeoutMs: number;
  readonly applicationName: string | undefined;
  readonly listenProbeMs: number;
}

/** PostgreSQL's identifier limit (NAMEDATALEN - 1), which channel names share. */
const MAX_IDENTIFIER_BYTES = 63;

/**
 * The wakeup channel of a pawl schema: `pawl_<schema>_wakeup`, shortened with a hash when it would exceed
 * PostgreSQL's 63-byte identifier limit.
 *
 * @example
 * ```ts
 * postgresChannelName("pawl"); // "pawl_pawl_wakeup"
 * ```
 */
export function postgresChannelName(schema: string): string {
  const plain = `pawl_${schema}_wakeup`;
  if (Buffer.byteLength(plain) <= MAX_IDENTIFIER_BYTES) return plain;
  const hash = createHash("sha256").update(schema).digest("hex").slice(0, 8);
  // Schema names are validated ASCII identifiers elsewhere; slicing by characters is then slicing by bytes.
  return `pawl_${schema.slice(0, 36)}_${hash}_wakeup`;
}

/**
 * Parses `postgres` (listen on the job database) or a `postgres://` / `postgresql://` URL (listen on that
 * database instead, e.g. a direct connection when the job pool goes through a transaction-mode pooler,
 * which cannot LISTEN).
 *
 * @example
 * ```ts
 * parsePostgresSpec("postgres"); // { transport: "postgres" }
 * parsePostgresSpec("postgres://u@db:5432/jobs"); // { transport: "postgres", connectionString: "postgres://u@db:5432/jobs" }
 * ```
 */
export function parsePostgresSpec(spec: string): PostgresCoordinatorSpec {
  const text = spec.trim();
  if (text === "postgres" || text === "postgresql") return { transport: "postgres" };
  if (!/^postgres(ql)?:\/\//.test(text)) {
    throw new ValidationError("INVALID_COORDINATOR", `"${spec}" is not a postgres coordinator spec`);
  }
  try {
    new URL(text);
  } catch {
    throw new ValidationError(
      "INVALID_COORDINATOR",
      "postgres coordinator URL is malformed (expected postgres://user:password@host:port/database)",
    );
  }
  return { transport: "postgres", connectionString: text };
}

/** Applies defaults and validates a config built in code. */
export function resolvePostgresConfig(input: PostgresCoordinatorInput): PostgresCoordinatorConfig {
  if (typeof input.connectionString !== "string" || input.connectionString.length === 0) {
    throw new ValidationError("INVALID_COORDINATOR", "postgres coordinator needs a connectionString");
  }
  const bytes = typeof input.channel === "string" ? Buffer.byteLength(input.channel) : 0;
  if (bytes === 0 || bytes > MAX_IDENTIFIER_BYTES || input.channel.includes("\0")) {
    throw new ValidationError(
      "INVALID_COORDINATOR",
      `postgres coordinator channel must be 1-${MAX_IDENTIFIER_BYTES} bytes, got "${String(input.channel)}"`,
    );
  }
  return {
    transport: "postgres",
    connectionString: input.connectionString,
    channel: input.channel,
    paranoidCheckingMs: coordinatorInt(
      "paranoidCheckingMs",
      input.paranoidCheckingMs ?? 10_000,
      100,
      3_600_000,
    ),
    connectTimeoutMs: coordinatorInt("connectTimeoutMs", input.connectTimeoutMs ?? 5_000, 100, 600_000),
    applicationName: input.applicationName,
    listenProbeMs: coordinatorInt("listenProbeMs", input.listenProbeMs ?? 5_000, 100, 600_000),
  };
}
