/**
 * Pause and resume: of one job (`pauseJob`: a PENDING job becomes PAUSED and no node claims it until
 * `resumeJob`), and of a whole queue or job type across the cluster (`pauseQueue`, `pauseJobType`: every
 * PENDING job of it, and every job of it that becomes PENDING later, is PAUSED until the resume). The
 * store does all of it (src/store/composition/pause-sql.ts); here are the checks, the events and the wakeups.
 */
import { asPrivilegeError } from "../db/privilege-error.js";
import { JobNotFoundError, PawlError } from "../core/errors.js";
import { validateJobType, validateQueueName } from "../input/enqueue-input.js";
import { validateJobId } from "../input/job-id.js";
import type { Job } from "../store/jobs/job-row.js";
import type { JobPauseResult, PauseKind } from "../store/composition/pause-sql.js";
import type { DuplicateCanceled } from "../store/jobs/return-to-pending.js";
import { announce, type CompositionDeps } from "./deps.js";
import { JobStateError } from "./errors.js";

/** A paused queue or job type. */
export interface Pause {
  kind: PauseKind;
  name: string;
  pausedAt: Date;
  /** Who paused it (the node id of the pawl instance that called pause). */
  pausedBy: string | null;
  /** Jobs it holds PAUSED now. */
  jobs: number;
}

/** What pausing or resuming a queue or job type did. */
export interface PauseResult {
  kind: PauseKind;
  name: string;
  /** False when it was already paused (pause) or was not paused (resume). */
  changed: boolean;
  /** Jobs moved to PAUSED (pause), or back to PENDING (resume). */
  jobs: number;
  /**
   * Resume only, and only when there are any: jobs CANCELED instead of resumed because another live job
   * holds their unique key (the live job wins). The queue or type is resumed all the same.
   */
  duplicates?: DuplicateCanceled[];
}

function settle(id: string, r: JobPauseResult, action: "pause" | "resume"): Job {
  if ("job" in r) return r.job;
  if (r.refused === null) throw new JobNotFoundError(id);
  const why =
    action === "pause"
      ? `only a PENDING job can be paused; job ${id} is ${r.refused}`
      : r.refused.startsWith("PAUSED by its")
        ? `job ${id} is ${r.refused} pause: resume that instead`
        : `job ${id} is not paused (it is ${r.refused})`;
  throw new JobStateError(id, r.refused, why);
}

/**
 * Pauses one PENDING job. @throws JobNotFoundError; JobStateError (`INVALID_STATE`) when it is not PENDING.
 */
export async function pauseJob(deps: CompositionDeps, id: string): Promise<Job> {
  const jobId = validateJobId(id);
  const job = settle(jobId, await deps.store.pauseJob(jobId), "pause");
  deps.events?.emit("job:paused", { jobId, type: job.type, queue: job.queue });
  return job;
}

/**
 * Resumes a job paused by {@link pauseJob}: PENDING again (or still PAUSED, by the pause, when its queue or
 * type is paused). When another live job took its unique key while it was paused, the live job wins: it is
 * returned CANCELED, its `cancelReason` naming the live job, and `job:duplicate-canceled` is emitted.
 * @throws JobNotFoundError; JobStateError when it was not paused by pauseJob.
 */
export async function resumeJob(deps: CompositionDeps, id: string): Promise<Job> {
  const jobId = validateJobId(id);
  const result = await deps.store.resumeJob(jobId);
  const job = settle(jobId, result, "resume");
  if ("duplicate" in result && result.duplicate) {
    deps.events?.emit("job:duplicate-canceled", { ...result.duplicate, via: "resume" });
    return job;
  }
  deps.events?.emit("job:resumed", { jobId, type: job.type, queue: job.queue, status: job.status });
  if (job.status === "PENDING")
    await announce(deps, [{ ...job, scheduledTime: new Date() }], undefined, true);
  return job;
}

function validName(kind: PauseKind, name: unknown): string {
  return kind === "queue" ? validateQueueName(name) : validateJobType(name);
}

async function change(
  deps: CompositionDeps,
  kind: PauseKind,
  raw: unknown,
  resume: boolean,
): Promise<PauseResult> {
  const name = validName(kind, raw);
  const { store } = deps;
  let result;
  try {
    result = await (resume ? store.resumeRule(kind, name) : store.pauseRule(kind, name, deps.config.nodeId));
  } catch (error) {
    if ((error as { code?: string }).code === "55P03") {
      throw new PawlError(
        "INVALID_STATE",
        `could not ${resume ? "resume" : "pause"} ${kind} ${name}: the job table stayed locked by other transactions`,
        { cause: error },
      );
    }
    // Pausing creates (and the last resume drops) triggers on the job table: DDL, so the owner's role.
    throw asPrivilegeError(
      error,
      `pausing or resuming a ${kind} creates or drops triggers on the job table, which only the schema's ` +
        `owner may do: run it with the owner's role (e.g. "pawl ${resume ? "resume" : "pause"}" with the ` +
        `owner's DATABASE_URL; docs/deployment.md#roles)`,
    );
  }
  const out: PauseResult = { kind, name, changed: result.changed, jobs: result.jobs };
  if (result.duplicates.length > 0) out.duplicates = result.duplicates;
  for (const d of result.duplicates) deps.events?.emit("job:duplicate-canceled", { ...d, via: "resume" });
  deps.events?.emit(resume ? "queue:resumed" : "queue:paused", out);
  if (resume && result.jobs > 0) {
    // Wake this node and the others for the released work: one announcement per job type (a few at most).
    const now = new Date();
    const work = result.types.slice(0, 50).map((type) => ({
      id: "0",
      type,
      queue: kind === "queue" ? name : "default",
      priority: 0,
      scheduledTime: now,
    }));
    await announce(deps, work, undefined, true);
  }
  return out;
}

/** Pauses a queue cluster-wide (see {@link PawlClient.pauseQueue}). */
export function pauseQueue(deps: CompositionDeps, name: string): Promise<PauseResult> {
  return change(deps, "queue", name, false);
}

/** Resumes a paused queue. */
export function resumeQueue(deps: CompositionDeps, name: string): Promise<PauseResult> {
  return change(deps, "queue", name, true);
}

/** Pauses a job type cluster-wide. */
export function pauseJobType(deps: CompositionDeps, type: string): Promise<PauseResult> {
  return change(deps, "type", type, false);
}

/** Resumes a paused job type. */
export function resumeJobType(deps: CompositionDeps, type: string): Promise<PauseResult> {
  return change(deps, "type", type, true);
}

/** Every paused queue and job type, with the jobs each holds. */
export async function listPaused(deps: CompositionDeps): Promise<Pause[]> {
  const rows = await deps.store.listPauses();
  return rows.map((r) => ({
    kind: r.kind,
    name: r.name,
    pausedAt: r.paused_at,
    pausedBy: r.paused_by,
    jobs: Number(r.jobs),
  }));
}
