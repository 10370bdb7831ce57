/**
 * The context of one attempt, handed to the handler and reachable anywhere in its async call tree
 * through {@link JobContext.current} (AsyncLocalStorage). It carries the attempt's cancellation request
 * and AbortSignal: the watchdog and `pawl.cancel()` set the request; the signal aborts at the hard
 * deadline, on cancel, and at shutdown.
 */
import { PawlError } from "../../core/errors.js";
import type { Logger } from "../../core/logger.js";
import { jobContextStorage, type AttemptScope } from "./context-storage.js";
import { CancellationRequestedError } from "./job-errors.js";
import {
  JobComposition,
  type FlowContext,
  type SignalDelivery,
  type WaitForSignalOptions,
} from "../../composition/job-composition.js";
import type { JobContextServices } from "../../composition/signals.js";
import {
  DurableRun,
  type DurableWaitOptions,
  type SpawnedJob,
  type StepContext,
} from "../../composition/durable/durable-run.js";
import type { SpawnOptions } from "../../composition/durable/durable-services.js";
import { progressJson } from "../../input/progress-input.js";

/** What a handler learns about its attempt. */
export class JobContext implements AttemptScope {
  /** Identifies this attempt for CancellationRequestedError (a fresh object per attempt). */
  readonly attemptToken: object = {};
  private requested = false;
  // Created on first use: most handlers never look at their signal or logger, and both cost allocations.
  private controller: AbortController | null = null;
  private abortReason: Error | null = null;
  private boundLogger: Logger | null = null;
  private composition: JobComposition | null = null;
  private durable: DurableRun | null = null;

  constructor(
    /** The job id. */
    readonly jobId: string,
    /** The job type. */
    readonly type: string,
    /** This attempt's number, from 1. */
    readonly attempt: number,
    /** The attempts allowed in all. */
    readonly maxAttempts: number,
    /** When the watchdog ends this attempt (epoch ms). */
    readonly deadlineMs: number,
    /** The node's logger; {@link JobContext.logger} binds it to the job. */
    private readonly baseLogger: Logger,
    /** The node running the attempt. */
    readonly nodeId: string,
    /** @internal The store access of signals and flows (supplied by a node; absent in pawl/testing). */
    readonly services?: JobContextServices,
  ) {}

  /** Aborted at the hard deadline, when the job is canceled, and at shutdown. */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.abortReason) this.controller.abort(this.abortReason);
    }
    return this.controller.signal;
  }

  /** A logger bound to the job and node ids. */
  get logger(): Logger {
    this.boundLogger ??= this.baseLogger.child({
      jobId: this.jobId,
      jobType: this.type,
      nodeId: this.nodeId,
    });
    return this.boundLogger;
  }

  /** When the watchdog ends this attempt. */
  get deadline(): Date {
    return new Date(this.deadlineMs);
  }

  /** True once pawl has asked this attempt to stop. Cheap: no I/O. */
  isCancellationRequested(): boolean {
    return this.requested;
  }

  /** Throws a {@link CancellationRequestedError} if a stop was requested. */
  throwIfCancellationRequested(): void {
    if (this.requested) throw new CancellationRequestedError("cancellation requested", this);
  }

  /** @internal Sets the cancellation request. */
  requestCancellation(): void {
    this.requested = true;
  }

  /** @internal Sets the request and aborts the signal. */
  abort(reason: string): void {
    this.requested = true;
    if (this.abortReason) return;
    this.abortReason = new CancellationRequestedError(reason, this);
    this.controller?.abort(this.abortReason);
  }

  /**
   * Waits for an external signal. On the run after `pawl.signal(jobId, payload)` (or after the timeout),
   * the first call returns what ended the wait; otherwise it throws a `WaitForSignal`, which ends the
   * attempt and parks the job: WAITING, holding no slot and no connection, the attempt not counted, until
   * the signal or the timeout makes it runnable again on any node. Let the error propagate (like Snooze),
   * and keep the handler replayable: it runs again from the start, with the delivery here.
   *
   * @throws ValidationError `INVALID_OPTION` for a bad timeout.
   * @example
   * ```ts
   * pawl.register("order.approve", async (order, ctx) => {
   *   await sendApprovalRequest(order); // runs again on the resumed run: make it idempotent
   *   const answer = await ctx.waitForSignal<{ approved: boolean }>({ timeoutMs: 86_400_000 });
   *   if (answer.timedOut || !answer.payload.approved) return reject(order);
   *   return ship(order);
   * });
   * // elsewhere, on any node or client:
   * await pawl.signal(jobId, { approved: true });
   * ```
   */
  waitForSignal<P = unknown>(options?: WaitForSignalOptions): Promise<SignalDelivery<P>>;
  /**
   * The named, durable wait (docs/durable.md): returns the oldest signal `pawl.signal(id, payload, { name })`
   * sent under `name` (kept if it came before the wait), or `{ timedOut: true }` once `timeoutMs` passed,
   * and records the answer as a step: later runs get the same answer. Until then the job parks, holding
   * nothing, and the run before the wait is not repeated past its recorded steps.
   *
   * @example
   * ```ts
   * const answer = await ctx.waitForSignal<{ approved: boolean }>("approval", { timeoutMs: 86_400_000 });
   * ```
   */
  waitForSignal<P = unknown>(name: string, options?: DurableWaitOptions): Promise<SignalDelivery<P>>;
  waitForSignal<P = unknown>(
    nameOrOptions?: string | WaitForSignalOptions,
    options?: DurableWaitOptions,
  ): Promise<SignalDelivery<P>> {
    if (typeof nameOrOptions === "string") return this.durableRun().waitForSignal<P>(nameOrOptions, options);
    return this.compositionView().waitForSignal<P>(nameOrOptions);
  }

  /**
   * Runs `fn` once for this job and records its JSON result under `name` (docs/durable.md). Every later
   * run of the handler (after a retry, a crash, a sleep, a wait, a deploy, on any node) gets the recorded
   * result back without calling `fn`. A `fn` that throws fails the attempt (the job's retry policy applies)
   * and runs again on the next one; the steps before it do not. The body runs at least once: a crash after
   * its effect and before its record runs it again, so external calls should pass `step.idempotencyKey`.
   *
   * @throws DurableStepError `DUPLICATE_STEP` for a name used twice in one run, `STEP_RESULT_INVALID` for a
   *   result that does not round-trip through JSON, `STEP_RESULT_TOO_LARGE` over the limit (nothing is
   *   recorded then), `STEP_KIND_MISMATCH` for a name recorded by another kind of call.
   * @example
   * ```ts
   * pawl.register("order.fulfil", async (order: { id: string }, ctx) => {
   *   const charge = await ctx.step("charge", (s) => payments.charge(order.id, { idempotencyKey: s.idempotencyKey }));
   *   await ctx.step("ship", () => warehouse.ship(order.id, charge.id));
   * });
   * ```
   */
  step<T>(name: string, fn: (step: StepContext) => T | Promise<T>): Promise<T> {
    return this.durableRun().step(name, fn);
  }

  /**
   * A durable timer: parks the job until `msOrDate` (ms from the first run that reached it, or a Date).
   * Parked, it holds no slot, no connection and no node; any node runs it again at the time (within about a
   * second), past its recorded steps. Let the control error it throws propagate, as with Snooze.
   *
   * @throws DurableStepError `INVALID_STEP` for a negative or invalid time.
   * @example
   * ```ts
   * await ctx.sleep("wait-3-days", 3 * 86_400_000);
   * ```
   */
  sleep(name: string, msOrDate: number | Date): Promise<void> {
    return this.durableRun().sleep(name, msOrDate);
  }

  /**
   * Enqueues a child job once: recorded under `name`, so every later run gets the same child and never
   * enqueues a second one. Options are those of `enqueue`, without `uniqueKey` and `client`.
   *
   * @example
   * ```ts
   * const thumb = await ctx.spawn("thumb", "image.thumbnail", { url });
   * const [size] = await ctx.waitFor<number>("thumb-done", [thumb]);
   * ```
   */
  spawn(name: string, type: string, payload?: unknown, options?: SpawnOptions): Promise<SpawnedJob> {
    return this.durableRun().spawn(name, type, payload, options);
  }

  /**
   * Parks the job until every given child (spawned by this job) is final, then returns their results (one
   * child: its result; an array: the results in order). Recorded under `name`: later runs get the same
   * answer.
   *
   * @throws ChildJobFailedError when a child ended DEAD or CANCELED (its id, status and error);
   *   ChildWaitTimeoutError when `timeoutMs` passed first; DurableStepError `INVALID_STEP` for an id this
   *   job did not spawn.
   */
  waitFor<R = unknown>(name: string, child: SpawnedJob | string, options?: DurableWaitOptions): Promise<R>;
  waitFor<R = unknown>(
    name: string,
    children: readonly (SpawnedJob | string)[],
    options?: DurableWaitOptions,
  ): Promise<R[]>;
  waitFor<R = unknown>(
    name: string,
    children: SpawnedJob | string | readonly (SpawnedJob | string)[],
    options?: DurableWaitOptions,
  ): Promise<R | R[]> {
    return this.durableRun().waitFor<R>(name, children, options);
  }

  private durableRun(): DurableRun {
    this.durable ??= new DurableRun(
      { jobId: this.jobId, type: this.type, attempt: this.attempt },
      this.services?.durable,
    );
    return this.durable;
  }

  /** The signal (or timeout) that made this run runnable, or null; does not wait. One read, cached. */
  receivedSignal<P = unknown>(): Promise<SignalDelivery<P> | null> {
    return this.compositionView().receivedSignal<P>();
  }

  /**
   * The job's flow (chain, batch or workflow) and what its finished dependencies left: their results by
   * step name (`previous` in a chain), and which of them failed. Null for a job outside a flow.
   *
   * @example
   * ```ts
   * pawl.register("report.render", async (_p, ctx) => render((await ctx.flow())?.previous));
   * ```
   */
  flow(): Promise<FlowContext | null> {
    return this.compositionView().flow();
  }

  /**
   * Reports progress: a percentage (0-100) or a small JSON value (at most 4 KiB), shown by `getJob`
   * (`job.progress`), `pawl job <id>` and the console. It returns at once: the node keeps the newest value
   * and writes at most one per job every 250 ms, always the last one before the attempt's outcome (so a
   * finished job keeps it). Each call emits `job:progress`. Under pawl/testing nothing is stored.
   *
   * @throws ValidationError `INVALID_PROGRESS` for a number outside 0-100, a value that is not JSON, or one
   *   over 4 KiB of JSON (nothing is stored or emitted then).
   * @example
   * ```ts
   * pawl.register("import.file", async (file, ctx) => {
   *   for (const [i, row] of rows.entries()) {
   *     await importRow(row);
   *     ctx.progress({ done: i + 1, total: rows.length }); // or ctx.progress(((i + 1) / rows.length) * 100)
   *   }
   * });
   * ```
   */
  progress(value: unknown): void {
    const json = progressJson(value);
    // The value the caller passed is emitted as it was validated; the store gets its JSON text.
    this.services?.progress?.(
      { jobId: this.jobId, type: this.type, attempt: this.attempt, progress: JSON.parse(json) },
      json,
    );
  }

  private compositionView(): JobComposition {
    this.composition ??= new JobComposition(this.jobId, this.services);
    return this.composition;
  }

  /**
   * The context of the attempt whose async call tree this is.
   *
   * @throws PawlError `INVALID_STATE` outside a job.
   * @example
   * ```ts
   * async function copyPages() {
   *   const ctx = JobContext.current();
   *   for (const page of pages) { ctx.throwIfCancellationRequested(); await copy(page); }
   * }
   * ```
   */
  static current(): JobContext {
    const ctx = JobContext.tryCurrent();
    if (!ctx) throw new PawlError("INVALID_STATE", "JobContext.current() called outside a job handler");
    return ctx;
  }

  /** The current context, or undefined outside a job. */
  static tryCurrent(): JobContext | undefined {
    const ctx = jobContextStorage.getStore();
    return ctx instanceof JobContext ? ctx : undefined;
  }
}
