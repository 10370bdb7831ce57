/**
 * The watchdog: one per slot, re-armed for every attempt, so watching a job costs two events and no
 * actor creation.
 *
 * States:
 * - `idle`: no attempt is watched.
 * - `watching`: an attempt runs. The steps come from the pure {@link watchdogSchedule} (soft warning,
 *   cancellation request, hard timeout); exactly one timer is pending, for the next step. When it fires
 *   the machine reports the step (`reportStep`, supplied by the runtime) and re-enters itself for the
 *   next one. After the hard timeout it goes to `expired`.
 * - `expired`: the hard deadline passed; the runtime ends the attempt as a timeout. `DISARM` or a new
 *   `ARM` leaves it.
 *
 * `phase` in the context says which steps have fired, for the inspector.
 */
import { assign, setup } from "xstate";
import {
  watchdogSchedule,
  type WatchdogConfig,
  type WatchdogStep,
  type WatchdogStepKind,
} from "../logic/watchdog-schedule.js";

/** The watchdog's context. */
export interface WatchdogContext {
  slot: number;
  config: WatchdogConfig;
  jobId: string | null;
  startedAt: number;
  deadline: number;
  steps: readonly WatchdogStep[];
  /** Index of the next step to fire. */
  next: number;
  /** The last step that fired, or `armed`. */
  phase: "armed" | WatchdogStepKind | null;
  /** The clock's now() at arm time, to turn step times into delays. */
  now: () => number;
}

/** Events the watchdog accepts. */
export type WatchdogEvent =
  { type: "ARM"; jobId: string; startedAt: number; timeoutMs: number } | { type: "DISARM" };

/** Input of the watchdog actor. */
export interface WatchdogInput {
  slot: number;
  config: WatchdogConfig;
  now: () => number;
}

/**
 * What a step's timer does, whether or not it was the last step: report the step that came due, then move
 * the cursor past it. Shared by both branches of `untilNextStep` so they cannot drift apart.
 */
const reportAndAdvance = [
  {
    type: "reportStep",
    params: ({ context }: { context: WatchdogContext }) => ({
      jobId: context.jobId as string,
      step: context.steps[context.next] as WatchdogStep,
    }),
  },
  "advance",
] as const;

/**
 * The watchdog machine. Supply `reportStep` with `.provide({ actions: { reportStep } })`; it receives the
 * step that fired as `params`.
 */
export const watchdogMachine = setup({
  types: {
    context: {} as WatchdogContext,
    events: {} as WatchdogEvent,
    input: {} as WatchdogInput,
  },
  actions: {
    arm: assign(({ context, event }) => {
      if (event.type !== "ARM") return {};
      const steps = watchdogSchedule(event.startedAt, event.timeoutMs, context.config);
      return {
        jobId: event.jobId,
        startedAt: event.startedAt,
        deadline: event.startedAt + event.timeoutMs,
        steps,
        next: 0,
        phase: "armed" as const,
      };
    }),
    advance: assign(({ context }) => {
      const fired = context.steps[context.next];
      return { next: context.next + 1, phase: fired?.kind ?? context.phase };
    }),
    reportStep: (_, _params: { jobId: string; step: WatchdogStep }) => {},
  },
  guards: {
    lastStep: ({ context }) => context.next >= context.steps.length - 1,
  },
  delays: {
    untilNextStep: ({ context }) => {
      const step = context.steps[context.next];
      return step ? Math.max(0, step.at - context.now()) : 0;
    },
  },
}).createMachine({
  id: "watchdog",
  context: ({ input }) => ({
    slot: input.slot,
    config: input.config,
    jobId: null,
    startedAt: 0,
    deadline: 0,
    steps: [],
    next: 0,
    phase: null,
    now: input.now,
  }),
  initial: "idle",
  on: {
    ARM: { target: ".watching", actions: "arm", reenter: true },
    // No context write on disarm: the state says the watchdog is idle, and skipping the assign keeps
    // the per-job cost down. The inspector reads jobId/phase only in `watching`.
    DISARM: { target: ".idle" },
  },
  states: {
    idle: {},
    watching: {
      after: {
        untilNextStep: [
          {
            guard: "lastStep",
            target: "expired",
            actions: reportAndAdvance,
          },
          {
            target: "watching",
            reenter: true,
            actions: reportAndAdvance,
          },
        ],
      },
    },
    expired: {},
  },
});
