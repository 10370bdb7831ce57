/**
 * A circuit breaker for one target service, spawned by the node the first time a job of that service
 * runs. Its context is the pure {@link BreakerSnapshot}; every decision is made by logic/breaker.ts and the
 * machine's states follow the snapshot's state, so the diagram and the maths cannot disagree.
 *
 * States:
 * - `CLOSED`: calls pass. Results are recorded in a sliding window; too many failures (a count, or a rate
 *   over a minimum of calls) open the breaker.
 * - `OPEN`: calls are refused; jobs are handed back for the rest of the open window without using an
 *   attempt. A timer moves to `HALF_OPEN` when the window ends (a call arriving first makes the same move).
 * - `HALF_OPEN`: up to `halfOpenTrials` trial calls pass at once. A failed trial re-opens; enough
 *   successful trials close.
 *
 * `ADMIT { trial }` records that a job the task admitted (deciding synchronously with `breakerAllow` on
 * the snapshot) took a HALF_OPEN trial; the machine applies it to its current snapshot, so events that
 * arrive in between are never overwritten; `RESULT` carries a call's outcome; `RELEASE` frees a trial slot whose call ended
 * without a verdict (snooze, cancel, shutdown). `reportChange` (supplied) is called on entering each
 * state, re-entries included; the runtime reports only real changes.
 */
import { assign, setup } from "xstate";
import {
  breakerAllow,
  breakerHalfOpen,
  breakerRecord,
  breakerRelease,
  initialBreaker,
  type BreakerConfig,
  type BreakerSnapshot,
} from "../logic/breaker.js";

/** The breaker's context. */
export interface BreakerContext {
  service: string;
  config: BreakerConfig;
  breaker: BreakerSnapshot;
  now: () => number;
}

/** Events the breaker accepts. */
export type BreakerEvent =
  | { type: "ADMIT"; trial: boolean }
  | { type: "RESULT"; ok: boolean; trial: boolean }
  | { type: "RELEASE"; trial: boolean };

/** Input of the breaker actor. */
export interface BreakerInput {
  service: string;
  config: BreakerConfig;
  now: () => number;
}

const follow = [
  { guard: "isOpen", target: "#breaker.OPEN" },
  { guard: "isHalfOpen", target: "#breaker.HALF_OPEN" },
  { guard: "isClosed", target: "#breaker.CLOSED" },
] as const;

/** The breaker machine. */
export const breakerMachine = setup({
  types: { context: {} as BreakerContext, events: {} as BreakerEvent, input: {} as BreakerInput },
  actions: {
    admit: assign(({ context, event }) => {
      if (event.type !== "ADMIT" || !event.trial) return {};
      // Applied to the current snapshot: a trial is counted only if the breaker would admit one now.
      const d = breakerAllow(context.breaker, context.now(), context.config);
      return d.allowed && d.trial ? { breaker: d.next } : {};
    }),
    record: assign(({ context, event }) =>
      event.type === "RESULT"
        ? { breaker: breakerRecord(context.breaker, event.ok, context.now(), context.config, event.trial) }
        : {},
    ),
    release: assign(({ context, event }) =>
      event.type === "RELEASE" ? { breaker: breakerRelease(context.breaker, event.trial) } : {},
    ),
    halfOpen: assign(({ context }) => ({
      breaker: breakerHalfOpen(context.breaker, context.now(), context.config),
    })),
    reportChange: (_, _params: { service: string; to: string }) => {},
  },
  guards: {
    isOpen: ({ context }) => context.breaker.state === "OPEN",
    isHalfOpen: ({ context }) => context.breaker.state === "HALF_OPEN",
    isClosed: ({ context }) => context.breaker.state === "CLOSED",
  },
  delays: {
    openWindow: ({ context }) =>
      Math.max(0, (context.breaker.openedAt ?? 0) + context.config.openMs - context.now()),
  },
}).createMachine({
  id: "breaker",
  context: ({ input }) => ({
    service: input.service,
    config: input.config,
    breaker: initialBreaker(),
    now: input.now,
  }),
  initial: "CLOSED",
  on: {
    ADMIT: { actions: "admit", target: ".settling" },
    RESULT: { actions: "record", target: ".settling" },
    RELEASE: { actions: "release" },
  },
  states: {
    // Transient: jump to the state the snapshot is in now.
    settling: { always: [...follow] },
    CLOSED: {
      entry: { type: "reportChange", params: ({ context }) => ({ service: context.service, to: "CLOSED" }) },
    },
    OPEN: {
      entry: { type: "reportChange", params: ({ context }) => ({ service: context.service, to: "OPEN" }) },
      after: { openWindow: { actions: "halfOpen", target: "settling" } },
    },
    HALF_OPEN: {
      entry: {
        type: "reportChange",
        params: ({ context }) => ({ service: context.service, to: "HALF_OPEN" }),
      },
    },
  },
});
