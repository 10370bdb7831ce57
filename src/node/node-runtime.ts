/**
 * The node runtime: builds the actor tree (node -> poller, strategy, slots, watchdogs, breakers), supplies
 * the machines' effects (through the narrow {@link TaskHost}), and connects them to the store, the
 * coordinator and the event stream. It holds the node's lanes of claimed jobs (src/node/claim/lanes.ts: one
 * catch-all lane, or one per queue with `queues`; the same code either way) and the free-slot list; every
 * decision stays in the machines and the pure functions they call. Whether the node drains is the node
 * machine's state, read from its snapshot. The parts it holds are built and wired to one another in
 * ./node-parts.ts.
 * Pawl.start() (src/api/pawl.ts) creates one per started node; it knows nothing of the client API.
 */
import { createActor, type Actor, type AnyActorRef } from "xstate";
import type { WakeupHint } from "../../coordinators/spi.js";
import { toError } from "../core/events.js";
import { nodeMachine } from "../machines/node-machine.js";
import type { CancelResult } from "../store/jobs/cancel-job.js";
import type { RateGate } from "./rate-gate.js";
import { finishAttempt, type FinishDeps } from "./attempt/finish-attempt.js";
import type { AttemptTracer } from "./attempt/attempt-tracer.js";
import { newJobRun, type JobRun } from "./attempt/job-run.js";
import type { OutcomeWriter } from "./outcome-writer.js";
import type { OutcomeSink } from "../store/outcomes/outcome-sink.js";
import type { DueNotes, DueRow } from "./claim/due-notes.js";
import type { SlotPool } from "./claim/slot-pool.js";
import { taskImplementations, type TaskHost } from "./task-implementations.js";
import type { Claimer } from "../store/claim/claimer.js";
import type { ClaimedJob } from "../store/claim/claim-jobs.js";
import type { BreakerGate } from "./breaker-gate.js";
import type { Buffered, LaneView, NodeLanes } from "./claim/lanes.js";
import type { ClaimCycle } from "./claim/claim-cycle.js";
import { drainNode } from "./node-drain.js";
import type { WatchdogArming } from "./attempt/watchdog-arming.js";
import type { CancelCheck } from "./cancel-check.js";
import { bufferMarks, type BufferMarks } from "../logic/buffer-marks.js";
import { buildNodeParts, type NodeRuntimeDeps } from "./node-parts.js";
import type { MachineInspection } from "./machines/machine-inspection.js";

/**
 * Outcomes not yet written beyond which the node stops claiming (see {@link NodeRuntime.room}): two of the
 * writer's statements' worth. A node keeping up runs a few hundred behind at its fastest here.
 */
export const outcomeBacklogLimit = 2000;

/** One node's running actor tree. Created by Pawl.start(). */
export class NodeRuntime {
  readonly root: Actor<typeof nodeMachine>;
  /** The slots and the attempt each runs (the inspector reads them). */
  readonly slots: SlotPool;
  private readonly writer: OutcomeWriter;
  /** Whether {@link room} turned a claim down because of the outcome backlog since the last flush. */
  private heldByWrites = false;
  /** Where claimed jobs wait: one catch-all lane, or one lane per queue. */
  private readonly lanes: NodeLanes;
  /** Admission and reporting for the node's circuit breakers. */
  private readonly breakers: BreakerGate;
  /** Admission to rate limits, and the node's memory of closed keys (the inspector reads it). */
  readonly rates: RateGate;
  /** The durable machines running here and their inspection events (the inspector reads it). */
  readonly machines: MachineInspection | null;
  /** Attempts in flight by job id. */
  private readonly runs = new Map<string, JobRun>();
  /** Jobs whose park (`ctx.waitForSignal()`) is being written: still leased to this node until it lands. */
  private readonly parking = new Set<string>();
  private stopping: Promise<number> | null = null;
  private readonly marks: BufferMarks;
  /** The poller's claims (stop waits for every one in flight). */
  private readonly claims: ClaimCycle;
  /** Arms the slots' watchdogs (most attempts end before they need one). */
  private readonly watchdogs: WatchdogArming;
  private readonly cancelCheck: CancelCheck;
  /** Due times this node knows of (due-notes.ts): the poller looks when the first comes. */
  private readonly dues: DueNotes;
  /** The outcome sink attempts finish through: the writer, noting the due time of every delayed write. */
  private readonly outcomes: OutcomeSink;
  /** What finishing an attempt needs (finish-attempt.ts): built once, not once per job. */
  private readonly finishDeps: FinishDeps;
  /** Traces attempts; null without tracing. */
  private readonly tracer: AttemptTracer | null;
  /** Whether {@link afterFinish} is queued for this tick. */
  private afterFinishQueued = false;

  constructor(readonly deps: NodeRuntimeDeps) {
    const { clock, logger, events } = deps;
    this.tracer = deps.tracer ?? null;
    this.machines = deps.machines ?? null;
    this.marks = bufferMarks(deps.prefetch);
    const parts = buildNodeParts(deps, {
      runs: this.runs,
      actor: (id) => this.actor(id),
      sendLater: (id, event) => this.sendLater(id, event),
      spawnBreaker: (input) => this.root.send({ type: "ADD_BREAKER", input }),
      draining: () => this.draining,
      handBack: (jobs) => this.handBack(jobs),
      pump: () => this.pump(),
    });
    this.writer = parts.writer;
    // Claiming stopped while the writes were behind: the flush that brings them under the limit tells the
    // poller, as a finished job would (no job may be left running to do it).
    this.writer.whenFlushed(() => {
      if (!this.heldByWrites || this.writer.backlog >= outcomeBacklogLimit) return;
      this.heldByWrites = false;
      this.slotFreed();
    });
    this.slots = parts.slots;
    this.breakers = parts.breakers;
    this.rates = parts.rates;
    this.dues = parts.dues;
    this.outcomes = parts.outcomes;
    this.finishDeps = parts.finishDeps;
    this.watchdogs = parts.watchdogs;
    this.cancelCheck = parts.cancelCheck;
    this.lanes = parts.lanes;
    this.claims = parts.claims;
    const machine = nodeMachine.provide({ actors: taskImplementations(this.taskHost()) });
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
  }

  /** The narrow view of this node the machines' effects get (task-implementations.ts). Built once. */
  private taskHost(): TaskHost {
    const { deps } = this;
    return {
      nodeId: deps.nodeId,
      clock: deps.clock,
      events: deps.events,
      logger: deps.logger,
      options: deps.options,
      store: deps.store,
      durable: deps.durable ?? null,
      outcomes: this.writer,
      watchdogs: this.watchdogs,
      breakers: this.breakers,
      tracer: deps.tracer ?? null,
      rates: this.rates,
      runOf: (slot) => this.slots.runOf(slot) ?? undefined,
      runById: (jobId) => this.runs.get(jobId),
      sendToSlot: (slot, event) => this.actor(`slot-${slot}`)?.send(event),
      finish: (run, outcome) => this.finish(run, outcome),
      parking: this.parking,
      claim: () => this.claims.claim(),
      pump: () => this.pump(),
      hasRoom: () => this.room() > 0,
      bufferLow: () => this.buffered <= this.marks.claimAhead,
    };
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
   * Whether the node drains: the node machine's state is the only record of it (stop() sends it `DRAIN`,
   * and it tells the poller).
   */
  get draining(): boolean {
    return this.root.getSnapshot().value !== "running";
  }

  /** How many claimed jobs wait in the lanes. */
  get buffered(): number {
    return this.lanes.buffered;
  }

  /** Each lane's limit, running and buffered jobs (the inspector). */
  describeLanes(): LaneView[] {
    return this.lanes.describe();
  }

  /**
   * The claimer of the node's first lane: the configured one (classic or claim cursors) without `queues`,
   * the first queue's with them. For tests and the inspector.
   */
  get claimer(): Claimer {
    return (this.lanes.all[0] as { claimer: Claimer }).claimer;
  }

  /** Outcomes queued and not written yet. */
  get pendingOutcomes(): number {
    return this.writer.pending;
  }

  /**
   * Room to claim into: each lane's free slots plus prefetch, minus buffered and reserved. None while
   * draining, and none while {@link outcomeBacklogLimit} outcomes wait to be written: a handler that has
   * ended frees its slot at once, so without this a node whose writes fall behind (a slow database, a
   * burst of enqueues competing for it) kept claiming, every claim grew the next write, and one node was
   * seen holding 100,000 leases of finished jobs, each one a job run again if the node died then.
   */
  room(): number {
    if (this.draining) return 0;
    if (this.writer.backlog >= outcomeBacklogLimit) {
      this.heldByWrites = true;
      return 0;
    }
    return this.lanes.room();
  }

  /**
   * Wakes the poller (local enqueue or a coordinator hint). `unkeyed`: the new work is known to carry no
   * concurrency key (the hint's flag, or what a local enqueue knows of its jobs).
   */
  wake(source: "local" | "coordinator", hint?: WakeupHint, unkeyed = hint?.unkeyed === true): void {
    if (this.draining) return;
    this.lanes.onWakeup(unkeyed);
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
    if (hint.released === true) this.requestFullPass();
    this.wake("coordinator", hint);
  }

  /**
   * Rows went back to PENDING under their old ids (a release, recovered orphans): every lane's claimer
   * that looks past floors (claim cursors) looks everywhere at the next poll.
   */
  requestFullPass(): void {
    this.lanes.requestFullPass();
  }

  /**
   * This node's own `pawl.cancel()` wrote CANCELED on a RUNNING row: tell the attempt without reading the
   * store again. It takes the store's result, not a job id, so nothing but a cancel this node wrote can
   * reach it; cancels from elsewhere arrive through the cancel check's read.
   */
  canceledHere(result: CancelResult): void {
    if (result.outcome === "running-canceled") this.cancelCheck.tell(result.job.id);
  }

  /**
   * Rows of these priorities become due `inMs` from now: this node wrote them (here: an enqueue with
   * `delayMs` / `runAt`; its own delayed retries and hand-backs are noted by the outcome sink). The poller
   * looks when each comes due, and that poll's claim seeks its level (src/node/claim/due-notes.ts).
   */
  noteDue(rows: readonly DueRow[]): void {
    this.dues.note(rows);
  }

  /**
   * Hands back the jobs waiting in the lanes instead of running them: used when the cluster declared this
   * node dead, so their rows may already have been recovered and be running elsewhere. The same path as
   * shutdown's ({@link handBackBuffered}), whatever the lanes. Returns how many were handed back.
   */
  dropBuffered(reason: string): number {
    const n = this.handBackBuffered();
    if (n > 0) this.deps.logger.warn("handed back buffered jobs", { count: n, reason });
    return n;
  }

  /**
   * The ids of every job this node holds a lease on in memory: running, buffered, with an outcome or a park
   * not written yet. What the lease audit (src/cluster/lease-audit.ts) compares the database with.
   */
  heldIds(): Set<string> {
    const ids = new Set<string>(this.runs.keys());
    this.lanes.collectIds(ids);
    this.writer.collectHeld(ids);
    for (const id of this.parking) ids.add(id);
    return ids;
  }

  /** Settles once the claims in flight now have been handled; null when none is. */
  claimsInFlight(): Promise<void> | null {
    return this.claims.inFlight();
  }

  /** The poller's `dispatch` effect, and what runs whenever a slot frees: start buffered jobs. */
  pump(): void {
    while (this.slots.free > 0 && !this.draining) {
      const next = this.lanes.next();
      if (!next) return;
      this.startRun(next);
    }
  }

  /** Starts a buffered job in a free slot (the caller checked there is one). */
  private startRun(item: Buffered): void {
    const { job, claimedAt, lane } = item;
    const type = this.deps.types.get(job.type);
    if (!type) {
      // Cannot happen (only registered types are claimed); its lane must not keep the slot counted.
      lane.release();
      return;
    }
    const slot = this.slots.take();
    const run = newJobRun(job, type, slot, lane, claimedAt, this.cancelCheck.takeMark(job.id));
    this.runs.set(job.id, run);
    this.slots.assign(slot, run);
    this.actor(`slot-${slot}`)?.send({ type: "START", job: run.task });
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
  private finish(run: JobRun, outcome: Parameters<typeof finishAttempt>[1]): void {
    run.settled = true;
    if (run.armed) this.sendLater(`watchdog-${run.slot}`, { type: "DISARM" });
    const end = finishAttempt(run, outcome, this.finishDeps);
    this.tracer?.finished(run, outcome, end);
    if (run.permitHeld && run.type.resource) {
      const resource = run.type.resource;
      this.deps.store
        .releasePermit(resource, run.claimed.id)
        .catch((error: unknown) =>
          this.deps.events.emit("error", { where: "release permit", error: toError(error) }),
        );
    }
    this.runs.delete(run.claimed.id);
    this.slots.release(run.slot);
    run.lane.release();
    // Start the next buffered job after this transition completes (the slot's actor is mid-step now).
    // One microtask for every attempt that finishes in the same tick, not one closure per attempt.
    if (!this.afterFinishQueued) {
      this.afterFinishQueued = true;
      queueMicrotask(this.afterFinish);
    }
  }

  /** After finished attempts: pump; a low buffer tells a waiting or polling poller (it decides); idleness. */
  private readonly afterFinish = (): void => {
    this.afterFinishQueued = false;
    this.pump();
    if (this.buffered <= this.marks.lowWater) this.slotFreed();
    if (this.slots.busy === 0) this.slots.notifyIdle();
  };

  /** Tells the poller there is room again, when it is in a state that listens (it decides whether to claim). */
  private slotFreed(): void {
    const poller = this.actor("poller");
    const state: unknown = poller?.getSnapshot().value;
    if (state === "waiting" || state === "polling") poller?.send({ type: "SLOT_FREED" });
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
    // The node machine's `draining` state is the node's one record of the drain; it tells the poller.
    this.root.send({ type: "DRAIN" });
    const checksStopped = this.cancelCheck.stop();
    this.watchdogs.stop();
    this.handBackBuffered();
    const drained = drainNode(
      {
        clock: this.deps.clock,
        logger: this.deps.logger,
        slots: this.slots,
        writer: this.writer,
        abortRunning: () => this.abortRunning(),
        claimInFlight: () => this.claims.inFlight(),
      },
      graceMs,
    );
    this.stopping = (async () => {
      const aborted = await drained;
      await checksStopped;
      // The node's final state stops every child, the poller included.
      this.root.send({ type: "STOPPED" });
      this.root.stop();
      return aborted;
    })();
    return this.stopping;
  }

  /**
   * The one way buffered jobs leave without running (shutdown, or this node declared dead): every lane is
   * emptied and its jobs handed back. Returns how many.
   */
  private handBackBuffered(): number {
    const taken = this.lanes.takeAll();
    for (const item of taken) this.cancelCheck.takeMark(item.job.id);
    this.handBack(taken.map((b) => b.job));
    return taken.length;
  }

  /** Claimed jobs that will not run here go back to PENDING, attempt not counted (guarded like every outcome). */
  private handBack(jobs: readonly ClaimedJob[]): void {
    for (const job of jobs)
      this.writer.reschedule(
        { id: job.id, lease: { attempt: job.attempt, scheduledAtMs: job.scheduledAtMs }, delayMs: 0 },
        () => {},
      );
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
