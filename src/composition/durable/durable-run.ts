/**
 * One attempt's durable calls (`ctx.step`, `ctx.sleep`, a named `ctx.waitForSignal`, `ctx.spawn`,
 * `ctx.waitFor`): the replay model of docs/durable.md. The job's recorded steps are read once, on the first
 * durable call of the attempt; each call then decides from the record under its name (the pure
 * `replayDecision`): a recorded step returns its record and runs nothing; an unrecorded one runs and is
 * recorded; a wait under way is checked, and parks the job (throws {@link DurableWait}) while it is not
 * over. Names are unique within a run: a second call with a name is a typed error.
 */
import type { PawlEvents } from "../../core/events.js";
import {
  childrenProgress,
  replayDecision,
  sleepTarget,
  stepResultJson,
  stepResultValue,
  waitEnded,
  waitTimeoutMs,
  type DurableKind,
} from "../../logic/durable-replay.js";
import type { LoadedSteps, StepRecord } from "../../store/durable/durable-store.js";
import type { SignalDelivery } from "../job-composition.js";
import {
  ChildJobFailedError,
  ChildWaitTimeoutError,
  DurableStepError,
  DurableWait,
  type ChildOutcome,
} from "./durable-errors.js";
import type { DurableServices, SpawnOptions } from "./durable-services.js";

/** What a step's body is handed. */
export interface StepContext {
  /** `<job id>:<step name>`: the same on every run of this step, for an external API to deduplicate. */
  readonly idempotencyKey: string;
  /** The step's name. */
  readonly name: string;
  /** The job's attempt that runs the body. */
  readonly attempt: number;
}

/** A child `ctx.spawn()` enqueued (the same one on every run). */
export interface SpawnedJob {
  /** The child's job id. */
  id: string;
  /** The spawn's step name. */
  step: string;
}

/** Options of a named `ctx.waitForSignal()` and of `ctx.waitFor()`. */
export interface DurableWaitOptions {
  /** How long the wait may last (ms, counted from the first run that reached it); absent: no limit. */
  timeoutMs?: number;
}

/** The attempt a run belongs to. */
export interface DurableRunScope {
  jobId: string;
  type: string;
  attempt: number;
}

const maxNameLength = 200;

/** One attempt's durable state: see the file header. */
export class DurableRun {
  private loaded: Promise<LoadedSteps> | null = null;
  private readonly recorded = new Map<string, StepRecord>();
  private readonly used = new Set<string>();
  private now = new Date(0);

  constructor(
    private readonly scope: DurableRunScope,
    private readonly services: DurableServices | undefined,
  ) {}

  private svc(name: string): DurableServices {
    if (!this.services) {
      throw new DurableStepError(
        "NOT_DURABLE",
        name,
        "durable calls need a pawl node (or pawl/testing's durable runner) to record them",
      );
    }
    return this.services;
  }

  /** The recorded steps, read once per attempt. */
  private async record(name: string): Promise<StepRecord | undefined> {
    const svc = this.svc(name);
    this.loaded ??= svc.store.loadSteps(this.scope.jobId).then((l) => {
      for (const s of l.steps) this.recorded.set(s.name, s);
      this.now = this.later(l.now);
      return l;
    });
    await this.loaded;
    return this.recorded.get(name);
  }

  /** The database's time, or pawl/testing's clock when that is ahead. */
  private later(dbNow: Date): Date {
    const t = this.services?.testNow;
    return t && t.getTime() > dbNow.getTime() ? t : dbNow;
  }

  /** A wait's end `afterMs` from now: fixed here when pawl/testing's clock is ahead, else by the database. */
  private end(afterMs: number | null): { at: Date | null; afterMs: number | null } {
    const t = this.services?.testNow;
    if (afterMs === null || !t) return { at: null, afterMs };
    return { at: new Date(t.getTime() + afterMs), afterMs: null };
  }

  /** Validates a name and takes it for this run. */
  private take(name: unknown): string {
    if (typeof name !== "string" || name.length === 0 || name.length > maxNameLength) {
      throw new DurableStepError(
        "INVALID_STEP",
        String(name),
        `a step name is a string of 1 to ${maxNameLength} characters, not ${JSON.stringify(name)}`,
      );
    }
    if (this.used.has(name)) {
      throw new DurableStepError(
        "DUPLICATE_STEP",
        name,
        `step name ${JSON.stringify(name)} is used twice in one run: give each call its own name (in a loop, include the item: \`send-\${id}\`)`,
      );
    }
    this.used.add(name);
    return name;
  }

  private emit(name: string, kind: DurableKind, outcome: PawlEvents["durable:step"]["outcome"]): void {
    const { jobId, type } = this.scope;
    this.services?.events?.emit("durable:step", { jobId, type, step: name, kind, outcome });
  }

  /** The record under `name`, decided for a call of `kind`; a mismatch throws. */
  private async decide(name: string, kind: DurableKind) {
    const rec = await this.record(name);
    const decision = replayDecision(rec, kind);
    if (decision === "mismatch") {
      throw new DurableStepError(
        "STEP_KIND_MISMATCH",
        name,
        `step ${JSON.stringify(name)} is recorded as a ${rec?.kind ?? "?"} call, not a ${kind}: a changed handler must give a changed step a new name`,
      );
    }
    return { rec, decision };
  }

  private keep(step: StepRecord): StepRecord {
    this.recorded.set(step.name, step);
    return step;
  }

  /** See JobContext.step. */
  async step<T>(rawName: string, fn: (step: StepContext) => T | Promise<T>): Promise<T> {
    const name = this.take(rawName);
    if (typeof fn !== "function") {
      throw new DurableStepError("INVALID_STEP", name, `ctx.step(${JSON.stringify(name)}) needs a function`);
    }
    const { rec, decision } = await this.decide(name, "step");
    if (decision === "replay" && rec) {
      this.emit(name, "step", "replayed");
      return stepResultValue(rec.result) as T;
    }
    const svc = this.svc(name);
    const { jobId, attempt } = this.scope;
    const startedAt = new Date();
    let value: T;
    try {
      value = await fn({ idempotencyKey: `${jobId}:${name}`, name, attempt });
    } catch (error) {
      this.emit(name, "step", "failed");
      const e = error instanceof Error ? error : new Error(String(error));
      // Best effort: the failure is visible in the step list; the attempt fails whether or not it lands.
      await svc.store
        .recordStep({
          jobId,
          name,
          kind: "step",
          attempt,
          startedAt,
          status: "failed",
          resultJson: null,
          error: { name: e.name, message: e.message.slice(0, 2000) },
        })
        .catch(() => {});
      throw error;
    }
    const encoded = stepResultJson(value, svc.maxStepResultBytes);
    if ("problem" in encoded) {
      throw new DurableStepError(
        encoded.code,
        name,
        `step ${JSON.stringify(name)}: ${encoded.problem}; nothing was recorded`,
      );
    }
    const saved = this.keep(
      await svc.store.recordStep({
        jobId,
        name,
        kind: "step",
        attempt,
        startedAt,
        status: "succeeded",
        resultJson: encoded.json,
        error: null,
      }),
    );
    this.emit(name, "step", "run");
    // The recorded answer: this run's, or the one another run of the job recorded first.
    return stepResultValue(saved.result) as T;
  }

  /** Records a wait's end (a sleep done, a signal timed out, children done) unless recorded first. */
  private async finishWait(name: string, kind: DurableKind, resultJson: string): Promise<StepRecord> {
    const { jobId, attempt } = this.scope;
    const saved = await this.svc(name).store.recordStep({
      jobId,
      name,
      kind,
      attempt,
      startedAt: new Date(),
      status: "succeeded",
      resultJson,
      error: null,
    });
    this.emit(name, kind, "run");
    return this.keep(saved);
  }

  /** The wait's row: the recorded one, or written now (its end fixed by this first run). */
  private async waitRow(
    name: string,
    kind: "sleep" | "signal" | "wait",
    rec: StepRecord | undefined,
    decision: string,
    at: Date | null,
    afterMs: number | null,
    children?: readonly string[],
  ): Promise<StepRecord> {
    if (decision === "resume" && rec) return rec;
    const { jobId, attempt } = this.scope;
    const begun = await this.svc(name).store.beginWait({
      jobId,
      name,
      kind,
      attempt,
      ...(at === null ? this.end(afterMs) : { at, afterMs: null }),
      children: children ?? null,
    });
    this.now = this.later(begun.now);
    return this.keep(begun.step);
  }

  /** See JobContext.sleep. */
  async sleep(rawName: string, msOrDate: number | Date): Promise<void> {
    const name = this.take(rawName);
    const target = sleepTarget(msOrDate);
    if (!target) {
      throw new DurableStepError(
        "INVALID_STEP",
        name,
        `ctx.sleep(${JSON.stringify(name)}) takes a number of ms >= 0 or a valid Date, not ${String(msOrDate)}`,
      );
    }
    const { rec, decision } = await this.decide(name, "sleep");
    if (decision === "replay") {
      this.emit(name, "sleep", "replayed");
      return;
    }
    const step = await this.waitRow(name, "sleep", rec, decision, target.at, target.afterMs);
    if (step.status === "succeeded") return;
    if (waitEnded(step.wakeAt, this.now)) {
      await this.finishWait(name, "sleep", "{}");
      return;
    }
    throw new DurableWait(name, "sleep", step.wakeAt);
  }

  /** See JobContext.waitForSignal (the named form). */
  async waitForSignal<P>(rawName: string, options?: DurableWaitOptions): Promise<SignalDelivery<P>> {
    const name = this.take(rawName);
    const timeoutMs = checkedWaitTimeout(name, options?.timeoutMs);
    const { rec, decision } = await this.decide(name, "signal");
    if (decision === "replay" && rec) {
      this.emit(name, "signal", "replayed");
      return deliveryOf<P>(rec.result);
    }
    const { jobId, attempt } = this.scope;
    const consumed = await this.svc(name).store.consumeSignal(jobId, name, attempt);
    if (consumed) {
      this.emit(name, "signal", "run");
      return deliveryOf<P>(this.keep(consumed).result);
    }
    const step = await this.waitRow(name, "signal", rec, decision, null, timeoutMs);
    if (step.status === "succeeded") return deliveryOf<P>(step.result);
    if (waitEnded(step.wakeAt, this.now)) {
      const saved = await this.finishWait(
        name,
        "signal",
        JSON.stringify({ timedOut: true, at: this.now.toISOString() }),
      );
      return deliveryOf<P>(saved.result);
    }
    throw new DurableWait(name, "signal", step.wakeAt);
  }

  /** See JobContext.spawn. */
  async spawn(rawName: string, type: string, payload: unknown, options?: SpawnOptions): Promise<SpawnedJob> {
    const name = this.take(rawName);
    const { rec, decision } = await this.decide(name, "spawn");
    const recordedId = rec?.children?.[0];
    if (decision === "replay" && recordedId !== undefined) {
      this.emit(name, "spawn", "replayed");
      return { id: recordedId, step: name };
    }
    const { jobId, attempt } = this.scope;
    const id = await this.svc(name).spawn(jobId, name, attempt, type, payload, options);
    this.keep({
      jobId,
      name,
      kind: "spawn",
      status: "succeeded",
      attempt,
      startedAt: new Date(),
      finishedAt: new Date(),
      wakeAt: null,
      children: [id],
      result: { jobId: id },
      error: null,
    });
    this.emit(name, "spawn", "run");
    return { id, step: name };
  }

  /** The ids this job spawned (recorded, or spawned in this run). */
  private spawnedIds(): Set<string> {
    const ids = new Set<string>();
    for (const s of this.recorded.values())
      if (s.kind === "spawn") for (const c of s.children ?? []) ids.add(c);
    return ids;
  }

  /** See JobContext.waitFor. */
  async waitFor<R = unknown>(
    rawName: string,
    children: SpawnedJob | string | readonly (SpawnedJob | string)[],
    options?: DurableWaitOptions,
  ): Promise<R | R[]> {
    const name = this.take(rawName);
    const single = !Array.isArray(children);
    const list = (single ? [children] : children) as readonly (SpawnedJob | string)[];
    const ids = list.map((c) => (typeof c === "string" ? c : (c as SpawnedJob | null)?.id));
    const timeoutMs = checkedWaitTimeout(name, options?.timeoutMs);
    const { rec, decision } = await this.decide(name, "wait");
    if (decision === "replay" && rec) {
      this.emit(name, "wait", "replayed");
      return childrenResult<R>(name, rec.result, single);
    }
    const spawned = this.spawnedIds();
    const bad = ids.find((id) => typeof id !== "string" || !spawned.has(id));
    if (ids.length === 0 || bad !== undefined || (ids.length === 0 && !single)) {
      throw new DurableStepError(
        "INVALID_STEP",
        name,
        ids.length === 0
          ? `ctx.waitFor(${JSON.stringify(name)}) needs at least one child`
          : `ctx.waitFor(${JSON.stringify(name)}): ${String(bad)} is not a child this job spawned with ctx.spawn()`,
      );
    }
    const awaited = ids as string[];
    const step = await this.waitRow(name, "wait", rec, decision, null, timeoutMs, awaited);
    if (step.status === "succeeded") return childrenResult<R>(name, step.result, single);
    const svc = this.svc(name);
    const states = await svc.store.childStates(awaited);
    const progress = childrenProgress(awaited, states);
    if (progress.state === "done") {
      const byId = new Map(states.map((s) => [s.id, s]));
      const outcomes: ChildOutcome[] = awaited.map((id) => {
        const s = byId.get(id);
        if (!s) return { id, status: "MISSING", result: null, error: null };
        const status = s.status as ChildOutcome["status"];
        return {
          id,
          status,
          result: status === "SUCCEEDED" ? (s.result ?? null) : null,
          error: status === "SUCCEEDED" ? null : (s.error?.message ?? null),
        };
      });
      const saved = await this.finishWait(name, "wait", JSON.stringify({ children: outcomes }));
      return childrenResult<R>(name, saved.result, single);
    }
    if (waitEnded(step.wakeAt, this.now)) {
      const saved = await this.finishWait(
        name,
        "wait",
        JSON.stringify({ timedOut: true, pending: progress.pending }),
      );
      return childrenResult<R>(name, saved.result, single);
    }
    throw new DurableWait(name, "children", step.wakeAt);
  }
}

/** A recorded signal wait as the delivery it stands for. */
function deliveryOf<P>(result: unknown): SignalDelivery<P> {
  const r = (result ?? {}) as { timedOut?: boolean; payload?: unknown; at?: string };
  const at = new Date(r.at ?? 0);
  return r.timedOut === true ? { timedOut: true, at } : { timedOut: false, payload: r.payload as P, at };
}

/** A recorded children wait as what `waitFor` returns or throws (the same on every run). */
function childrenResult<R>(name: string, result: unknown, single: boolean): R | R[] {
  const r = (result ?? {}) as { timedOut?: boolean; pending?: string[]; children?: ChildOutcome[] };
  if (r.timedOut === true) throw new ChildWaitTimeoutError(name, r.pending ?? []);
  const outcomes = r.children ?? [];
  const failed = outcomes.find((o) => o.status !== "SUCCEEDED");
  if (failed) throw new ChildJobFailedError(failed.id, failed.status, failed.error, outcomes);
  const results = outcomes.map((o) => o.result as R);
  return single ? (results[0] as R) : results;
}

/** A wait's `timeoutMs` option in ms (null: none); one out of range is a typed error naming the step. */
function checkedWaitTimeout(name: string, raw: unknown): number | null {
  const ms = waitTimeoutMs(raw);
  if (ms === undefined) {
    throw new DurableStepError(
      "INVALID_STEP",
      name,
      `invalid timeoutMs ${JSON.stringify(raw)}: use a number of ms >= 1`,
    );
  }
  return ms;
}
