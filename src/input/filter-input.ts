/**
 * The filters of the read and clean-up APIs (`listJobs`, `dlq.list`, `dlq.purge`, `listFlows`), checked
 * before any SQL runs. A filter that could never match because it is malformed (a status that does not
 * exist, a misspelt key, `limit: "x"`, a job type with NUL in it) is a caller's mistake, so it is a
 * {@link ValidationError} rather than an empty page or a database error. Pure.
 */
import { describeValue } from "../core/input-text.js";
import { validateJobType, validateQueueName } from "./enqueue-input.js";
import { ValidationError } from "../core/errors.js";
import { validateJobId } from "./job-id.js";
import { jobStatuses, type JobStatus } from "../core/job.js";

/** Filters of `listJobs` (`K`: the job type names allowed, a task map's when it has one). */
export interface ListJobsFilter<K extends string = string> {
  status?: JobStatus | readonly JobStatus[];
  /** Only jobs of this type (with a task map: one of its names, and the jobs read are typed by it). */
  type?: K;
  queue?: string;
  /** At most this many, newest first: an integer >= 1 (default 50, capped at 1000). */
  limit?: number;
  /** Only jobs with an id below this one (for paging). */
  beforeId?: string;
}

/** Filters for listing and purging dead jobs. */
export interface DeadLetterFilter<K extends string = string> {
  /** Only jobs of this type (with a task map: one of its names, and the jobs listed are typed by it). */
  type?: K;
  /** Only jobs that died before this time (purge). */
  before?: Date;
  /** At most this many (list; default 50, at most 1000). */
  limit?: number;
}

/** The kinds of flow. */
export type FlowKind = "chain" | "batch" | "workflow";

/** Filters of `listFlows`. */
export interface FlowListFilter {
  kind?: FlowKind;
  /** `running` (not every member terminal yet) or `completed`. */
  state?: "running" | "completed";
  /** At most this many, newest first (default 50, at most 1000). */
  limit?: number;
}

/** The most rows one page returns; a larger `limit` is capped to it. */
export const maxListLimit = 1000;
/** The rows one page returns without a `limit`. */
export const defaultListLimit = 50;

const flowKinds: readonly FlowKind[] = ["chain", "batch", "workflow"];

function fields(what: string, value: unknown, keys: readonly string[]): Record<string, unknown> {
  if (value === undefined) return {};
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ValidationError("INVALID_OPTION", `the ${what} filter must be an object`);
  }
  for (const key of Object.keys(value)) {
    if (!keys.includes(key)) {
      throw new ValidationError(
        "UNKNOWN_OPTION",
        `unknown ${what} filter ${JSON.stringify(key)}; known: ${keys.join(", ")}`,
      );
    }
  }
  return value as Record<string, unknown>;
}

/**
 * A page size: an integer of at least 1, capped at {@link maxListLimit}; {@link defaultListLimit} when
 * absent. @throws ValidationError `INVALID_OPTION`.
 */
export function listLimit(value: unknown, what = "limit"): number {
  if (value === undefined) return defaultListLimit;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1) {
    throw new ValidationError(
      "INVALID_OPTION",
      `invalid ${what} ${describeValue(value)}: use an integer of at least 1 (at most ${maxListLimit} are returned)`,
    );
  }
  return Math.min(maxListLimit, value);
}

function status(value: unknown): JobStatus {
  if (typeof value !== "string" || !(jobStatuses as readonly string[]).includes(value)) {
    throw new ValidationError(
      "INVALID_OPTION",
      `invalid status ${describeValue(value)}: use one of ${jobStatuses.join(", ")}`,
    );
  }
  return value as JobStatus;
}

/**
 * Validates a {@link ListJobsFilter}: known keys only, statuses that exist, a valid job type and queue,
 * a job id as `beforeId`, a page size as `limit`.
 *
 * @throws ValidationError (`INVALID_OPTION`, `UNKNOWN_OPTION`, `INVALID_JOB_TYPE`); nothing has been read.
 */
export function validateListJobsFilter(filter: unknown): Required<Pick<ListJobsFilter, "limit">> & {
  status?: JobStatus[];
  type?: string;
  queue?: string;
  beforeId?: string;
} {
  const f = fields("listJobs", filter, ["status", "type", "queue", "limit", "beforeId"]);
  return {
    ...(f.status === undefined
      ? {}
      : { status: Array.isArray(f.status) ? f.status.map(status) : [status(f.status)] }),
    ...(f.type === undefined ? {} : { type: validateJobType(f.type) }),
    ...(f.queue === undefined ? {} : { queue: validateQueueName(f.queue) }),
    ...(f.beforeId === undefined ? {} : { beforeId: validateJobId(f.beforeId) }),
    limit: listLimit(f.limit),
  };
}

/**
 * Validates a {@link DeadLetterFilter} (of `dlq.list` and `dlq.purge`): a valid job type, a valid Date as
 * `before`, a page size as `limit` (which purge ignores).
 *
 * @throws ValidationError (`INVALID_OPTION`, `UNKNOWN_OPTION`, `INVALID_JOB_TYPE`); nothing has been read.
 */
export function validateDeadLetterFilter(filter: unknown): DeadLetterFilter {
  const f = fields("dead letter", filter, ["type", "before", "limit"]);
  if (f.before !== undefined && (!(f.before instanceof Date) || Number.isNaN(f.before.getTime()))) {
    throw new ValidationError("INVALID_OPTION", `invalid before ${String(f.before)}: use a valid Date`);
  }
  return {
    ...(f.type === undefined ? {} : { type: validateJobType(f.type) }),
    ...(f.before === undefined ? {} : { before: f.before as Date }),
    limit: listLimit(f.limit),
  };
}

/**
 * Validates a {@link FlowListFilter} (of `listFlows`): a known kind, `running` or `completed`, a page size.
 *
 * @throws ValidationError (`INVALID_OPTION`, `UNKNOWN_OPTION`); nothing has been read.
 */
export function validateFlowListFilter(filter: unknown): FlowListFilter {
  const f = fields("listFlows", filter, ["kind", "state", "limit"]);
  if (f.kind !== undefined && !(flowKinds as readonly unknown[]).includes(f.kind)) {
    throw new ValidationError(
      "INVALID_OPTION",
      `invalid flow kind ${describeValue(f.kind)}: use one of ${flowKinds.join(", ")}`,
    );
  }
  if (f.state !== undefined && f.state !== "running" && f.state !== "completed") {
    throw new ValidationError(
      "INVALID_OPTION",
      `invalid flow state ${describeValue(f.state)}: use running or completed`,
    );
  }
  return {
    ...(f.kind === undefined ? {} : { kind: f.kind as FlowKind }),
    ...(f.state === undefined ? {} : { state: f.state as "running" | "completed" }),
    limit: listLimit(f.limit),
  };
}

/** The most members {@link validateFlowMemberLimit} allows one read of a flow to return. */
export const maxFlowMemberLimit = 10_000;

/**
 * Validates the `memberLimit` of `getFlow`: an integer from 0 to {@link maxFlowMemberLimit}.
 * @throws ValidationError `INVALID_OPTION`.
 */
export function validateFlowMemberLimit(value: unknown): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0 || value > maxFlowMemberLimit) {
    throw new ValidationError(
      "INVALID_OPTION",
      `invalid memberLimit ${describeValue(value)}: use an integer from 0 to ${maxFlowMemberLimit}`,
    );
  }
  return value;
}
