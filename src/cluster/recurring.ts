/**
 * Recurring jobs. `pawl.schedule(name, cron, payload, options)` validates the expression (a clear
 * `INVALID_CRON` error at registration, nothing written) and upserts a row of scheduler_recurring. The
 * scheduler's runOnce(), under the `pawl:recurring` lease, claims the due rows (FOR UPDATE SKIP LOCKED)
 * in a transaction, enqueues each fire's child in that same transaction and advances `next_fire_at` with
 * the pure {@link planFire} before committing. A crash anywhere before COMMIT undoes both the child and
 * the advance, so a fire is enqueued exactly once however many nodes check; the child also carries the
 * unique key `recurring:<name>:<fire time ISO>` and a fire at or before `last_fired_at` is never repeated.
 *
 * Fires missed while every node was down follow the row's policy: `catch-up-one` (the default) enqueues
 * one child for the missed fires, `skip` drops them (see docs/cluster.md).
 */
import type { Clock } from "../core/clock.js";
import {
  buildNewJob,
  validateJobType,
  type EnqueueOptions,
  type NewJob,
  type TypeDefaults,
} from "../input/enqueue-input.js";
import { validateConcurrency } from "../input/concurrency-input.js";
import { ValidationError } from "../core/errors.js";
import { toError, type PawlEventEmitter } from "../core/events.js";
import type { PawlTracing } from "../tracing/pawl-tracing.js";
import { traceInsert } from "../tracing/producer-spans.js";
import { RECURRING_NAME } from "../tracing/attributes.js";
import type { Logger } from "../core/logger.js";
import { nextFire, planFire, validateCron, type MissedFirePolicy } from "../logic/cron.js";
import { resolvePriority, type Priority } from "../input/priority.js";
import type { ClusterStore } from "../store/job-store.js";
import type { EnqueuedJob } from "../store/jobs/enqueue-jobs.js";
import type { RecurringRow } from "../store/cluster/recurring-sql.js";
import { leaseNames, type Lease, type LeaseManager } from "./lease.js";
import type { BackgroundService } from "../core/periodic.js";

/** A recurring schedule (see {@link Pawl.schedule}). */
export type Schedule = RecurringRow;

/** Options of {@link Pawl.schedule}. */
export interface ScheduleOptions {
  /** The IANA time zone the expression is read in. Default `UTC`. */
  timezone?: string;
  /** The job type of the children. Default: the schedule's name. */
  type?: string;
  /** The children's priority. Default: the type's, else `normal`. */
  priority?: Priority;
  /** What happens to fires missed while no node was checking. Default `catch-up-one`. */
  missedFirePolicy?: MissedFirePolicy;
  /**
   * The concurrency key every child carries (a tenant id, say: 1-500 characters), as enqueue's
   * `concurrencyKey`: children of one key run within its limit and are claimed fairly across keys
   * (docs/fairness.md).
   */
  concurrencyKey?: string;
  /**
   * At most this many jobs of `concurrencyKey` run at once (an integer from 1). Needs `concurrencyKey`.
   * Default: the children's type's `concurrencyLimit` on the node that fires, else no limit.
   */
  concurrencyLimit?: number;
}

const optionKeys = new Set([
  "timezone",
  "type",
  "priority",
  "missedFirePolicy",
  "concurrencyKey",
  "concurrencyLimit",
]);
const policies: readonly MissedFirePolicy[] = ["skip", "catch-up-one"];

/** The longest schedule name. */
export const maxScheduleNameLength = 200;

/** Validates a schedule name. @throws ValidationError `INVALID_OPTION`. */
export function validateScheduleName(name: unknown): string {
  if (
    typeof name !== "string" ||
    name.length === 0 ||
    name.length > maxScheduleNameLength ||
    /[\s\p{Cc}]/u.test(name)
  ) {
    throw new ValidationError(
      "INVALID_OPTION",
      `invalid schedule name ${JSON.stringify(name)}: use 1-${maxScheduleNameLength} characters without spaces or control characters`,
    );
  }
  return name;
}

/** What registration needs from the node. */
export interface ScheduleContext {
  typeDefaults: (type: string) => TypeDefaults | undefined;
  maxPayloadBytes: number;
}

/**
 * Validates and stores a schedule. Everything is checked before any SQL runs.
 *
 * @throws ValidationError `INVALID_CRON` for a bad expression or time zone, `INVALID_OPTION` /
 *   `UNKNOWN_OPTION` / `INVALID_JOB_TYPE` / `INVALID_PRIORITY` / payload errors as enqueue.
 */
export async function registerSchedule(
  store: ClusterStore,
  name: string,
  cron: string,
  payload: unknown,
  options: ScheduleOptions | undefined,
  ctx: ScheduleContext,
  now: Date | null = null,
): Promise<Schedule> {
  validateScheduleName(name);
  const o = (options ?? {}) as Record<string, unknown>;
  if (typeof o !== "object" || o === null || Array.isArray(o)) {
    throw new ValidationError("INVALID_OPTION", "schedule options must be an object");
  }
  for (const key of Object.keys(o)) {
    if (!optionKeys.has(key)) {
      throw new ValidationError(
        "UNKNOWN_OPTION",
        `unknown schedule option ${JSON.stringify(key)}; known: ${[...optionKeys].join(", ")}`,
      );
    }
  }
  const timezone = o.timezone ?? "UTC";
  if (typeof timezone !== "string") {
    throw new ValidationError(
      "INVALID_CRON",
      `invalid time zone ${JSON.stringify(timezone)}: use an IANA name`,
    );
  }
  validateCron(cron, timezone);
  const type = validateJobType(o.type ?? name);
  const policy = (o.missedFirePolicy ?? "catch-up-one") as MissedFirePolicy;
  if (!policies.includes(policy)) {
    throw new ValidationError(
      "INVALID_OPTION",
      `invalid missedFirePolicy ${JSON.stringify(policy)}: use "skip" or "catch-up-one"`,
    );
  }
  const priority = o.priority === undefined ? null : resolvePriority(o.priority);
  // The schedule keeps the limit it states, not the type's default: that default is applied at each fire
  // from the type's registration on the node that fires, as the queue and timeout are.
  const concurrency = validateConcurrency(o.concurrencyKey, o.concurrencyLimit, undefined);
  // The payload is checked as enqueue checks it (JSON, size, the type's validator if registered here).
  const job = buildNewJob(
    type,
    payload,
    { ...(priority === null ? {} : { priority }), ...childConcurrency(concurrency) },
    ctx.typeDefaults(type),
    ctx.maxPayloadBytes,
  );
  const dbNow = (now ?? (await store.databaseTime())).getTime();
  const first = nextFire(cron, dbNow, timezone);
  if (first === null)
    throw new ValidationError("INVALID_CRON", `cron expression ${JSON.stringify(cron)} never fires`);
  return store.upsertRecurring({
    name,
    cron,
    timezone,
    type,
    payloadJson: job.payloadJson,
    priority,
    missedFirePolicy: policy,
    ...concurrency,
    nextFireAt: new Date(first),
  });
}

/** A schedule's stored key and limit as the enqueue options of its children (absent when null). */
function childConcurrency(
  c: Pick<RecurringRow, "concurrencyKey" | "concurrencyLimit">,
): Pick<EnqueueOptions, "concurrencyKey" | "concurrencyLimit"> {
  return {
    ...(c.concurrencyKey === null ? {} : { concurrencyKey: c.concurrencyKey }),
    ...(c.concurrencyLimit === null ? {} : { concurrencyLimit: c.concurrencyLimit }),
  };
}

/** Deletes a schedule; returns whether it existed. */
export function unregisterSchedule(store: ClusterStore, name: string): Promise<boolean> {
  return store.deleteRecurring(validateScheduleName(name));
}

/** Every schedule, by name. */
export function listSchedules(store: ClusterStore): Promise<Schedule[]> {
  return store.listRecurring();
}

/** A child enqueued by a fire. */
export interface FiredChild {
  name: string;
  /** The fire time (the child's scheduled time). */
  fireAt: Date;
  jobId: string;
  type: string;
  /** False when the child already existed (its unique key was live): nothing new was inserted. */
  inserted: boolean;
}

/** What one pass of the scheduler did. */
export interface RecurringResult {
  /** Whether this pass took the lease: false when nothing was due, or when another node held it. */
  ran: boolean;
  fired: FiredChild[];
  /** Due rows whose fire was dropped (missed under `skip`, or already fired), then advanced. */
  skipped: { name: string; dueAt: Date }[];
  /** Rows whose fire failed (a payload the type's validator refuses, a cron that no longer computes). */
  failed: { name: string; error: Error }[];
  /** Milliseconds from the database's now to the next fire of any schedule; null when there is none. */
  nextDueInMs: number | null;
  durationMs: number;
}

/** What a {@link RecurringScheduler} works with. */
export interface RecurringSchedulerDeps {
  store: ClusterStore;
  leases: LeaseManager;
  clock: Clock;
  events: PawlEventEmitter;
  logger: Logger;
  typeDefaults: (type: string) => TypeDefaults | undefined;
  maxPayloadBytes: number;
  /** Called after a batch committed with the children inserted (wakes the local poller, publishes a hint). */
  afterEnqueue?: (jobs: readonly EnqueuedJob[]) => void;
  /** Schedules fired per transaction. Default 100. */
  batchSize?: number;
  /** Traces each fire's enqueue (a producer span named for the schedule); null or absent: untraced. */
  tracing?: PawlTracing | null;
}

type BatchResult = Pick<RecurringResult, "fired" | "skipped" | "failed"> & { claimed: number };

/** Fires due recurring schedules. */
export class RecurringScheduler implements BackgroundService<RecurringResult> {
  private readonly batch: number;

  constructor(private readonly deps: RecurringSchedulerDeps) {
    this.batch = deps.batchSize ?? 100;
  }

  /**
   * One pass: when a schedule is due, fires what is due under the lease. `now` overrides the database's
   * time (tests).
   */
  async runOnce(now: Date | null = null): Promise<RecurringResult> {
    const started = this.deps.clock.now();
    // Nothing due, nothing to take the lease for: taking and giving it back are two writes (a transaction
    // id and a WAL flush each), which every idle node would otherwise pay at every check. The read decides
    // only whether to try; the claim below still finds what is due under the lease.
    const dueInMs = await this.deps.store.msUntilNextFire(now);
    if (dueInMs === null || dueInMs > 0) {
      const durationMs = this.deps.clock.now() - started;
      return { ran: false, fired: [], skipped: [], failed: [], nextDueInMs: dueInMs, durationMs };
    }
    const outcome = await this.deps.leases.withLease(
      leaseNames.recurring,
      async (lease: Lease) => {
        const total: BatchResult = { fired: [], skipped: [], failed: [], claimed: 0 };
        while (lease.valid()) {
          const r = await this.fireBatch(now);
          total.fired.push(...r.fired);
          total.skipped.push(...r.skipped);
          total.failed.push(...r.failed);
          if (r.claimed < this.batch) break;
        }
        return total;
      },
      now,
    );
    const nextDueInMs = await this.deps.store.msUntilNextFire(now);
    const base = { nextDueInMs, durationMs: this.deps.clock.now() - started };
    if (!outcome.acquired) return { ran: false, fired: [], skipped: [], failed: [], ...base };
    const { fired, skipped, failed } = outcome.value;
    return { ran: true, fired, skipped, failed, ...base };
  }

  /**
   * Fires up to one batch of due schedules in one transaction, without taking the lease. The row locks
   * alone keep fires unique (tests run it from competing nodes to show that); runOnce() adds the lease so
   * only one node does the work.
   */
  async fireBatch(now: Date | null = null): Promise<BatchResult> {
    const { store, events, logger } = this.deps;
    const fired: FiredChild[] = [];
    const skipped: { name: string; dueAt: Date }[] = [];
    const failed: { name: string; error: Error }[] = [];
    const inserted: EnqueuedJob[] = [];
    let claimed = 0;
    await store.transaction(async (tx) => {
      const { rows, databaseTime } = await tx.claimDueRecurring(this.batch, now);
      claimed = rows.length;
      for (const row of rows) {
        const result = await this.fireOne(tx, row, databaseTime.getTime());
        if (result.kind === "fired") {
          fired.push(result.child);
          if (result.job.inserted) inserted.push(result.job);
        } else if (result.kind === "skipped") {
          skipped.push({ name: row.name, dueAt: row.nextFireAt });
        } else {
          failed.push({ name: row.name, error: result.error });
        }
      }
    });
    for (const f of failed) {
      logger.error("a recurring schedule could not fire", { schedule: f.name, error: f.error.message });
      events.emit("error", { where: `recurring ${f.name}`, error: f.error });
    }
    for (const c of fired) {
      if (c.inserted)
        events.emit("recurring:fired", { name: c.name, fireAt: c.fireAt, jobId: c.jobId, type: c.type });
    }
    if (inserted.length > 0) {
      try {
        this.deps.afterEnqueue?.(inserted);
      } catch (error) {
        events.emit("error", { where: "recurring afterEnqueue", error: toError(error) });
      }
    }
    return { fired, skipped, failed, claimed };
  }

  /** Fires one claimed row on `tx`, the batch's transaction (its child and its advance commit together). */
  private async fireOne(
    tx: ClusterStore,
    row: RecurringRow,
    nowMs: number,
  ): Promise<
    | { kind: "fired"; child: FiredChild; job: EnqueuedJob }
    | { kind: "skipped" }
    | { kind: "failed"; error: Error }
  > {
    let plan;
    try {
      plan = planFire(row.cron, row.nextFireAt.getTime(), nowMs, row.missedFirePolicy, row.timezone);
    } catch (error) {
      // The expression no longer computes (a library upgrade, a zone removed): stop it rather than spin.
      await tx.disableRecurring(row.name);
      return { kind: "failed", error: toError(error) };
    }
    let fireAt = plan.fireAtMs;
    if (fireAt !== null && row.lastFiredAt !== null && fireAt <= row.lastFiredAt.getTime()) fireAt = null;
    const next = new Date(plan.nextFireAtMs);
    if (fireAt === null) {
      await tx.advanceRecurring(row.name, next, null);
      return { kind: "skipped" };
    }
    const fireDate = new Date(fireAt);
    let job: NewJob;
    try {
      job = buildNewJob(
        row.type,
        row.payload,
        {
          runAt: fireDate,
          uniqueKey: `recurring:${row.name}:${fireDate.toISOString()}`,
          ...(row.priority === null ? {} : { priority: row.priority }),
          ...childConcurrency(row),
        },
        this.deps.typeDefaults(row.type),
        this.deps.maxPayloadBytes,
      );
    } catch (error) {
      // This fire cannot be enqueued (the type's validator refuses the payload): drop it, keep the schedule.
      await tx.advanceRecurring(row.name, next, null);
      return { kind: "failed", error: toError(error) };
    }
    const [enqueued] = await traceInsert(this.deps.tracing ?? null, [job], (js) => tx.enqueue(js), {
      [RECURRING_NAME]: row.name,
    });
    await tx.advanceRecurring(row.name, next, fireDate);
    const e = enqueued as EnqueuedJob;
    return {
      kind: "fired",
      job: e,
      child: { name: row.name, fireAt: fireDate, jobId: e.id, type: e.type, inserted: e.inserted },
    };
  }
}
