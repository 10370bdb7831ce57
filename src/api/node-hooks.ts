/**
 * The node's side of {@link ClientHooks}: how an enqueue, a cancel or a release reaches running work. New
 * due work of a registered type wakes this node's poller; delayed work is noted for when it comes due;
 * urgent work is announced to the other nodes through the coordinator, folded into the insert statement
 * when the transport can (postgres), else published after it (at commit, inside a caller's transaction).
 *
 * It owns the coordinator because every hook publishes through it: the coordinator connects on first
 * use (an enqueue before start() may need it) and closes when the node stops. It is built before the
 * client it is handed to, so it reaches the node runtime only once start() attaches it.
 *
 * It also sends the completion notices `pawl.waitFor` listens for: the ids of the jobs this node ended
 * (`job:succeeded` and `job:dead` fire as each outcome batch lands, a cancel as it is written) are
 * published as `finished` hints of at most 300 ids at the end of the tick, then at most once per
 * {@link finishedWindowMs} (the ids of the window's batches in one notice): a quiet node tells at once, a
 * busy one sends a bounded number of notices a second whatever its throughput (NOTIFY serialises on the
 * server). This instance's own waiters are told at the end of the tick, since a node never hears its own
 * hints. Nothing is collected when there is neither a coordinator to publish through nor a local waiter.
 */
import type { Coordinator, FoldedNotify } from "../../coordinators/spi.js";
import { MAX_FINISHED_IDS } from "../../coordinators/hint-codec.js";
import type { AfterEnqueue, ClientHooks } from "../composition/client-hooks.js";
import { coordinatorFor, type ResolvedConfig } from "../input/config.js";
import { hintJobOfNew, hintJobOfRow, urgentHint } from "./enqueue-hints.js";
import type { NewJob, TypeDefaults } from "../input/enqueue-input.js";
import { toError, type PawlEventEmitter } from "../core/events.js";
import type { NodeRuntime } from "../node/node-runtime.js";
import { typeDefaults, type JobType } from "../node/registry.js";
import type { CancelResult } from "../store/jobs/cancel-job.js";
import type { EnqueuedJob } from "../store/jobs/enqueue-jobs.js";
import type { Queryable } from "../db/sql.js";

/** How long a node collects ended jobs' ids before publishing them as completion notices (ms). */
export const finishedWindowMs = 20;

/** What {@link NodeHooks} reads from its node. */
export interface NodeHooksDeps {
  config: ResolvedConfig;
  /** The node's registered types (read live: a type registered after start() counts at once). */
  types: ReadonlyMap<string, JobType>;
  events: PawlEventEmitter;
}

/** The hooks a node hands its client, and the coordinator they publish through. */
export class NodeHooks implements ClientHooks {
  readonly events: PawlEventEmitter;
  private readonly config: ResolvedConfig;
  private readonly types: ReadonlyMap<string, JobType>;
  private runtime: NodeRuntime | null = null;
  private stopping = false;
  private coordinatorPromise: Promise<Coordinator> | null = null;
  /** The coordinator once started (enqueue folds its notify only then: it must never wait for a connect). */
  private coordinatorReady: Coordinator | null = null;
  /** Whether completion notices go out: the started coordinator is a real transport. */
  private publishFinished = false;
  /** Ids of jobs this node ended in this window, for one batch of `finished` notices. */
  private finished: string[] = [];
  private finishedTimer: NodeJS.Timeout | null = null;
  /** Ids of jobs this node ended in this tick, for this instance's own waiters. */
  private endedHere: string[] = [];
  /** This instance's waiters: whether there are any, and how to wake them. */
  private localWaiters: { wanted(): boolean; wake(ids: readonly string[]): void } | null = null;

  constructor(deps: NodeHooksDeps) {
    this.config = deps.config;
    this.types = deps.types;
    this.events = deps.events;
    this.events.on("job:succeeded", (e) => this.ended(e.job.id));
    this.events.on("job:dead", (e) => this.ended(e.job.id));
  }

  /** Connects this instance's waitFor registry, which hears of this node's own outcomes directly. */
  onFinished(waiters: { wanted(): boolean; wake(ids: readonly string[]): void }): void {
    this.localWaiters = waiters;
  }

  /** A job this node ended has landed: note it for this tick's completion notice. */
  private ended(id: string): void {
    if (this.localWaiters?.wanted()) {
      if (this.endedHere.length === 0)
        queueMicrotask(() => this.localWaiters?.wake(this.endedHere.splice(0)));
      this.endedHere.push(id);
    }
    if (!this.publishFinished) return;
    if (this.finished.length === 0 && this.finishedTimer === null) queueMicrotask(() => this.flushFinished());
    this.finished.push(id);
  }

  /** Publishes the collected ids, and opens a window in which later ones wait for its end. */
  private flushFinished(): void {
    if (this.finishedTimer !== null) return; // the window's end publishes them
    const ids = this.finished;
    this.finished = [];
    if (ids.length === 0) return;
    const coordinator = this.coordinatorReady;
    if (!this.publishFinished || !coordinator) return;
    // Real time, as the coordinator's own timers: this bounds network messages, not job scheduling.
    this.finishedTimer = setTimeout(() => {
      this.finishedTimer = null;
      this.flushFinished();
    }, finishedWindowMs).unref();
    const source = this.config.nodeId;
    // Past a few messages, one notice without ids (re-read everything you wait for) is cheaper for all.
    if (ids.length > MAX_FINISHED_IDS * 4) {
      coordinator.notifyNewWork({ kind: "finished", priority: 0, source });
      return;
    }
    for (let i = 0; i < ids.length; i += MAX_FINISHED_IDS) {
      coordinator.notifyNewWork({
        kind: "finished",
        jobIds: ids.slice(i, i + MAX_FINISHED_IDS),
        priority: 0,
        source,
      });
    }
  }

  /** Connects wakeups and hints to the node runtime start() built. */
  attach(runtime: NodeRuntime): void {
    this.runtime = runtime;
  }

  /**
   * The node is stopping: new work is no longer folded into inserts nor announced to other nodes (cancels
   * of jobs running elsewhere still are).
   */
  quiesce(): void {
    this.stopping = true;
  }

  /** Whether the coordinator was ever asked for (and so may hold a connection to close). */
  get hasCoordinator(): boolean {
    return this.coordinatorPromise !== null;
  }

  typeDefaults(type: string): TypeDefaults | undefined {
    const t = this.types.get(type);
    return t ? typeDefaults(t) : undefined;
  }

  /**
   * The notify to send from the insert statement itself, when the enqueue is urgent and the coordinator
   * can fold (postgres): the other nodes hear of the job as it commits, a round trip sooner.
   */
  foldWakeup(jobs: readonly NewJob[], transactional: boolean): FoldedNotify | undefined {
    const coordinator = this.coordinatorReady;
    if (!coordinator?.foldNotify || this.stopping) return undefined;
    const now = Date.now();
    const hint = urgentHint(
      jobs.map((j) => hintJobOfNew(j, now)),
      this.config.nodeId,
    );
    return hint ? coordinator.foldNotify(hint, transactional) : undefined;
  }

  async afterEnqueue(
    jobs: readonly EnqueuedJob[],
    tx: Queryable | undefined,
    how: AfterEnqueue = {},
  ): Promise<void> {
    const now = Date.now();
    const fresh = jobs
      .filter((j) => j.inserted && j.status === "PENDING")
      .map((j) => hintJobOfRow(j, now, how.keyed));
    if (fresh.length === 0) return;
    if (this.runtime && fresh.some((j) => j.due && this.types.has(j.type))) {
      this.runtime.wake("local", undefined, how.keyed === false);
    }
    // Delayed jobs this node runs: it knows when they come due, and looks then (src/logic/due-times.ts).
    this.runtime?.noteDue(
      jobs
        .filter((j) => j.inserted && j.status === "PENDING" && this.types.has(j.type))
        .map((j) => ({ priority: j.priority, inMs: j.scheduledTime.getTime() - now })),
    );
    if (how.folded === true || this.stopping) return;
    const urgent = urgentHint(fresh, this.config.nodeId);
    if (!urgent) return;
    const hint = how.released === true ? { ...urgent, released: true } : urgent;
    if (tx) {
      const coordinator = await this.coordinator();
      const stmt = coordinator.inTransaction?.(hint);
      if (stmt) {
        // Delivered at commit, and never if the caller rolls back.
        await tx.query(stmt.text, stmt.values);
        return;
      }
    }
    this.coordinator().then(
      (c) => c.notifyNewWork(hint),
      (error: unknown) => this.events.emit("error", { where: "coordinator", error: toError(error) }),
    );
  }

  afterCancel(result: CancelResult): void {
    if (result.outcome !== "already-final") this.ended(result.job.id);
    if (result.outcome !== "running-canceled") return;
    this.runtime?.canceledHere(result);
    if (result.job.pickedBy === this.config.nodeId) return;
    this.coordinator().then(
      (c) =>
        c.notifyNewWork({ kind: "cancel", jobId: result.job.id, priority: 0, source: this.config.nodeId }),
      (error: unknown) => this.events.emit("error", { where: "coordinator", error: toError(error) }),
    );
  }

  afterRelease(): void {
    this.runtime?.claimer.requestFullPass?.();
  }

  /** The started coordinator, connecting it on first use. */
  coordinator(): Promise<Coordinator> {
    if (!this.coordinatorPromise) {
      const c = this.config;
      this.coordinatorPromise = coordinatorFor(c).then(async (coordinator) => {
        // Subscribed before start(), so the first `connected` is seen too. Hints that arrive before the
        // runtime exists have nothing to wake and are dropped.
        // Completion notices are for waitFor's registry, which listens itself: they bring no work.
        coordinator.onWakeup((hint) => {
          if (hint.kind !== "finished") this.runtime?.handleHint(hint);
        });
        coordinator.on("connected", () => {
          this.events.emit("coordinator:connected", { transport: coordinator.status().transport });
          // Hints sent while disconnected are gone: poll once to catch up.
          this.runtime?.wake("coordinator");
        });
        coordinator.on("disconnected", (error) =>
          this.events.emit("coordinator:disconnected", {
            transport: coordinator.status().transport,
            error: String(error),
          }),
        );
        await coordinator.start();
        this.coordinatorReady = coordinator;
        this.publishFinished = coordinator.status().transport !== "none";
        return coordinator;
      });
    }
    return this.coordinatorPromise;
  }

  /** Closes the coordinator, if it was ever asked for; a later use connects a new one. */
  async closeCoordinator(): Promise<void> {
    const coordinator = this.coordinatorPromise;
    // Notices collected so far go out first: their waiters would otherwise wait for a poll.
    if (this.finishedTimer !== null) {
      clearTimeout(this.finishedTimer);
      this.finishedTimer = null;
      this.flushFinished();
      if (this.finishedTimer !== null) clearTimeout(this.finishedTimer);
      this.finishedTimer = null;
    }
    this.coordinatorPromise = null;
    this.coordinatorReady = null;
    this.publishFinished = false;
    // A coordinator that failed to load (a missing package, a bad config) has nothing to close, and its
    // failure was reported by start(): close() must not throw it a second time.
    if (coordinator) await coordinator.then((c) => c.close()).catch(() => {});
  }
}
