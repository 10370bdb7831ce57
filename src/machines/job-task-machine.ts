/**
 * The job task: one job's attempt, as a state machine. Each slot of a node owns one of these actors and
 * reuses it for job after job (a fresh actor per job would cost several times more).
 *
 * States:
 * - `idle`: the slot is free. `START` brings a claimed job and goes to the first step it needs; a job
 *   that needs none of them (`readyToRun`) goes straight to `running`, the per-job hot path.
 * - `loading`: the lightweight claim path; the payload is loaded (`loadPayload`).
 * - `checkingCancellation`: the job waited in the local buffer long enough that it may have been
 *   canceled since its claim; the store is asked again (`checkCancellation`, batched by the runtime).
 * - `validating` (transient): the payload is validated (`validatePayload`, which keeps the verdict on the
 *   attempt); an invalid one is DEAD at once, before it can call anything or take a breaker trial.
 * - `gating` (transient): the circuit breaker of the job's service is consulted (`decideBreaker`, which
 *   keeps the decision on the attempt; an OPEN breaker hands the job back for the open window without
 *   using an attempt) and, when it admits the job, the admission is recorded at once (`admitBreaker`); a
 *   job with a resource goes to `acquiringPermit`, a rate-limited one to `admitting`, any other to
 *   `running`.
 * - `acquiringPermit`: a cluster-wide permit for the job's resource is requested; a saturated resource
 *   hands the job back after a delay without using an attempt.
 * - `admitting`: the job's rate limits admit its start (`admitRate`: the store's sliding log, or the
 *   node's memory of a closed window); a full window hands the job back until its next opening without
 *   using an attempt. Last before `running`, so a start is recorded only for an attempt that runs.
 * - `running`: the handler runs with its context bound; the watchdog is armed. `SETTLED` carries the
 *   handler's outcome, `TIMED_OUT` comes from the watchdog's hard deadline, `ABORT` from shutdown. `CANCEL`
 *   sets the attempt's cancellation request and stays.
 *
 * Why a state table and not `createMachine`: a plain job takes two steps of this actor (START, SETTLED),
 * and xstate's machine interpreter costs about 8 µs for those two steps even with inert effects (it
 * resolves transition domains, clones the snapshot and walks eventless transitions on every step), which
 * was most of a no-op job's node CPU. The table below is the same machine, interpreted by a small reducer
 * (under 0.5 µs for the two steps): an xstate actor with the same states, events and snapshot `value`, in
 * the same system, seen by the same inspector. Effects run during the step, as a machine's actions do.
 *
 * Guards only read: what they decide on (the validator's verdict, the breaker's decision) is computed by
 * the entry actions of the transient states before it, in the same step.
 *
 * Every effect receives the task's context and the slot number as its parameter (`finish`: the outcome).
 * Every way out goes back to `idle` through the `finish` action, which records the outcome (batched),
 * releases the permit, disarms the watchdog and frees the slot. The machine decides; the runtime's
 * supplied actions do the I/O and answer with events.
 */
import type { ActorLogic, ActorScope, Snapshot } from "xstate";

/** What an attempt ended with. */
export type TaskOutcome =
  | { kind: "success"; result: unknown }
  | { kind: "failure"; error: unknown }
  | { kind: "snooze"; delayMs: number }
  | { kind: "timeout"; error: unknown }
  | { kind: "canceled" }
  | { kind: "breaker-open"; delayMs: number }
  | { kind: "permit-denied"; delayMs: number }
  /** A rate limit's window was full: the job comes back after `delayMs`, its attempt not counted. */
  | { kind: "rate-limited"; delayMs: number }
  | { kind: "invalid-payload"; error: unknown }
  | { kind: "aborted" }
  /** The handler called ctx.waitForSignal() and no signal was delivered: park the job (WAITING). */
  | {
      kind: "wait";
      timeoutMs: number | null;
      /** A durable wait (ctx.sleep, a named waitForSignal, waitFor): its step, reason and fixed deadline. */
      durable?: { step: string; reason: "sleep" | "signal" | "children"; deadline: Date | null };
    }
  /**
   * The handler parked its job itself, in its own transaction (a durable machine that only waits): nothing
   * is left to write; `timeoutMs` is when it wakes on its own (null: only an event wakes it).
   */
  | { kind: "parked"; timeoutMs: number | null };

/** The job as the task sees it: an opaque record the runtime owns. */
export interface TaskJob {
  id: string;
  type: string;
  attempt: number;
  /** Set when the payload is known (full claim path, or after loading). */
  hasPayload: boolean;
  /** When the job was claimed (clock ms), to decide whether cancellation must be re-checked. */
  claimedAt: number;
  /** Whether the job's type has a circuit-breaker service. */
  service: string | undefined;
  /** Whether the job's type needs a resource permit. */
  resource: string | undefined;
}

/**
 * The task's context: only its slot. The attempt itself lives in the runtime's slot table, where every
 * effect finds it by slot; keeping it out of the context means starting a job writes no context.
 */
export interface JobTaskContext {
  slot: number;
  /** The runtime's clock. */
  now: () => number;
}

/** Events the task accepts. */
export type JobTaskEvent =
  | { type: "START"; job: TaskJob }
  | { type: "LOADED" }
  | { type: "LOAD_FAILED"; error: unknown }
  | { type: "CHECKED"; canceled: boolean }
  | { type: "PERMIT"; granted: boolean; retryInMs: number }
  | { type: "ADMISSION"; admitted: boolean; retryInMs: number }
  | { type: "SETTLED"; outcome: TaskOutcome }
  | { type: "TIMED_OUT"; error: unknown }
  | { type: "CANCEL" }
  | { type: "ABORT" };

/** Input of the task actor. */
export interface JobTaskInput {
  slot: number;
  now: () => number;
}

/** The task's states. */
export type JobTaskState =
  | "idle"
  | "loading"
  | "checkingCancellation"
  | "validating"
  | "gating"
  | "acquiringPermit"
  | "admitting"
  | "running";

/** The task's snapshot: a machine-like `value` (its state) and its context. */
export type JobTaskSnapshot = Snapshot<undefined> & {
  /** `stopped` once the actor is stopped (with its node), as a machine's. */
  status: "active" | "stopped";
  value: JobTaskState;
  context: JobTaskContext;
};

/** An effect that works on the slot's attempt. */
export type SlotAction = (context: JobTaskContext, slot: number) => void;
/** A supplied guard: reads the slot's attempt, never changes it. */
export type SlotGuard = (context: JobTaskContext, slot: number) => boolean;

/** The effects the runtime supplies (named as a machine's `setup({ actions })` would name them). */
export interface JobTaskActions {
  loadPayload: SlotAction;
  checkCancellation: SlotAction;
  acquirePermit: SlotAction;
  /** Asks the job's rate limits to admit its start; answered with `ADMISSION`. */
  admitRate: SlotAction;
  runHandler: SlotAction;
  requestCancellation: SlotAction;
  validatePayload: SlotAction;
  decideBreaker: SlotAction;
  admitBreaker: SlotAction;
  /** Records the outcome and frees the slot. */
  finish: (context: JobTaskContext, outcome: TaskOutcome) => void;
}

/** The guards the runtime supplies. */
export interface JobTaskGuards {
  readyToRun: SlotGuard;
  needsCancelCheck: SlotGuard;
  needsPermit: SlotGuard;
  /** The job is admitted under at least one rate limit (its keys were derived in `validatePayload`). */
  needsRateLimit: SlotGuard;
  breakerOpen: SlotGuard;
  payloadInvalid: SlotGuard;
}

/** Guards the table evaluates on the event alone (not supplied). */
const eventGuards = {
  needsPayload: (e: JobTaskEvent) => e.type === "START" && !e.job.hasPayload,
  canceled: (e: JobTaskEvent) => e.type === "CHECKED" && e.canceled,
  permitDenied: (e: JobTaskEvent) => e.type === "PERMIT" && !e.granted,
  rateRefused: (e: JobTaskEvent) => e.type === "ADMISSION" && !e.admitted,
};

/** One candidate transition: tried in order, the first whose guard passes wins. */
export interface TaskTransition {
  guard?: keyof JobTaskGuards | keyof typeof eventGuards;
  /** Absent: targetless (the state stays and is not re-entered). */
  target?: JobTaskState;
  /** A slot action run on the way. */
  action?: Exclude<keyof JobTaskActions, "finish">;
  /** The outcome `finish` is called with on the way, computed from the event. */
  finish?: (e: JobTaskEvent | null) => TaskOutcome;
}

/** One state of the table. */
export interface TaskStateDef {
  entry?: Exclude<keyof JobTaskActions, "finish">;
  on?: Partial<Record<JobTaskEvent["type"], readonly TaskTransition[]>>;
  /** Eventless transitions, taken right after entry (a transient state). */
  always?: readonly TaskTransition[];
}

// Outcomes without data are shared constants: the hot path allocates none.
const aborted: TaskOutcome = Object.freeze({ kind: "aborted" });
const canceledOutcome: TaskOutcome = Object.freeze({ kind: "canceled" });
const errorOf = (e: JobTaskEvent | null): unknown => (e !== null && "error" in e ? e.error : undefined);
const abort: readonly TaskTransition[] = [{ target: "idle", finish: () => aborted }];

/** The job task as a state table: the single definition the reducer runs and the diagram is checked against. */
export const jobTaskTable: { initial: JobTaskState; states: Record<JobTaskState, TaskStateDef> } = {
  initial: "idle",
  states: {
    idle: {
      on: {
        START: [
          // The hot path: a job with its payload, fresh from the claim, with no breaker, permit or
          // validator, goes straight to running in one step.
          { guard: "readyToRun", target: "running" },
          { guard: "needsPayload", target: "loading" },
          { guard: "needsCancelCheck", target: "checkingCancellation" },
          { target: "validating" },
        ],
      },
    },
    loading: {
      entry: "loadPayload",
      on: {
        LOADED: [{ target: "checkingCancellation" }],
        LOAD_FAILED: [{ target: "idle", finish: (e) => ({ kind: "failure", error: errorOf(e) }) }],
        ABORT: abort,
      },
    },
    checkingCancellation: {
      entry: "checkCancellation",
      on: {
        CHECKED: [
          { guard: "canceled", target: "idle", finish: () => canceledOutcome },
          { target: "validating" },
        ],
        ABORT: abort,
      },
    },
    validating: {
      // Validation runs first, so a payload that can never run neither calls the service nor takes a
      // breaker trial. The validator is user code: it runs here, as an action, and the guard reads its verdict.
      entry: "validatePayload",
      always: [
        {
          guard: "payloadInvalid",
          target: "idle",
          finish: () => ({ kind: "invalid-payload", error: undefined }),
        },
        { target: "gating" },
      ],
    },
    gating: {
      // The breaker's decision is taken on entry (which may spawn the service's breaker) and recorded by
      // `admitBreaker` in the same step, so no result can slip in between the decision and its record.
      entry: "decideBreaker",
      always: [
        { guard: "breakerOpen", target: "idle", finish: () => ({ kind: "breaker-open", delayMs: 0 }) },
        { guard: "needsPermit", target: "acquiringPermit", action: "admitBreaker" },
        { guard: "needsRateLimit", target: "admitting", action: "admitBreaker" },
        { target: "running", action: "admitBreaker" },
      ],
    },
    acquiringPermit: {
      entry: "acquirePermit",
      on: {
        PERMIT: [
          {
            guard: "permitDenied",
            target: "idle",
            finish: (e) => ({ kind: "permit-denied", delayMs: e?.type === "PERMIT" ? e.retryInMs : 0 }),
          },
          { guard: "needsRateLimit", target: "admitting" },
          { target: "running" },
        ],
        ABORT: abort,
      },
    },
    admitting: {
      // Last before running: a start is recorded in the limit's window only for an attempt that runs.
      entry: "admitRate",
      on: {
        ADMISSION: [
          {
            guard: "rateRefused",
            target: "idle",
            finish: (e) => ({ kind: "rate-limited", delayMs: e?.type === "ADMISSION" ? e.retryInMs : 0 }),
          },
          { target: "running" },
        ],
        ABORT: abort,
      },
    },
    running: {
      entry: "runHandler",
      on: {
        SETTLED: [{ target: "idle", finish: (e) => (e?.type === "SETTLED" ? e.outcome : aborted) }],
        TIMED_OUT: [{ target: "idle", finish: (e) => ({ kind: "timeout", error: errorOf(e) }) }],
        ABORT: abort,
        CANCEL: [{ action: "requestCancellation" }],
      },
    },
  },
};

/** The job task's actor logic, with `provide` to supply its effects (as a machine's `.provide()`). */
export type JobTaskLogic = ActorLogic<JobTaskSnapshot, JobTaskEvent, JobTaskInput> & {
  /** The same table with these effects and guards in place of the current ones. */
  provide(impl: { actions?: Partial<JobTaskActions>; guards?: Partial<JobTaskGuards> }): JobTaskLogic;
};

/** Builds the task's logic: the reducer over {@link jobTaskTable} with these effects. */
function taskLogic(actions: JobTaskActions, guards: JobTaskGuards): JobTaskLogic {
  const { states } = jobTaskTable;
  /** `event` is null for an eventless transition. */
  const passes = (t: TaskTransition, context: JobTaskContext, event: JobTaskEvent | null): boolean => {
    const g = t.guard;
    if (g === undefined) return true;
    if (g === "needsPayload" || g === "canceled" || g === "permitDenied" || g === "rateRefused") {
      return event !== null && eventGuards[g](event);
    }
    return guards[g](context, context.slot);
  };
  /** The first candidate whose guard passes (a loop, not `find`: no closure per step). */
  const first = (
    list: readonly TaskTransition[] | undefined,
    context: JobTaskContext,
    event: JobTaskEvent | null,
  ): TaskTransition | undefined => {
    if (list === undefined) return undefined;
    for (const t of list) if (passes(t, context, event)) return t;
    return undefined;
  };
  /** Runs a transition's own effects (its action, then `finish`). */
  const effects = (t: TaskTransition, context: JobTaskContext, event: JobTaskEvent | null): void => {
    if (t.action !== undefined) actions[t.action](context, context.slot);
    if (t.finish !== undefined) actions.finish(context, t.finish(event));
  };

  const logic: JobTaskLogic = {
    config: jobTaskTable,
    transition: (snapshot, event) => {
      // xstate stops an actor by sending it this event; a machine's snapshot says so, and so does this one.
      if ((event as { type: string }).type === "xstate.stop") return { ...snapshot, status: "stopped" };
      const { context } = snapshot;
      // An event the state does not list is ignored (a late SETTLED after ABORT finds the task idle).
      const t = first(states[snapshot.value].on?.[event.type], context, event);
      if (t === undefined) return snapshot;
      effects(t, context, event);
      if (t.target === undefined) return snapshot; // targetless: no exit, no entry
      let value = t.target;
      // Enter the target and follow eventless transitions (validating -> gating -> ...) in the same step.
      for (;;) {
        const def = states[value];
        if (def.entry !== undefined) actions[def.entry](context, context.slot);
        const next = first(def.always, context, null);
        if (next === undefined) break;
        effects(next, context, null);
        value = next.target ?? value;
      }
      return { status: "active", output: undefined, error: undefined, value, context };
    },
    getInitialSnapshot: (_scope: ActorScope<JobTaskSnapshot, JobTaskEvent>, input: JobTaskInput) => ({
      status: "active",
      output: undefined,
      error: undefined,
      value: jobTaskTable.initial,
      context: { slot: input.slot, now: input.now },
    }),
    getPersistedSnapshot: (snapshot) => snapshot,
    provide: (impl) => taskLogic({ ...actions, ...impl.actions }, { ...guards, ...impl.guards }),
  };
  return logic;
}

const inert = () => {};
const never = () => false;

/**
 * The job-task logic. The runtime supplies every action and guard through `.provide()`; the defaults here
 * are inert so the table can be tested on its own.
 */
export const jobTaskMachine: JobTaskLogic = taskLogic(
  {
    loadPayload: inert,
    checkCancellation: inert,
    acquirePermit: inert,
    admitRate: inert,
    runHandler: inert,
    requestCancellation: inert,
    validatePayload: inert,
    decideBreaker: inert,
    admitBreaker: inert,
    finish: inert,
  },
  {
    readyToRun: never,
    needsCancelCheck: never,
    needsPermit: never,
    needsRateLimit: never,
    breakerOpen: never,
    payloadInvalid: never,
  },
);
