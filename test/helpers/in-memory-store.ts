/**
 * The in-memory twin of the store gateway: the {@link NodeStore} slice a node's runtime uses (claim,
 * payloads, outcomes, cancel, permits, rate limits, a job's composition row and park), on a Map, with time from an
 * injected clock. It lets the runtime be tested with `ManualClock` and no database.
 *
 * It follows the SQL's rules where the runtime can tell: claims take due PENDING rows of the given types
 * (and queue) in claim order (priority + age boost descending, then scheduled time, then id), outcomes only
 * touch rows RUNNING under the writing node, a unique key is held by at most one PENDING or RUNNING job.
 * test/contract/store-contract.ts runs the same scenarios against it and PostgreSQL so the two cannot
 * drift. Not covered: flows, pauses, signals beyond park, the dead letter queue, transactions.
 */
import type { Clock } from "../../src/core/clock.js";
import type { NewJob } from "../../src/input/enqueue-input.js";
import { ageBoost } from "../../src/logic/age-boost.js";
import type { CancelResult } from "../../src/store/jobs/cancel-job.js";
import type { ClaimArgs, ClaimedJob } from "../../src/store/claim/claim-jobs.js";
import type { EnqueuedJob } from "../../src/store/jobs/enqueue-jobs.js";
import type {
  Completion,
  Death,
  ErrorInfo,
  OutcomeItem,
  Reschedule,
  Retry,
} from "../../src/store/outcomes/finish-jobs.js";
import type { JobCompositionRow } from "../../src/store/composition/flow-sql.js";
import type { Job, JobErrorRecord, JobStatus } from "../../src/store/jobs/job-row.js";
import type { NodeStore } from "../../src/store/job-store.js";
import type { JobCount, ListJobsFilter } from "../../src/store/jobs/read-jobs.js";
import type { Park } from "../../src/store/composition/signal-sql.js";
import type { RateKey } from "../../src/logic/rate-limit.js";
import type { RateAdmission, RateWindow } from "../../src/store/cluster/rate-limit-sql.js";

/** Statuses that hold a unique key (the partial unique index of migration 0001). */
const keyHolding: ReadonlySet<JobStatus> = new Set(["PENDING", "RUNNING"]);
/** Statuses a cancel changes. */
const cancelable: ReadonlySet<JobStatus> = new Set(["PENDING", "RUNNING", "WAITING", "PAUSED"]);
/** The newest errors kept per job (as finish-jobs.ts). */
const keepErrors = 20;

/** The twin of the store gateway's node slice. */
export class InMemoryJobStore implements NodeStore {
  /** Every job by id (tests may read it; write through the methods). */
  readonly jobs = new Map<string, Job>();
  /** Held permits: resource -> job id -> node id. */
  readonly permits = new Map<string, Map<string, string>>();
  /** Rate-limit logs: key -> admitted start times (ms), and each key's last limit. */
  readonly rateLogs = new Map<string, number[]>();
  private readonly rateLimits = new Map<string, { limit: number; perMs: number }>();
  /** How many claim calls were made (tests wait on the runtime's polls through it). */
  claims = 0;
  private nextId = 1n;

  constructor(private readonly clock: Clock) {}

  private now(): Date {
    return new Date(this.clock.now());
  }

  async enqueue(jobs: readonly NewJob[]): Promise<EnqueuedJob[]> {
    const now = this.now();
    return jobs.map((n) => {
      if (n.uniqueKey !== null) {
        const live = [...this.jobs.values()].find(
          (j) => j.uniqueKey === n.uniqueKey && keyHolding.has(j.status),
        );
        if (live) return { ...live, inserted: false };
      }
      const job: Job = {
        id: String(this.nextId++),
        type: n.type,
        queue: n.queue,
        payload: JSON.parse(n.payloadJson) as unknown,
        priority: n.priority,
        status: "PENDING",
        scheduledTime: n.runAt ?? new Date(now.getTime() + n.delayMs),
        attempts: 0,
        maxAttempts: n.maxAttempts,
        timeoutMs: n.timeoutMs,
        pickedBy: null,
        pickedAt: null,
        uniqueKey: n.uniqueKey,
        errors: [],
        lastError: null,
        result: null,
        cancelReason: null,
        createdAt: now,
        updatedAt: now,
        finishedAt: null,
      };
      this.jobs.set(job.id, job);
      return { ...job, inserted: true };
    });
  }

  async claim(args: ClaimArgs): Promise<ClaimedJob[]> {
    this.claims++;
    if (args.limit <= 0 || args.types.length === 0) return [];
    const now = (args.now ?? this.now()).getTime();
    const types = new Set(args.types);
    const queue = args.queue ?? null;
    const due = [...this.jobs.values()].filter(
      (j) =>
        j.status === "PENDING" &&
        j.scheduledTime.getTime() <= now &&
        types.has(j.type) &&
        (queue === null || j.queue === queue),
    );
    const effective = (j: Job) => j.priority + ageBoost(j.scheduledTime.getTime(), now, args.boostIntervalMs);
    due.sort(
      (a, b) =>
        effective(b) - effective(a) ||
        a.scheduledTime.getTime() - b.scheduledTime.getTime() ||
        (BigInt(a.id) < BigInt(b.id) ? -1 : 1),
    );
    return due.slice(0, args.limit).map((j) => {
      const boost = effective(j) - j.priority;
      this.update(j, {
        status: "RUNNING",
        pickedBy: args.nodeId,
        pickedAt: new Date(now),
        attempts: j.attempts + 1,
      });
      return this.claimed(j.id, boost, args.withPayload);
    });
  }

  async claimById(id: string, nodeId: string): Promise<ClaimedJob | null> {
    const j = this.jobs.get(id);
    if (!j || j.status !== "PENDING") return null;
    this.update(j, { status: "RUNNING", pickedBy: nodeId, pickedAt: this.now(), attempts: j.attempts + 1 });
    return this.claimed(id, 0, true);
  }

  async loadPayloads(ids: readonly string[]): Promise<Map<string, unknown>> {
    const out = new Map<string, unknown>();
    for (const id of ids) {
      const j = this.jobs.get(id);
      if (j) out.set(id, j.payload);
    }
    return out;
  }

  async complete(nodeId: string, items: readonly Completion[]): Promise<Set<string>> {
    return this.finish(nodeId, items, (j, i) => ({
      status: "SUCCEEDED",
      result: i.resultJson === null ? null : (JSON.parse(i.resultJson) as unknown),
      finishedAt: this.now(),
    }));
  }

  async retry(nodeId: string, items: readonly Retry[]): Promise<Set<string>> {
    return this.finish(nodeId, items, (j, i) => ({
      status: "PENDING",
      scheduledTime: new Date(this.clock.now() + i.delayMs),
      pickedBy: null,
      pickedAt: null,
      ...this.withError(j, i.error),
    }));
  }

  async kill(nodeId: string, items: readonly Death[]): Promise<Set<string>> {
    return this.finish(nodeId, items, (j, i) => ({
      status: "DEAD",
      finishedAt: this.now(),
      ...this.withError(j, i.error),
    }));
  }

  async reschedule(nodeId: string, items: readonly Reschedule[]): Promise<Set<string>> {
    return this.finish(nodeId, items, (j, i) => ({
      status: "PENDING",
      // As the SQL: at least a millisecond past the row's time, so the next lease's token differs.
      scheduledTime: new Date(Math.max(this.clock.now() + i.delayMs, j.scheduledTime.getTime() + 1)),
      attempts: Math.max(0, j.attempts - 1),
      pickedBy: null,
      pickedAt: null,
    }));
  }

  async cancel(id: string, reason = "canceled by request"): Promise<CancelResult | null> {
    const j = this.jobs.get(id);
    if (!j) return null;
    const previousStatus = j.status;
    if (!cancelable.has(previousStatus)) return { outcome: "already-final", previousStatus, job: { ...j } };
    this.update(j, { status: "CANCELED", cancelReason: reason, finishedAt: this.now() });
    return {
      outcome: previousStatus === "RUNNING" ? "running-canceled" : "canceled",
      previousStatus,
      job: { ...j },
    };
  }

  async canceledAmong(ids: readonly string[]): Promise<Set<string>> {
    return new Set(ids.filter((id) => this.jobs.get(id)?.status === "CANCELED"));
  }

  async get(id: string): Promise<Job | null> {
    const j = this.jobs.get(id);
    return j ? { ...j } : null;
  }

  async list(filter: ListJobsFilter = {}): Promise<Job[]> {
    const statuses = filter.status === undefined ? null : new Set([filter.status].flat());
    return [...this.jobs.values()]
      .filter(
        (j) =>
          (statuses === null || statuses.has(j.status)) &&
          (filter.type === undefined || j.type === filter.type) &&
          (filter.queue === undefined || j.queue === filter.queue) &&
          (filter.beforeId === undefined || BigInt(j.id) < BigInt(filter.beforeId)),
      )
      .sort((a, b) => (BigInt(b.id) < BigInt(a.id) ? -1 : 1))
      .slice(0, Math.min(filter.limit ?? 50, 1000))
      .map((j) => ({ ...j }));
  }

  async counts(): Promise<JobCount[]> {
    const by = new Map<string, JobCount>();
    for (const j of this.jobs.values()) {
      if (j.status !== "PENDING" && j.status !== "RUNNING" && j.status !== "DEAD") continue;
      const key = `${j.status}\u0000${j.type}`;
      const c = by.get(key) ?? { status: j.status, type: j.type, count: 0 };
      c.count++;
      by.set(key, c);
    }
    return [...by.values()];
  }

  async acquirePermit(resource: string, jobId: string, nodeId: string, capacity: number): Promise<boolean> {
    const held = this.permits.get(resource) ?? new Map<string, string>();
    this.permits.set(resource, held);
    // As the SQL: permits of jobs no longer RUNNING were leaked by a lost release, and are freed first.
    for (const id of held.keys()) if (this.jobs.get(id)?.status !== "RUNNING") held.delete(id);
    if (!held.has(jobId) && held.size >= capacity) return false;
    held.set(jobId, nodeId);
    return true;
  }

  async releasePermit(resource: string, jobId: string): Promise<void> {
    this.permits.get(resource)?.delete(jobId);
  }

  async admitRate(keys: readonly RateKey[], _jobId: string, now?: Date): Promise<RateAdmission> {
    if (keys.length === 0) return { admitted: true, retryInMs: 0, keys: [] };
    const t = (now ?? this.now()).getTime();
    const sorted = [...keys].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    // As the SQL: each key's starts in (t - perMs, t]; admitted when every key has room, then one start each.
    const windows = sorted.map((k) => {
      const log = (this.rateLogs.get(k.key) ?? []).filter((s) => s > t - k.perMs);
      this.rateLogs.set(k.key, log);
      this.rateLimits.set(k.key, { limit: k.limit, perMs: k.perMs });
      const full = log.length >= k.limit;
      const opening = full ? (log.slice().sort((a, b) => a - b)[log.length - k.limit] ?? t) + k.perMs : t;
      return { key: k.key, used: log.length, limit: k.limit, full, openInMs: full ? opening - t : 0 };
    });
    const admitted = windows.every((w) => !w.full);
    if (admitted) {
      for (const w of windows) {
        this.rateLogs.get(w.key)?.push(t);
        w.used++;
      }
    }
    const retryInMs = admitted ? 0 : Math.max(0, ...windows.map((w) => w.openInMs));
    return { admitted, retryInMs, keys: windows };
  }

  async rateWindows(keys?: readonly string[], now?: Date): Promise<RateWindow[]> {
    const t = (now ?? this.now()).getTime();
    return [...this.rateLimits]
      .filter(([key]) => keys === undefined || keys.includes(key))
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([key, { limit, perMs }]) => {
        const log = (this.rateLogs.get(key) ?? []).filter((s) => s > t - perMs).sort((a, b) => a - b);
        const oldest = log[0];
        const openAt = log.length >= limit && oldest !== undefined ? new Date(oldest + perMs) : null;
        return { key, limit, perMs, used: log.length, openAt };
      });
  }

  async readComposition(jobId: string): Promise<JobCompositionRow | null> {
    if (!this.jobs.has(jobId)) return null;
    return {
      flow_id: null,
      flow_step: null,
      flow_inputs: null,
      kind: null,
      signal_state: null,
      signal_payload: null,
      signaled_at: null,
    };
  }

  async park(nodeId: string, items: readonly Park[]): Promise<Set<string>> {
    return this.finish(nodeId, items, (j) => ({
      status: "WAITING",
      waitingFor: "signal",
      attempts: Math.max(0, j.attempts - 1),
      pickedBy: null,
      pickedAt: null,
    }));
  }

  /** Applies `change` to each item's row still RUNNING under `nodeId`; returns their ids (the SQL guard). */
  private finish<I extends OutcomeItem>(
    nodeId: string,
    items: readonly I[],
    change: (job: Job, item: I) => Partial<Job>,
  ): Set<string> {
    const landed = new Set<string>();
    for (const item of items) {
      const j = this.jobs.get(item.id);
      if (!j || j.status !== "RUNNING" || j.pickedBy !== nodeId) continue;
      // The lease guard of src/store/outcomes/finish-jobs.ts: an outcome ends only the lease it names.
      const lease = item.lease;
      if (lease && (j.attempts !== lease.attempt || j.scheduledTime.getTime() !== lease.scheduledAtMs))
        continue;
      this.update(j, change(j, item));
      landed.add(j.id);
    }
    return landed;
  }

  private withError(j: Job, e: ErrorInfo): Pick<Job, "errors" | "lastError"> {
    const record: JobErrorRecord = {
      attempt: e.attempt,
      at: this.now().toISOString(),
      name: e.name,
      message: e.message,
    };
    return { errors: [...j.errors, record].slice(-keepErrors), lastError: e.message };
  }

  private update(j: Job, change: Partial<Job>): void {
    Object.assign(j, change, { updatedAt: this.now() });
  }

  private claimed(id: string, boost: number, withPayload: boolean): ClaimedJob {
    const j = this.jobs.get(id) as Job;
    const c: ClaimedJob = {
      id: j.id,
      type: j.type,
      queue: j.queue,
      priority: j.priority,
      boost,
      attempt: j.attempts,
      maxAttempts: j.maxAttempts,
      timeoutMs: j.timeoutMs,
      scheduledAtMs: j.scheduledTime.getTime(),
    };
    if (withPayload) c.payload = j.payload;
    return c;
  }
}
