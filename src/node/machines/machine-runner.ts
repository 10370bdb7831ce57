/**
 * The runner of a durable machine: the handler of every job type registered with `registerMachine`. One
 * run restores the machine from its saved snapshot (or starts it with the job's payload as `input`), then
 * feeds it its inputs one at a time, oldest first: due `after` timers and inbox events (pure
 * `nextInput`). Each input is applied and the snapshot it produced saved in ONE transaction, together
 * with the event's consumption, under the machine row's lock and the job's lease: an event is consumed
 * exactly once, and what a crash loses is only work that was never committed (it runs again).
 *
 * While an invoked promise runs (a durable step, ./durable-invokes.ts), the machine stays on its node and
 * keeps taking inputs. Once it only waits (pure `machinePhase` is `idle`) and its inbox is empty under the
 * lock, it saves its snapshot and timers and parks its job in that same transaction (WAITING, the attempt
 * given back, waking at its earliest timer), and the run ends with {@link MachineParked}. A final state
 * ends the job SUCCEEDED with the machine's output; an error nothing in the machine handled fails the
 * attempt (the job's retry policy; the next run resumes from the last saved snapshot).
 *
 * Timers: xstate keeps no scheduled event in a persisted snapshot and restarts a restored delay from
 * zero, so the actor runs on a clock that never fires, and the runner reads xstate's scheduling records
 * (`system.getSnapshot()._scheduledEvents`: the event, its delay, when it was scheduled) to save them,
 * schedules the saved ones again on restore (with the time they have left, so xstate can still cancel
 * them on a state exit), and delivers a due one itself, as an input.
 */
import { createActor, type AnyActor, type AnyStateMachine } from "xstate";
import { NonRetryableError } from "../attempt/job-errors.js";
import type { JobContext } from "../attempt/job-context.js";
import { MachineParked } from "../../composition/machine-errors.js";
import { machinePhase, type PhaseSnapshot } from "../../logic/machine-phase.js";
import { snapshotMisfit, type StateValueJson } from "../../logic/machine-fit.js";
import {
  nextInput,
  parkTimeoutMs,
  timerOf,
  type MachineEventJson,
  type MachineTimer,
} from "../../logic/machine-timers.js";
import type { MachineStore, MachineTransaction } from "../../store/machines/machine-store.js";
import type { PendingEvent } from "../../store/machines/machine-sql.js";
import { withDurableInvokes, type StepRun } from "./durable-invokes.js";
import type { MachineDefinition } from "./machine-definition.js";
import { MachineSnapshotMismatchError } from "./machine-errors.js";
import { machineActorId, type MachineInspection } from "./machine-inspection.js";
import type { MachineRegistry } from "./machine-registry.js";

/** What a machine runner needs. */
export interface MachineRunnerDeps {
  store: MachineStore;
  registry: MachineRegistry;
  /** Epoch ms: the clock xstate's scheduling records use. */
  now?: () => number;
  /** How often a machine with a running invoke looks at its inbox (ms). Default 500. */
  busyPollMs?: number;
  /** A timer due within this many ms is waited for on the node instead of parking. Default 200. */
  holdMs?: number;
  /** The node's inspection of its machines (the inspector's stream, the Stately bridge). */
  inspection?: MachineInspection;
}

/** The job no longer belongs to this node (its lease was swept, or it was canceled): stop, write nothing. */
class LostMachineLease extends Error {
  constructor(jobId: string) {
    super(`machine ${jobId}: this node no longer holds the job; the run stops without saving`);
    this.name = "LostMachineLease";
  }
}

/**
 * The step runner: the job context's durable `ctx.step` (docs/durable.md), under the name
 * `machine:<invoke id>#<occurrence>`, so the invoke's result is recorded once and a restored machine gets
 * it back instead of running it again; the step list of `getJob(id).steps` shows every invoke.
 */
function stepRunner(ctx: JobContext): StepRun {
  return (key, fn) => ctx.step(`machine:${key}`, () => fn());
}

/** The saved timers of the actor's root (the scheduling records xstate keeps, with their due times). */
function timersOf(actor: AnyActor): MachineTimer[] {
  const scheduled = actor.system.getSnapshot()._scheduledEvents;
  const out: MachineTimer[] = [];
  for (const e of Object.values(scheduled)) {
    if (e.target !== actor) continue; // only the machine's own delayed events outlive a run
    out.push(timerOf({ id: e.id, event: e.event as MachineEventJson, delay: e.delay }, e.startedAt));
  }
  return out;
}

function savedTimers(value: unknown): MachineTimer[] {
  if (!Array.isArray(value)) return [];
  return value.filter(
    (t): t is MachineTimer =>
      typeof t === "object" &&
      t !== null &&
      typeof (t as MachineTimer).id === "string" &&
      typeof (t as MachineTimer).dueAt === "number" &&
      typeof (t as MachineTimer).event?.type === "string",
  );
}

/** The actor names of a persisted snapshot's running children. */
function runningSrcs(snapshot: {
  children?: Record<string, { src?: unknown; snapshot?: { status?: string } }>;
}) {
  const out: string[] = [];
  for (const child of Object.values(snapshot.children ?? {})) {
    if (child.snapshot?.status === "active" && typeof child.src === "string") out.push(child.src);
  }
  return out;
}

/** A clock that never fires: the runner delivers due timers itself (see the file's comment). */
const silentClock = { setTimeout: () => 0, clearTimeout: () => {} };

/**
 * Runs one attempt of a machine job.
 *
 * @returns the machine's output when it reached a final state.
 * @throws MachineParked once parked; MachineSnapshotMismatchError (DEAD) for a snapshot that no longer
 *   fits; the machine's unhandled error (retried by policy).
 */
export async function runMachine(deps: MachineRunnerDeps, type: string, payload: unknown, ctx: JobContext) {
  const now = deps.now ?? Date.now;
  const current = deps.registry.current(type);
  if (!current) throw new NonRetryableError(`job type "${type}" is not a registered machine on this node`);
  const jobId = ctx.jobId;
  const nodeId = ctx.nodeId;
  const first = await deps.store.transaction((tx) => tx.lock(jobId, type, current.version, nodeId));
  if (!first) throw new LostMachineLease(jobId);
  const saved = first.snapshot as (PhaseSnapshot & { value: StateValueJson; output?: unknown }) | null;
  // A machine saved as final whose job's completion did not land (a crash in between): the same output.
  if (first.finishedAt !== null && saved) return saved.output;
  const def = deps.registry.definition(type, first.version) ?? current;
  if (saved) {
    const misfit = snapshotMisfit(
      def.machine.id,
      def.tree,
      saved.value,
      runningSrcs(saved as never),
      def.actors,
    );
    if (misfit) throw new MachineSnapshotMismatchError(type, def.version, misfit);
  }
  const occurrences: Record<string, number> = { ...first.occurrences };
  const machine: AnyStateMachine = withDurableInvokes(
    def.machine,
    (invokeId) => {
      const n = (occurrences[invokeId] ?? 0) + 1;
      occurrences[invokeId] = n;
      return `${invokeId}#${n}`;
    },
    stepRunner(ctx),
  );
  const inspection = deps.inspection;
  const actor = createActor(machine, {
    ...(saved ? { snapshot: saved as never } : { input: payload }),
    clock: silentClock,
    // The id the inspector's views give the machine; the node's observer sees the actor from its creation.
    id: machineActorId(jobId),
    ...(inspection ? { inspect: inspection.observe } : {}),
  });
  // An actor error with no error observer is rethrown globally: the loop reads the error from the snapshot.
  actor.subscribe({ error: () => {} });
  inspection?.started(actor);
  try {
    actor.start();
    for (const t of savedTimers(first.timers)) {
      actor.system.scheduler.schedule(actor, actor, t.event, Math.max(0, t.dueAt - now()), t.id);
    }
    return await drive(deps, { actor, def, type, jobId, nodeId, occurrences, ctx, now }, saved === null);
  } finally {
    actor.stop();
    inspection?.stopped(actor);
  }
}

interface Run {
  actor: AnyActor;
  def: MachineDefinition;
  type: string;
  jobId: string;
  nodeId: string;
  occurrences: Record<string, number>;
  ctx: JobContext;
  now: () => number;
}

/** The JSON the machine row stores after the current input. */
function saveOf(run: Run, finished: boolean) {
  return {
    snapshotJson: JSON.stringify(run.actor.getPersistedSnapshot()),
    timersJson: JSON.stringify(finished ? [] : timersOf(run.actor)),
    occurrencesJson: JSON.stringify(run.occurrences),
    finished,
  };
}

/**
 * One transaction under the machine's lock: `apply` changes the actor (synchronously: an invoke it starts
 * settles later, never inside this save), the snapshot it produced is taken at once, `record` writes what
 * goes with it (the event's consumption), and the snapshot is saved. Returns the saved snapshot object.
 */
async function commit(
  deps: MachineRunnerDeps,
  run: Run,
  apply: (() => void) | null,
  record: ((tx: MachineTransaction) => Promise<void>) | null = null,
): Promise<unknown> {
  return deps.store.transaction(async (tx) => {
    if (!(await tx.relock(run.jobId, run.nodeId))) throw new LostMachineLease(run.jobId);
    apply?.();
    const snapshot = run.actor.getSnapshot();
    const save = saveOf(run, snapshot.status === "done");
    await record?.(tx);
    if (!(await tx.save(run.jobId, run.nodeId, save))) throw new LostMachineLease(run.jobId);
    return snapshot;
  });
}

/**
 * Applies an inbox event: sent to the machine when its current state takes it, else ignored (as xstate
 * would), and marked so in the same transaction as the snapshot.
 */
async function commitEvent(deps: MachineRunnerDeps, run: Run, pending: PendingEvent): Promise<unknown> {
  const event = pending.event as MachineEventJson;
  let accepted = false;
  let after = "null";
  return commit(
    deps,
    run,
    () => {
      accepted = run.actor.getSnapshot().can(event) === true;
      if (accepted) run.actor.send(event);
      after = JSON.stringify(run.actor.getSnapshot().value ?? null);
    },
    async (tx) => {
      if (!(await tx.markEvent(run.jobId, pending.seq, accepted ? "consumed" : "ignored", after))) {
        throw new Error(`machine ${run.jobId}: event ${pending.seq} was no longer pending`);
      }
    },
  );
}

/** Waits until the machine's snapshot changes, `ms` pass, or the attempt is aborted. */
function settle(run: Run, from: unknown, ms: number): Promise<void> {
  return new Promise((resolve) => {
    if (run.actor.getSnapshot() !== from || run.ctx.signal.aborted) return resolve();
    const finish = () => {
      sub.unsubscribe();
      clearTimeout(timer);
      run.ctx.signal.removeEventListener("abort", finish);
      resolve();
    };
    const sub = run.actor.subscribe({ next: finish, error: finish, complete: finish });
    const timer = setTimeout(finish, Math.max(1, ms));
    run.ctx.signal.addEventListener("abort", finish);
  });
}

/** A live machine snapshot: its children are actor references, each with a snapshot of its own. */
interface LiveSnapshot {
  status: PhaseSnapshot["status"];
  children: Record<string, { getSnapshot(): { status: string } } | undefined>;
  error?: unknown;
  output?: unknown;
}

/** The pure phase of a live snapshot (its children's statuses read from their own snapshots). */
function phaseOf(snap: LiveSnapshot) {
  const children: PhaseSnapshot["children"] = {};
  for (const [id, ref] of Object.entries(snap.children)) children[id] = ref?.getSnapshot();
  return machinePhase({ status: snap.status, children });
}

async function drive(deps: MachineRunnerDeps, run: Run, fresh: boolean): Promise<unknown> {
  const pollMs = deps.busyPollMs ?? 500;
  const holdMs = deps.holdMs ?? 200;
  let savedSnapshot: unknown = fresh ? null : run.actor.getSnapshot();
  for (;;) {
    const snap = run.actor.getSnapshot() as LiveSnapshot;
    const phase = phaseOf(snap);
    if (phase === "error") throw snap.error;
    if (phase === "final") {
      await commit(deps, run, null);
      return snap.output;
    }
    if (run.ctx.signal.aborted) throw run.ctx.signal.reason;
    run.ctx.throwIfCancellationRequested();
    if (snap !== savedSnapshot) {
      // An invoke settled (or the machine just started): save what it produced before anything else.
      savedSnapshot = await commit(deps, run, null);
      continue;
    }
    const events = await deps.store.pendingEvents(run.jobId, 1);
    const timers = timersOf(run.actor);
    const next = nextInput(timers, events, run.now());
    if (next?.kind === "timer") {
      const { id, event } = next.timer;
      savedSnapshot = await commit(deps, run, () => {
        run.actor.system.scheduler.cancel(run.actor, id);
        run.actor.send(event);
      });
      continue;
    }
    if (next?.kind === "event") {
      const pending = events[0];
      if (pending) savedSnapshot = await commitEvent(deps, run, pending);
      continue;
    }
    const wakeMs = parkTimeoutMs(timers, run.now());
    if (phase === "busy" || (wakeMs !== null && wakeMs <= holdMs)) {
      await settle(run, snap, Math.min(pollMs, wakeMs ?? pollMs));
      continue;
    }
    // Only waiting: park, unless an event came in since the look above (the lock orders it against sends).
    const parked = await deps.store.transaction(async (tx) => {
      if (!(await tx.relock(run.jobId, run.nodeId))) throw new LostMachineLease(run.jobId);
      if (await tx.hasPendingEvent(run.jobId)) return false;
      // Nothing runs (idle) and no timer is due: the snapshot cannot change under this save. It is
      // written only when it changed since the last commit (timers and occurrences change with it).
      const changed = run.actor.getSnapshot() !== savedSnapshot;
      if (changed && !(await tx.save(run.jobId, run.nodeId, saveOf(run, false)))) {
        throw new LostMachineLease(run.jobId);
      }
      if (!(await tx.park(run.jobId, run.nodeId, wakeMs))) throw new LostMachineLease(run.jobId);
      return true;
    });
    if (parked) throw new MachineParked(wakeMs);
  }
}
