/**
 * One attempt's bookkeeping on a node: the claimed job, its registered type, its context once running,
 * and the flags that keep its outcome from being recorded twice (a handler that settles after the
 * watchdog already ended the attempt is ignored).
 */
import type { ClaimedJob } from "../../store/claim/claim-jobs.js";
import type { JobEventInfo } from "../../core/events.js";
import type { BreakerDecision } from "../../logic/breaker.js";
import type { TaskJob } from "../../machines/job-task-machine.js";
import type { JobContext } from "./job-context.js";
import type { Lane } from "../claim/lanes.js";
import type { JobType } from "../registry.js";
import type { RateKey } from "../../logic/rate-limit.js";

/** An attempt in flight on this node. */
export interface JobRun {
  claimed: ClaimedJob;
  type: JobType;
  task: TaskJob;
  info: JobEventInfo;
  slot: number;
  /** The lane the job was claimed for; its slot counts against that lane's limit until it finishes. */
  lane: Lane;
  claimedAt: number;
  payload: unknown;
  ctx: JobContext | null;
  startedAt: number;
  /** The outcome was decided (settled, timed out or aborted): later settlements are ignored. */
  settled: boolean;
  permitHeld: boolean;
  breaker: BreakerDecision | null;
  /** A validation error found before running (a rate-limit key function's error included). */
  invalid: Error | null;
  /** The rate-limit keys the attempt is admitted under (derived with the payload's validation); null: none. */
  rateKeys: RateKey[] | null;
  cancelRequested: boolean;
  /** When the watchdog must be armed (clock ms), or 0 once armed or not needed. */
  armAt: number;
  /** Whether the slot's watchdog actor is armed for this attempt. */
  armed: boolean;
  /** The attempt's span when it is traced (src/node/attempt/attempt-tracer.ts), opaque here; else null. */
  trace: object | null;
}

/** Builds the event info of a claimed job. */
export function jobInfo(c: ClaimedJob): JobEventInfo {
  return {
    id: c.id,
    type: c.type,
    queue: c.queue,
    priority: c.priority,
    attempt: c.attempt,
    maxAttempts: c.maxAttempts,
  };
}

/**
 * The bookkeeping of a claimed job about to start in `slot`. Built once per job (the hot path): one
 * object for the run, one for the task's view of it, one for the event info.
 */
export function newJobRun(
  job: ClaimedJob,
  type: JobType,
  slot: number,
  lane: Lane,
  claimedAt: number,
  cancelRequested: boolean,
): JobRun {
  return {
    claimed: job,
    type,
    task: {
      id: job.id,
      type: job.type,
      attempt: job.attempt,
      hasPayload: job.payload !== undefined,
      claimedAt,
      service: type.service,
      resource: type.resource,
    },
    info: jobInfo(job),
    slot,
    lane,
    claimedAt,
    payload: job.payload,
    ctx: null,
    startedAt: 0,
    settled: false,
    permitHeld: false,
    breaker: null,
    invalid: null,
    rateKeys: null,
    cancelRequested,
    armAt: 0,
    armed: false,
    trace: null,
  };
}
