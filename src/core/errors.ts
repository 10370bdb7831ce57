/**
 * Every error pawl throws on purpose is a {@link PawlError} with a stable `code`, so callers can branch on
 * the code instead of parsing messages. Input errors are thrown before anything is written.
 */
import { createRequire } from "node:module";
import { moduleLocation } from "./module-location.js";

/** The stable codes of {@link PawlError}. */
export type PawlErrorCode =
  | "INVALID_CONFIG"
  | "INVALID_SCHEMA_NAME"
  | "INVALID_JOB_TYPE"
  | "INVALID_PAYLOAD"
  | "PAYLOAD_TOO_LARGE"
  | "INVALID_PRIORITY"
  | "INVALID_OPTION"
  | "UNKNOWN_OPTION"
  | "VALIDATION_FAILED"
  | "JOB_NOT_FOUND"
  | "INVALID_STATE"
  | "INVALID_CRON"
  | "INVALID_COORDINATOR"
  | "NOT_STARTED"
  | "CLOSED"
  | "INVALID_FLOW"
  | "FLOW_NOT_FOUND"
  | "NOT_WAITING"
  | "DATABASE_UNAVAILABLE"
  | "MISSING_DEPENDENCY"
  | "WAIT_TIMEOUT"
  | "INVALID_PROGRESS"
  | "SCHEMA_OUTDATED"
  | "SCHEMA_INCOMPATIBLE"
  | "INSUFFICIENT_PRIVILEGE"
  // Durable handlers (docs/durable.md#errors).
  | "DUPLICATE_STEP"
  | "STEP_KIND_MISMATCH"
  | "STEP_RESULT_INVALID"
  | "STEP_RESULT_TOO_LARGE"
  | "INVALID_STEP"
  | "NOT_DURABLE"
  | "CHILD_FAILED"
  // Durable machines (docs/durable-machines.md).
  | "MACHINE_FINISHED"
  | "NOT_A_MACHINE";

/**
 * The base class of the errors pawl raises itself.
 *
 * @example
 * ```ts
 * try { await pawl.enqueue("", {}); }
 * catch (e) { if (e instanceof PawlError && e.code === "INVALID_JOB_TYPE") ... }
 * ```
 */
export class PawlError extends Error {
  /** A stable, machine-readable code. */
  readonly code: PawlErrorCode;

  constructor(code: PawlErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "PawlError";
    this.code = code;
  }
}

/** Raised when input to the API is malformed; nothing has been written when it is thrown. */
export class ValidationError extends PawlError {
  constructor(code: PawlErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = "ValidationError";
  }
}

/** Raised when a job id names no job. */
export class JobNotFoundError extends PawlError {
  constructor(id: string) {
    super("JOB_NOT_FOUND", `no job with id ${id}`);
    this.name = "JobNotFoundError";
  }
}

/**
 * Raised when PostgreSQL could not be reached, or the connection broke under an operation (a restart, a
 * terminated backend, the pool's connect timeout). `maybeWritten` tells a caller whether a retry could
 * write twice: false when the failure came before the statement was sent (nothing was written), true when
 * the connection broke after, so the statement may have committed (retry with a `uniqueKey` to stay
 * idempotent).
 *
 * @example
 * ```ts
 * try { await pawl.enqueue("email.send", payload, { uniqueKey }); }
 * catch (e) { if (e instanceof DatabaseUnavailableError) retryLater(); else throw e; }
 * ```
 */
export class DatabaseUnavailableError extends PawlError {
  /** Whether the statement may have been written before the connection failed. */
  readonly maybeWritten: boolean;

  constructor(message: string, maybeWritten: boolean, options?: { cause?: unknown }) {
    super("DATABASE_UNAVAILABLE", message, options);
    this.name = "DatabaseUnavailableError";
    this.maybeWritten = maybeWritten;
  }
}

/**
 * The error an attempt ends with when it reaches its hard deadline (the watchdog's `hard-timeout` step).
 * Recorded in the job's error list under the name `JobTimeoutError`; the attempt counts, and the job is
 * retried or DEAD like any failure.
 *
 * @example
 * ```ts
 * const job = await pawl.getJob(id);
 * const timedOut = job?.errors.some((e) => e.name === "JobTimeoutError");
 * ```
 */
export class JobTimeoutError extends Error {
  constructor(timeoutMs: number) {
    super(`attempt timed out after ${timeoutMs} ms`);
    this.name = "JobTimeoutError";
  }
}

/**
 * Raised when a feature needs an optional peer dependency that is not installed: a coordinator's client
 * library (`pg-listen`, `amqplib`, `hazelcast-client`) or `prom-client` for `pawl/observability`. The core
 * needs only `pg`, `xstate` and `croner`, so these are installed by the applications that use them.
 *
 * @example
 * ```ts
 * try { await pawl.start(); }
 * catch (e) { if (e instanceof MissingDependencyError) console.error(`npm install ${e.packageName}`); }
 * ```
 */
export class MissingDependencyError extends PawlError {
  /** The npm package to install. */
  readonly packageName: string;

  constructor(packageName: string, feature: string, options?: { cause?: unknown }) {
    super(
      "MISSING_DEPENDENCY",
      `${feature} needs the package "${packageName}", which is not installed; install it with: npm install ${packageName}`,
      options,
    );
    this.name = "MissingDependencyError";
    this.packageName = packageName;
  }
}

/**
 * Imports an optional peer dependency (or a module of ours that imports one) and turns "package not
 * found" into a {@link MissingDependencyError} naming it. Any other failure, including a missing file of
 * pawl's own, is rethrown as it is, so a broken install is not misreported as a missing package.
 *
 * @example
 * ```ts
 * const { AmqpCoordinator } = await importOptional("amqplib", "the amqp coordinator", () => import("../amqp/amqp-coordinator.js"));
 * ```
 */
export async function importOptional<T>(
  packageName: string,
  feature: string,
  load: () => Promise<T>,
): Promise<T> {
  try {
    return await load();
  } catch (error) {
    throw missingDependencyOr(error, packageName, feature);
  }
}

/**
 * The synchronous twin of {@link importOptional}, for a CommonJS optional peer that a synchronous API needs
 * (prom-client for `createMetrics`): `require`d from pawl's own location, so it is found where an `import`
 * from pawl would find it, and loaded when first used rather than by a top-level await, which would make
 * the entry impossible to `require()` (ERR_REQUIRE_ASYNC_MODULE).
 *
 * @example
 * ```ts
 * const prom = requireOptional<typeof import("prom-client")>("prom-client", "pawl/observability");
 * ```
 */
export function requireOptional<T>(packageName: string, feature: string): T {
  try {
    return createRequire(moduleLocation())(packageName) as T;
  } catch (error) {
    throw missingDependencyOr(error, packageName, feature);
  }
}

/** A {@link MissingDependencyError} when `error` is "package `packageName` not found", else `error` itself. */
function missingDependencyOr(error: unknown, packageName: string, feature: string): unknown {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  const notFound = code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND";
  // Node names the package in quotes: "Cannot find package 'amqplib' imported from ...".
  const names =
    typeof message === "string" &&
    [`'${packageName}'`, `"${packageName}"`, `'${packageName}/`].some((q) => message.includes(q));
  return notFound && names ? new MissingDependencyError(packageName, feature, { cause: error }) : error;
}

/**
 * Raised by `pawl.waitFor(id, { timeoutMs })` when the job has not reached a final status (SUCCEEDED,
 * DEAD, CANCELED) in time. The job is not touched: it goes on running, and `lastStatus` is the status the
 * last read saw (null when no read had answered yet).
 *
 * @example
 * ```ts
 * try { await pawl.waitFor(job, { timeoutMs: 5_000 }); }
 * catch (e) { if (e instanceof WaitTimeoutError) reply(202, { id: e.jobId, status: e.lastStatus }); }
 * ```
 */
export class WaitTimeoutError extends PawlError {
  /** The job waited for. */
  readonly jobId: string;
  /** The status the last read saw, or null. */
  readonly lastStatus: string | null;

  constructor(jobId: string, timeoutMs: number, lastStatus: string | null) {
    super(
      "WAIT_TIMEOUT",
      `job ${jobId} did not finish within ${timeoutMs} ms${lastStatus ? ` (last seen ${lastStatus})` : ""}`,
    );
    this.name = "WaitTimeoutError";
    this.jobId = jobId;
    this.lastStatus = lastStatus;
  }
}

/**
 * The schema and this node's release do not fit: `SCHEMA_OUTDATED` when the release needs migrations the
 * schema has not had (run `pawl migrate` or `pawl.migrate()`), `SCHEMA_INCOMPATIBLE` when a newer release
 * applied a migration that older nodes cannot run beside (deploy the newer release here). The message
 * names both versions and what to do.
 *
 * @example
 * ```ts
 * try { await pawl.start(); }
 * catch (e) { if (e instanceof SchemaVersionError && e.code === "SCHEMA_OUTDATED") await pawl.migrate(); }
 * ```
 */
export class SchemaVersionError extends PawlError {
  /** The schema's version (its newest applied migration). */
  readonly schemaVersion: number;
  /** The newest migration this release knows. */
  readonly requiredVersion: number;

  constructor(
    code: "SCHEMA_OUTDATED" | "SCHEMA_INCOMPATIBLE",
    message: string,
    versions: { schemaVersion: number; requiredVersion: number },
  ) {
    super(code, message);
    this.name = "SchemaVersionError";
    this.schemaVersion = versions.schemaVersion;
    this.requiredVersion = versions.requiredVersion;
  }
}

/**
 * Thrown by `start()` when a live process already runs under this node id (`code` `INVALID_STATE`): two
 * processes under one id would each rescue the other's running jobs as left by a previous run. Give each
 * process its own `nodeId`. A previous run that crashed does not cause it: its session lock is gone, or
 * its heartbeat goes stale (docs/deployment.md#node-ids).
 *
 * @example
 * ```ts
 * try { await pawl.start(); }
 * catch (e) { if (e instanceof NodeIdInUseError) console.error(`${e.nodeId} runs on ${e.host}`); }
 * ```
 */
export class NodeIdInUseError extends PawlError {
  /** The node id in use. */
  readonly nodeId: string;
  /** The host the other process reported. */
  readonly host: string;
  /** The pid the other process reported. */
  readonly pid: number;

  constructor(nodeId: string, other: { host: string; pid: number }) {
    super(
      "INVALID_STATE",
      `node id ${JSON.stringify(nodeId)} is in use by a live node (host ${other.host}, pid ${other.pid}): ` +
        `give each node its own id`,
    );
    this.name = "NodeIdInUseError";
    this.nodeId = nodeId;
    this.host = other.host;
    this.pid = other.pid;
  }
}
