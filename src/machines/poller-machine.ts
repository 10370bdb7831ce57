/**
 * The poller: decides *when* to claim. The runtime's supplied actions do the claiming and hand the jobs
 * to the slots.
 *
 * States:
 * - `idle`: not started.
 * - `polling`: a claim is in flight (`claim`). Only one at a time. A wakeup that arrives now is kept
 *   (`wakePending`) and causes another poll right after this one.
 * - `dispatching` (transient): the claimed jobs are handed to the slots (`dispatch`).
 * - `waiting`: sleeping for the adaptive delay (`pollDelay`, from the polling strategy). Left early by a
 *   wakeup (coordinator hint or local enqueue), or when a slot frees up while the last claim came back
 *   full (more work is likely waiting), provided there is room to claim into.
 * - `draining`: shutdown began; no more claims. `STOP` ends it.
 * - `stopped`: final.
 *
 * A failed claim (database down) goes back to `waiting` with an exponential error delay, so a database
 * outage costs one cheap attempt per delay and never crashes the node.
 */
import { and, assign, or, setup } from "xstate";
import { backoffDelayMs } from "../logic/backoff.js";

/** The poller's context. */
export interface PollerContext {
  /** The delay of the current wait (ms). */
  delayMs: number;
  /** The polling mode the strategy reported last, for the inspector. */
  mode: string;
  lastClaimed: number;
  lastLimit: number;
  /** Whether the last claim filled its limit (more work is likely). */
  lastFull: boolean;
  wakePending: boolean;
  polls: number;
  consecutiveErrors: number;
}

/** Events the poller accepts. */
export type PollerEvent =
  | { type: "START" }
  | { type: "WAKE" }
  | { type: "SLOT_FREED" }
  | { type: "CLAIMED"; claimed: number; limit: number; delayMs: number; mode: string }
  | { type: "CLAIM_FAILED"; error: unknown }
  | { type: "DRAIN" }
  | { type: "STOP" };

/**
 * The poller machine. Supply `claim`, `dispatch` and the `hasRoom` guard with `.provide()`.
 */
export const pollerMachine = setup({
  types: { context: {} as PollerContext, events: {} as PollerEvent, input: {} as { delayMs: number } },
  actions: {
    claim: () => {},
    dispatch: () => {},
  },
  guards: {
    hasRoom: () => true,
    wakePending: ({ context }) => context.wakePending,
    backlogLikely: ({ context }) => context.lastFull,
  },
  delays: {
    pollDelay: ({ context }) => context.delayMs,
  },
}).createMachine({
  id: "poller",
  context: ({ input }) => ({
    delayMs: input.delayMs,
    mode: "normal",
    lastClaimed: 0,
    lastLimit: 0,
    lastFull: false,
    wakePending: false,
    polls: 0,
    consecutiveErrors: 0,
  }),
  initial: "idle",
  states: {
    idle: {
      on: { START: "polling", STOP: "stopped", DRAIN: "draining" },
    },
    polling: {
      entry: [assign({ wakePending: false, polls: ({ context }) => context.polls + 1 }), "claim"],
      on: {
        CLAIMED: {
          target: "dispatching",
          actions: assign(({ event }) => ({
            lastClaimed: event.claimed,
            lastLimit: event.limit,
            lastFull: event.limit > 0 && event.claimed >= event.limit,
            delayMs: event.delayMs,
            mode: event.mode,
            consecutiveErrors: 0,
          })),
        },
        CLAIM_FAILED: {
          target: "waiting",
          actions: assign(({ context }) => ({
            consecutiveErrors: context.consecutiveErrors + 1,
            lastFull: false,
            delayMs: backoffDelayMs(context.consecutiveErrors + 1, {
              baseMs: 500,
              factor: 2,
              maxMs: 30_000,
              jitter: 0,
            }),
          })),
        },
        WAKE: { actions: assign({ wakePending: true }) },
        DRAIN: "draining",
        STOP: "stopped",
      },
    },
    dispatching: {
      entry: "dispatch",
      always: [{ guard: and(["wakePending", "hasRoom"]), target: "polling" }, { target: "waiting" }],
    },
    waiting: {
      after: {
        pollDelay: [
          { guard: "hasRoom", target: "polling" },
          { target: "waiting", reenter: true },
        ],
      },
      on: {
        WAKE: [{ guard: "hasRoom", target: "polling" }, { actions: assign({ wakePending: true }) }],
        // The runtime sends this only when its local buffer runs low, not for every finished job.
        SLOT_FREED: { guard: and(["hasRoom", or(["wakePending", "backlogLikely"])]), target: "polling" },
        DRAIN: "draining",
        STOP: "stopped",
      },
    },
    draining: {
      on: { STOP: "stopped" },
    },
    stopped: { type: "final" },
  },
});
