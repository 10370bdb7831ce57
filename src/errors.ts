/**
 * Every error pawl throws on purpose is a {@link PawlError} with a stable `code`, so callers can branch on
 * the code instead of parsing messages. Input errors are thrown before anything is written.
 */

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
  | "NOT_WAITING";

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
