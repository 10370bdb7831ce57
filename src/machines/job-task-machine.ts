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
 *   job with a resource goes to `acquiringPermit`, any other to `running`.
 * - `acquiringPermit`: a cluster-wide permit for the job's resource is requested; a saturated resource
 *   hands the job back after a delay without using an attempt.
 * - `running`: the handler runs with its context bound; the watchdog is armed. `SETTLED` carries the
 *   handler's outcome, `TIMED_OUT` comes from the watchdog's hard deadline, `ABORT` from shutdown. `CANCEL`
 *   sets the attempt's cancellation request and stays.
 *
 * Guards only read: what they decide on (the validator's verdict, the breaker's decision) is computed by
 * the entry actions of the transient states before it, in the same macrostep.
 *
 * Every effect receives the slot number as its parameter. Every way out goes back to `idle` through the
 * `finish` action, which records the outcome (batched),
 * releases the permit, disarms the watchdog and frees the slot. The machine decides; the runtime's
 * supplied actions do the I/O and answer with events.
 */
import { setup } from "xstate";

/** What an attempt ended with. */
export type TaskOutcome =
  | { kind: "success"; result: unknown }
  | { kind: "failure"; error: unknown }
  | { kind: "snooze"; delayMs: number }
  | { kind: "timeout"; error: unknown }
  | { kind: "canceled" }
  | { kind: "breaker-open"; delayMs: number }
  | { kind: "permit-denied"; delayMs: number }
  | { kind: "invalid-payload"; error: unknown }
  | { kind: "aborted" }
  /** The handler called ctx.waitForSignal() and no signal was delivered: park the job (WAITING). */
  | { kind: "wait"; timeoutMs: number | null };

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
 * effect finds it by slot; keeping it out of the context means starting a job writes no context, which
 * is most of what a transition costs.
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
  | { type: "SETTLED"; outcome: TaskOutcome }
  | { type: "TIMED_OUT"; error: unknown }
  | { type: "CANCEL" }
  | { type: "ABORT" };

/** Input of the task actor. */
export interface JobTaskInput {
  slot: number;
  now: () => number;
}

const finishWith = (outcome: (e: JobTaskEvent) => TaskOutcome) =>
  ({
    type: "finish",
    params: ({ event }: { event: JobTaskEvent }) => outcome(event),
  }) as const;

/**
 * The job-task machine. The runtime supplies every action and guard below through `.provide()`; the
 * defaults here are inert so the machine can be tested on its own.
 */
export const jobTaskMachine = setup({
  types: {
    context: {} as JobTaskContext,
    events: {} as JobTaskEvent,
    input: {} as JobTaskInput,
  },
  actions: {
    loadPayload: (_, _slot: number) => {},
    checkCancellation: (_, _slot: number) => {},
    acquirePermit: (_, _slot: number) => {},
    runHandler: (_, _slot: number) => {},
    requestCancellation: (_, _slot: number) => {},
    validatePayload: (_, _slot: number) => {},
    decideBreaker: (_, _slot: number) => {},
    admitBreaker: (_, _slot: number) => {},
    finish: (_, _outcome: TaskOutcome) => {},
  },
  guards: {
    needsPayload: ({ event }) => event.type === "START" && !event.job.hasPayload,
    needsPermit: (_, _slot: number) => false,
    readyToRun: (_, _slot: number) => false,
    needsCancelCheck: (_, _slot: number) => false,
    breakerOpen: (_, _slot: number) => false,
    payloadInvalid: (_, _slot: number) => false,
  },
  delays: {},
}).createMachine({
  id: "jobTask",
  context: ({ input }) => ({ slot: input.slot, now: input.now }),
  initial: "idle",
  states: {
    idle: {
      on: {
        START: [
          // The hot path: a job with its payload, fresh from the claim, with no breaker, permit or
          // validator, goes straight to running in one microstep.
          {
            guard: { type: "readyToRun", params: ({ context }) => context.slot },
            target: "running",
          },
          {
            guard: "needsPayload",
            target: "loading",
          },
          {
            guard: { type: "needsCancelCheck", params: ({ context }) => context.slot },
            target: "checkingCancellation",
          },
          { target: "validating" },
        ],
      },
    },
    loading: {
      entry: { type: "loadPayload", params: ({ context }) => context.slot },
      on: {
        LOADED: "checkingCancellation",
        LOAD_FAILED: { target: "idle", actions: finishWith((e) => ({ kind: "failure", error: errorOf(e) })) },
        ABORT: { target: "idle", actions: finishWith(() => ({ kind: "aborted" })) },
      },
    },
    checkingCancellation: {
      entry: { type: "checkCancellation", params: ({ context }) => context.slot },
      on: {
        CHECKED: [
          {
            guard: ({ event }) => event.canceled,
            target: "idle",
            actions: finishWith(() => ({ kind: "canceled" })),
          },
          { target: "validating" },
        ],
        ABORT: { target: "idle", actions: finishWith(() => ({ kind: "aborted" })) },
      },
    },
    validating: {
      // Validation runs first, so a payload that can never run neither calls the service nor takes a
      // breaker trial. The validator is user code: it runs here, as an action, and the guard reads its verdict.
      entry: { type: "validatePayload", params: ({ context }) => context.slot },
      always: [
        {
          guard: { type: "payloadInvalid", params: ({ context }) => context.slot },
          target: "idle",
          actions: finishWith(() => ({ kind: "invalid-payload", error: undefined })),
        },
        { target: "gating" },
      ],
    },
    gating: {
      // The breaker's decision is taken on entry (which may spawn the service's breaker) and recorded by
      // `admitBreaker` in the same macrostep, so no result can slip in between the decision and its record.
      entry: { type: "decideBreaker", params: ({ context }) => context.slot },
      always: [
        {
          guard: { type: "breakerOpen", params: ({ context }) => context.slot },
          target: "idle",
          actions: finishWith(() => ({ kind: "breaker-open", delayMs: 0 })),
        },
        {
          guard: { type: "needsPermit", params: ({ context }) => context.slot },
          target: "acquiringPermit",
          actions: { type: "admitBreaker", params: ({ context }) => context.slot },
        },
        { target: "running", actions: { type: "admitBreaker", params: ({ context }) => context.slot } },
      ],
    },
    acquiringPermit: {
      entry: { type: "acquirePermit", params: ({ context }) => context.slot },
      on: {
        PERMIT: [
          {
            guard: ({ event }) => !event.granted,
            target: "idle",
            actions: finishWith((e) => ({
              kind: "permit-denied",
              delayMs: e.type === "PERMIT" ? e.retryInMs : 0,
            })),
          },
          { target: "running" },
        ],
        ABORT: { target: "idle", actions: finishWith(() => ({ kind: "aborted" })) },
      },
    },
    running: {
      entry: { type: "runHandler", params: ({ context }) => context.slot },
      on: {
        SETTLED: {
          target: "idle",
          actions: finishWith((e) => (e.type === "SETTLED" ? e.outcome : { kind: "aborted" })),
        },
        TIMED_OUT: { target: "idle", actions: finishWith((e) => ({ kind: "timeout", error: errorOf(e) })) },
        ABORT: { target: "idle", actions: finishWith(() => ({ kind: "aborted" })) },
        CANCEL: {
          actions: { type: "requestCancellation", params: ({ context }) => context.slot },
        },
      },
    },
  },
});

function errorOf(e: JobTaskEvent): unknown {
  return "error" in e ? e.error : undefined;
}
