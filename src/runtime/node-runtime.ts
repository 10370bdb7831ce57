/**
 * The node runtime: builds the actor tree (node -> poller, strategy, slots, watchdogs, breakers), supplies
 * the machines' effects, and connects them to the store, the coordinator and the event stream. It holds
 * the local buffer of claimed jobs and the free-slot list; every decision stays in the machines and the
 * pure functions they call.
 * Pawl.start() (src/pawl.ts) creates one per started node; it knows nothing of the client API.
 */
import { createActor, type Actor, type AnyActorRef } from "xstate";
import type { Coordinator, WakeupHint } from "../../coordinators/spi.js";
import type { Clock } from "../clock.js";
import { toError, type PawlEventEmitter } from "../events.js";
import type { Logger } from "../logger.js";
import { nodeMachine } from "../machines/node-machine.js";
import type { PollingStrategyContext } from "../machines/polling-strategy-actor.js";
import type { ClaimedJob } from "../store/claim-jobs.js";
import type { CancelResult } from "../store/cancel-job.js";
import type { JobStore } from "../store/job-store.js";
import { finishAttempt } from "./finish-attempt.js";
import { jobInfo, type JobRun } from "./job-run.js";
import { OutcomeWriter, type OutcomeSink } from "./outcome-writer.js";
import { DueNotes, type DueRow } from "./due-notes.js";
import type { JobType } from "./registry.js";
import type { ResolvedRuntimeOptions } from "./runtime-config.js";
import { SlotPool } from "./slot-pool.js";
import { taskImplementations } from "./task-implementations.js";
import { releasePermit } from "../store/permits.js";
import type { Claimer, ClaimerOptions } from "../store/claimer.js";
import { BreakerGate } from "./breaker-gate.js";
import { QueueLanes } from "../composition/queue-lanes.js";
import { claimLanes } from "../composition/queue-claim.js";
import { Fifo } from "./fifo.js";
import { WatchdogArming } from "./watchdog-arming.js";
import { CancelCheck } from "./cancel-check.js";

/** How long stop() waits for unwritten outcomes once the jobs are done. */
const outcomeDrainLimitMs = 10_000;

/** The largest batch one claim takes (bigger batches hold row locks longer for little gain). */
const maxClaimBatch = 500;

/** What the runtime is built from. */
export interface NodeRuntimeDeps {
  nodeId: string;
  concurrency: number;
  prefetch: number;
  claimMode: "full" | "lazy";
  boostIntervalMs: number;
  completionFlushMs: number;
  options: ResolvedRuntimeOptions;
  store: JobStore;
  types: ReadonlyMap<string, JobType>;
  events: PawlEventEmitter;
  logger: Logger;
  clock: Clock;
  coordinator: Coordinator;
  /** Builds the node's claimer. */
  createClaimer: (options: ClaimerOptions) => Claimer;
  /**
   * Per-queue limits (`queues` of createPawl): one claim and one slot budget per queue (see
   * src/composition/queue-lanes.ts). Absent: one claim for all, one buffer.
   */
  queues?: ReadonlyMap<string, number> | null;
}

/** A claimed job waiting in the local buffer, with when it was claimed (clock ms). */
interface Buffered {
  job: ClaimedJob;
  claimedAt: number;
}

/** One node's running actor tree. Created by Pawl.start(). */
export class NodeRuntime {
  readonly root: Actor<typeof nodeMachine>;
  readonly writer: OutcomeWriter;
  readonly slots: SlotPool;
  /** How this node claims (classic statement or claim cursors). */
  readonly claimer: Claimer;
  /** Admission and reporting for the node's circuit breakers. */
  readonly breakers: BreakerGate;
  /** Per-queue lanes (buffers and slot budgets) when `queues` is configured; null otherwise. */
  readonly lanes: QueueLanes<Buffered> | null;
  /** Claimed jobs waiting for a free slot. */
  private readonly buffer = new Fifo<Buffered>();
  /** Attempts in flight by job id (including those in the buffer's hand-off). */
  readonly runs = new Map<string, JobRun>();
  /**
   * Buffered jobs the store holds CANCELED (seen by a store read or written by this node's own cancel):
   * their slot reads the store again before running them, and that read decides.
   */
  readonly canceledLocally = new Set<string>();
  private draining = false;
  private stopping: Promise<number> | null = null;
  private readonly lowWater: number;
  /** The claim whose result is not handled yet (stop waits for it). */
  private claimInFlight: Promise<void> | null = null;
  /** Arms the slots' watchdogs (most attempts end before they need one). */
  readonly watchdogs: WatchdogArming;
  private readonly cancelCheck: CancelCheck;
  /** Due times this node knows of (due-notes.ts): the poller looks when the first comes. */
  private readonly dues: DueNotes;
  /** The outcome sink attempts finish through: the writer, noting the due time of every delayed write. */
  private readonly outcomes: OutcomeSink;

  constructor(readonly deps: NodeRuntimeDeps) {
    const { clock, logger, events } = deps;
    this.lowWater = Math.max(1, Math.floor(deps.prefetch / 2));
    this.writer = new OutcomeWriter(deps.store, deps.nodeId, clock, logger, deps.completionFlushMs, (error) =>
      events.emit("error", { where: "outcome-writer", error: toError(error) }),
    );
    const machine = nodeMachine.provide({
      actors: taskImplementations(this),
    });
    this.root = createActor(machine, {
      input: {
        nodeId: deps.nodeId,
        concurrency: deps.concurrency,
        polling: deps.options.polling,
        watchdog: deps.options.watchdog,
        now: () => clock.now(),
      },
      clock,
      systemId: "node",
    });
    this.root.subscribe({
      error: (error) => {
        logger.error("node actor failed", { error: String(error) });
        events.emit("error", { where: "node actor", error: toError(error) });
      },
    });
    this.slots = new SlotPool(deps.concurrency);
    this.lanes = deps.queues ? new QueueLanes<Buffered>(deps.queues, deps.prefetch) : null;
    this.breakers = new BreakerGate({
      actor: (id) => this.actor(id),
      spawn: (input) => this.root.send({ type: "ADD_BREAKER", input }),
      sendLater: (id, event) => this.sendLater(id, event),
      configFor: (service) => deps.options.breakerFor(service),
      clock,
    });
    this.dues = new DueNotes({ clock, poller: () => this.actor("poller"), active: () => !this.draining });
    this.outcomes = this.dues.noting(this.writer, (id) => this.runs.get(id)?.claimed.priority);
    this.watchdogs = new WatchdogArming({
      runs: this.runs,
      clock,
      sendLater: (id, event) => this.sendLater(id, event),
    });
    this.cancelCheck = new CancelCheck({
      runs: this.runs,
      buffered: (id) => this.isBuffered(id),
      store: deps.store,
      clock,
      recheckMs: deps.options.cancelRecheckMs,
      onCanceled: (id) => this.tellCanceled(id),
      onError: (error) => events.emit("error", { where: "cancel check", error: toError(error) }),
    });
    this.claimer = deps.createClaimer({
      store: deps.store,
      nodeId: deps.nodeId,
      boostIntervalMs: deps.boostIntervalMs,
      withPayload: deps.claimMode === "full",
      clock,
    });
  }

  /** The actor with a system id (poller, strategy, slot-N, watchdog-N, breaker-S). */
  actor(systemId: string): AnyActorRef | undefined {
    return this.root.system.get(systemId);
  }

  /** Starts the actor tree and the first poll; subscribes to the coordinator. */
  start(): void {
    this.root.start();
    this.actor("poller")?.send({ type: "START" });
    this.cancelCheck.start();
  }

  /**
   * One pass of the running-job cancellation check: asks the store which long-running attempts were
   * canceled and tells them. Without a coordinator this is how a cancel made on another node reaches the
   * running attempt (with one, the hint arrives first). Returns the ids found canceled.
   */
  checkRunningCancellations(): Promise<string[]> {
    return this.cancelCheck.runOnce();
  }

  /** How many jobs sit in the local buffer. */
  get buffered(): number {
    if (this.lanes) return this.lanes.buffered;
    return this.buffer.size;
  }

  /** Room to claim into: free slots plus prefetch, minus what is buffered. */
  room(): number {
    if (this.draining) return 0;
    if (this.lanes) return this.lanes.room();
    return this.slots.free + this.deps.prefetch - this.buffered;
  }

  /** Wakes the poller (local enqueue or a coordinator hint). */
  wake(source: "local" | "coordinator", hint?: WakeupHint): void {
    if (this.draining) return;
    this.claimer.onWakeup();
    this.actor("strategy")?.send({ type: "WAKEUP", now: this.deps.clock.now() });
    this.actor("poller")?.send({ type: "WAKE" });
    this.deps.events.emit("wakeup", hint ? { source, hint } : { source });
  }

  /**
   * A hint from another node (the Pawl subscribes to the coordinator and forwards them here). A hint is a
   * reason to read the store, never a command: a cancel hint only makes the cancel check read the named
   * job's row (anyone who can write to the channel can forge one), and a work hint only makes the poller
   * look sooner.
   */
  handleHint(hint: WakeupHint): void {
    if (hint.kind === "cancel") {
      if (hint.jobId) this.cancelCheck.hinted(hint.jobId);
      return;
    }
    // A hint about a job type this node does not run cannot give it work.
    if (hint.target !== undefined && !this.deps.types.has(hint.target)) return;
    if (hint.released === true) this.claimer.requestFullPass?.();
    this.wake("coordinator", hint);
  }

  /**
   * This node's own `pawl.cancel()` wrote CANCELED on a RUNNING row: tell the attempt without reading the
   * store again. It takes the store's result, not a job id, so nothing but a cancel this node wrote can
   * reach it; cancels from elsewhere arrive through the cancel check's read.
   */
  canceledHere(result: CancelResult): void {
    if (result.outcome === "running-canceled") this.tellCanceled(result.job.id);
  }

  /**
   * The store holds this job CANCELED: tell its attempt, or mark it in the buffer (its slot reads the store
   * again before running it). Reached only from a store read or this node's own cancel write.
   */
  private tellCanceled(jobId: string): void {
    const run = this.runs.get(jobId);
    if (run) {
      run.cancelRequested = true;
      this.actor(`slot-${run.slot}`)?.send({ type: "CANCEL" });
      return;
    }
    if (this.isBuffered(jobId)) this.canceledLocally.add(jobId);
  }

  /** Whether a job waits in the local buffer (or a queue lane's). */
  private isBuffered(jobId: string): boolean {
    return this.lanes?.has(jobId) === true || this.buffer.some((b) => b.job.id === jobId);
  }

  /**
   * Rows of these priorities become due `inMs` from now: this node wrote them (here: an enqueue with
   * `delayMs` / `runAt`; its own delayed retries and hand-backs are noted by the outcome sink). The poller
   * looks when each comes due, and that poll's claim seeks its level (src/runtime/due-notes.ts).
   */
  noteDue(rows: readonly DueRow[]): void {
    this.dues.note(rows);
  }

  /**
   * Hands back the jobs waiting in the local buffer (the queue lanes' too) instead of running them: used
   * when the cluster declared this node dead, so their rows may already have been recovered and be
   * running elsewhere.
   * The hand-back is guarded like every outcome (RUNNING and picked by this node): rows already
   * recovered are left alone, the others go back to PENDING. Returns how many were handed back.
   */
  dropBuffered(reason: string): number {
    const taken = this.takeBuffered();
    const n = taken.length;
    if (n === 0) return 0;
    this.handBack(taken.map((b) => b.job));
    this.deps.logger.warn("handed back buffered jobs", { count: n, reason });
    return n;
  }

  /** The poller's `claim` effect: claims up to the room and reports back. */
  claim(): void {
    const poller = this.actor("poller");
    const limit = Math.min(this.room(), maxClaimBatch);
    const types = [...this.deps.types.keys()];
    const started = this.deps.clock.now();
    if (limit <= 0 || types.length === 0) {
      this.afterClaim([], 0, started);
      return;
    }
    // This poll looks at the levels whose known due times have come (the claimer seeks them).
    const due = this.dues.take(started);
    const claiming = this.lanes
      ? claimLanes(this.lanes.rooms(), {
          store: this.deps.store,
          nodeId: this.deps.nodeId,
          types,
          boostIntervalMs: this.deps.boostIntervalMs,
          withPayload: this.deps.claimMode === "full",
          maxBatch: maxClaimBatch,
          onError: (queue, error) =>
            this.deps.events.emit("error", { where: `claim (queue ${queue})`, error: toError(error) }),
        })
      : this.claimer.claim(limit, types, due.levels).then((jobs) => ({ jobs, limit }));
    const settled = claiming.then(
      (c) => this.afterClaim(c.jobs, c.limit, started),
      (error: unknown) => {
        // The rows did not move: their due times still stand for the poll after the backoff.
        this.dues.putBack(due.taken);
        this.deps.logger.warn("claim failed; the poller backs off", { error: String(error) });
        this.deps.events.emit("error", { where: "claim", error: toError(error) });
        poller?.send({ type: "CLAIM_FAILED", error, at: this.deps.clock.now() });
      },
    );
    this.claimInFlight = settled;
    void settled.finally(() => {
      if (this.claimInFlight === settled) this.claimInFlight = null;
    });
  }

  private afterClaim(jobs: ClaimedJob[], limit: number, started: number): void {
    const { clock, events } = this.deps;
    const now = clock.now();
    if (this.draining && jobs.length > 0) {
      // Claimed while shutdown began: hand them straight back, attempt not counted.
      this.handBack(jobs);
      jobs = [];
    }
    if (this.lanes) {
      for (const job of jobs) {
        // Cannot fail: every job was claimed by its own lane's claim.
        if (!this.lanes.push({ job, claimedAt: now })) this.handBack([job]);
      }
    } else for (const job of jobs) this.buffer.push({ job, claimedAt: now });
    if (jobs.length > 0 && events.has("claim")) {
      events.emit("claim", {
        jobs: jobs.map(jobInfo),
        limit,
        durationMs: now - started,
        boosts: jobs.filter((j) => j.boost > 0).map((j) => j.boost),
      });
    }
    const strategy = this.actor("strategy");
    strategy?.send({
      type: "POLLED",
      sample: { at: now, claimed: jobs.length, limit },
      utilization: this.slots.busy / this.deps.concurrency,
    });
    const s = strategy?.getSnapshot().context as PollingStrategyContext | undefined;
    const delayMs = s?.delayMs ?? this.deps.options.polling.minDelayMs;
    events.emit("poll", {
      mode: s?.mode ?? "normal",
      delayMs,
      claimed: jobs.length,
      limit,
      durationMs: now - started,
    });
    this.actor("poller")?.send({
      type: "CLAIMED",
      claimed: jobs.length,
      limit,
      delayMs,
      mode: s?.mode ?? "normal",
      at: now,
      dueAt: this.dues.next(),
    });
  }

  /** The poller's `dispatch` effect, and what runs whenever a slot frees: start buffered jobs. */
  pump(): void {
    if (this.lanes) return this.pumpLanes(this.lanes);
    while (this.slots.free > 0 && !this.draining) {
      const next = this.buffer.shift();
      if (!next) return;
      this.startRun(next.job, next.claimedAt);
    }
  }

  /** pump() with `queues`: each lane starts jobs up to its own limit (src/composition/queue-lanes.ts). */
  private pumpLanes(lanes: QueueLanes<Buffered>): void {
    while (this.slots.free > 0 && !this.draining) {
      const next = lanes.next();
      if (!next) return;
      if (!this.startRun(next.job, next.claimedAt)) lanes.release(next.job.queue);
    }
  }

  /** Starts a claimed job in a free slot (the caller checked there is one). False for an unknown type. */
  private startRun(job: ClaimedJob, claimedAt: number): boolean {
    const type = this.deps.types.get(job.type);
    if (!type) return false; // cannot happen: only registered types are claimed
    const slot = this.slots.take();
    const run: JobRun = {
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
      claimedAt,
      payload: job.payload,
      ctx: null,
      startedAt: 0,
      settled: false,
      permitHeld: false,
      breaker: null,
      invalid: null,
      cancelRequested: this.canceledLocally.delete(job.id),
      armAt: 0,
      armed: false,
    };
    this.runs.set(job.id, run);
    this.slots.assign(slot, run);
    this.actor(`slot-${slot}`)?.send({ type: "START", job: run.task });
    return true;
  }

  /**
   * Sends to another actor after the current step. Effects run inside an actor's step; an event that
   * made a second actor assign to its context from there would be processed nested in the first one's
   * action, which xstate warns about. Every runtime-to-actor message from an effect goes through here;
   * microtasks keep their order, so an ARM always precedes its DISARM.
   */
  sendLater(systemId: string, event: { type: string } & Record<string, unknown>): void {
    queueMicrotask(() => this.actor(systemId)?.send(event));
  }

  /** The job task's `finish` effect: records the outcome and frees the slot. */
  finish(run: JobRun, outcome: Parameters<typeof finishAttempt>[1]): void {
    run.settled = true;
    if (run.armed) this.sendLater(`watchdog-${run.slot}`, { type: "DISARM" });
    finishAttempt(run, outcome, {
      writer: this.outcomes,
      events: this.deps.events,
      random: Math.random,
      now: () => this.deps.clock.now(),
      breakerResult: (r, ok) => this.breakers.result(r, ok),
      breakerRelease: (r) => this.breakers.release(r),
    });
    if (run.permitHeld && run.type.resource) {
      const resource = run.type.resource;
      releasePermit(this.deps.store.pool, this.deps.store.tables, resource, run.claimed.id).catch(
        (error: unknown) =>
          this.deps.events.emit("error", { where: "release permit", error: toError(error) }),
      );
    }
    this.runs.delete(run.claimed.id);
    this.slots.release(run.slot);
    this.lanes?.release(run.claimed.queue);
    // Start the next buffered job after this transition completes (the slot's actor is mid-step now).
    queueMicrotask(() => {
      this.pump();
      if (this.buffered <= this.lowWater) {
        // Only a waiting poller can act on it; skip the event otherwise (this runs once per job).
        const poller = this.actor("poller");
        if (poller?.getSnapshot().value === "waiting") poller.send({ type: "SLOT_FREED" });
      }
      if (this.slots.busy === 0) this.slots.notifyIdle();
    });
  }

  /**
   * Drains: no more claims, buffered jobs handed back, running ones given `graceMs`, then aborted
   * (handed back without counting the attempt). A second call aborts at once. Resolves with the number
   * of attempts that were aborted.
   */
  stop(graceMs: number): Promise<number> {
    if (this.stopping) {
      this.abortRunning();
      return this.stopping;
    }
    this.draining = true;
    this.cancelCheck.stop();
    this.watchdogs.stop();
    this.root.send({ type: "DRAIN" });
    this.actor("poller")?.send({ type: "DRAIN" });
    this.handBack(this.takeBuffered().map((b) => b.job));
    this.stopping = (async () => {
      let aborted = 0;
      if (this.slots.busy > 0) {
        const idle = this.slots.whenIdle();
        let timer: unknown = null;
        const graceOver = new Promise<void>((resolve) => {
          timer = this.deps.clock.setTimeout(() => resolve(), graceMs);
        });
        await Promise.race([idle, graceOver]);
        this.deps.clock.clearTimeout(timer);
        aborted = this.abortRunning();
      }
      // A claim still in flight commits rows under this node: wait for it, so afterClaim hands them back
      // through the writer below (and the pool is not closed under it). Bounded like the drain.
      if (this.claimInFlight) {
        await Promise.race([
          this.claimInFlight,
          new Promise<void>((resolve) => this.deps.clock.setTimeout(() => resolve(), outcomeDrainLimitMs)),
        ]);
      }
      // Outcomes that cannot be written (database down) must not hold shutdown forever: their rows stay
      // RUNNING under this node id and orphan recovery (or this node's next startup) takes them back.
      const drained = await Promise.race([
        this.writer.drain().then(() => true),
        new Promise<boolean>((resolve) =>
          this.deps.clock.setTimeout(() => resolve(false), outcomeDrainLimitMs),
        ),
      ]);
      if (!drained) {
        this.deps.logger.warn("stopped with job outcomes not written; orphan recovery will reclaim them", {
          pending: this.writer.pending,
        });
      }
      this.actor("poller")?.send({ type: "STOP" });
      this.root.send({ type: "STOPPED" });
      this.root.stop();
      return aborted;
    })();
    return this.stopping;
  }

  /** Empties the local buffer, and every queue lane's with `queues`. */
  private takeBuffered(): Buffered[] {
    return [...this.buffer.takeAll(), ...(this.lanes?.takeAll() ?? [])];
  }

  /** Claimed jobs that will not run here go back to PENDING, attempt not counted (guarded like every outcome). */
  private handBack(jobs: readonly { id: string }[]): void {
    for (const job of jobs) this.writer.reschedule({ id: job.id, delayMs: 0 }, () => {});
  }

  private abortRunning(): number {
    let n = 0;
    for (const run of [...this.runs.values()]) {
      if (run.settled) continue;
      n++;
      this.actor(`slot-${run.slot}`)?.send({ type: "ABORT" });
    }
    return n;
  }
}
