/**
 * The poller: decides *when* to claim. The runtime's supplied actions do the claiming and hand the jobs
 * to the slots.
 *
 * States:
 * - `idle`: not started.
 * - `polling`: a claim is in flight (`claim`). Only one at a time. A wakeup that arrives now is kept
 *   (`wakePending`) and causes another poll right after this one.
 * - `dispatching` (transient): the claimed jobs are handed to the slots (`dispatch`).
 * - `waiting`: sleeping for the adaptive delay (`pollDelay`, from the polling strategy), cut short to end
 *   at the earliest due time the runtime knows of (a retry, snooze or delayed enqueue this node wrote:
 *   `dueAt` of `CLAIMED`, or a `DUE` that ends the wait sooner re-arms it). Left early by a wakeup
 *   (coordinator hint or local enqueue), or when a slot frees up while the last claim came back full (more
 *   work is likely waiting), provided there is room to claim into. A wait that ends without room starts
 *   over with the strategy's delay alone.
 * - `draining`: shutdown began; no more claims. `STOP` ends it.
 * - `stopped`: final.
 *
 * A failed claim (database down) goes back to `waiting` with an exponential error delay, so a database
 * outage costs one cheap attempt per delay and never crashes the node.
 */
import { and, assign, or, setup } from "xstate";
import { backoffDelayMs } from "../logic/backoff.js";
import { capDelay, dueEndsWaitSooner } from "../logic/due-times.js";

/** The poller's context. */
export interface PollerContext {
  /** The delay of the current wait (ms): the strategy's, cut short by a known due time. */
  delayMs: number;
  /** The strategy's delay (or the error backoff) before any due time cut it short (ms). */
  baseDelayMs: number;
  /** The earliest known due time the current wait ends at or before (node clock ms), if any. */
  dueAt: number | null;
  /** When the current wait began (node clock ms, from the event that started it); null if unknown. */
  waitFrom: number | null;
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
  | {
      type: "CLAIMED";
      claimed: number;
      limit: number;
      delayMs: number;
      mode: string;
      /** When the claim was reported (node clock ms). */
      at?: number;
      /** The earliest due time the runtime knows of (node clock ms), or null. */
      dueAt?: number | null;
    }
  | { type: "CLAIM_FAILED"; error: unknown; at?: number }
  /** The runtime learned a due time (it wrote a retry, snooze or delayed job); `at` is now. */
  | { type: "DUE"; dueAt: number; at: number }
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
    dueSooner: ({ context, event }) =>
      event.type === "DUE" && dueEndsWaitSooner(context.waitFrom, context.delayMs, event.dueAt),
  },
  delays: {
    pollDelay: ({ context }) => context.delayMs,
  },
}).createMachine({
  id: "poller",
  context: ({ input }) => ({
    delayMs: input.delayMs,
    baseDelayMs: input.delayMs,
    dueAt: null,
    waitFrom: null,
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
            delayMs: event.at === undefined ? event.delayMs : capDelay(event.delayMs, event.dueAt, event.at),
            baseDelayMs: event.delayMs,
            dueAt: event.dueAt ?? null,
            waitFrom: event.at ?? null,
            mode: event.mode,
            consecutiveErrors: 0,
          })),
        },
        CLAIM_FAILED: {
          target: "waiting",
          actions: assign(({ context, event }) => {
            // A due time does not shorten the error backoff: the database is what failed.
            const delayMs = backoffDelayMs(context.consecutiveErrors + 1, {
              baseMs: 500,
              factor: 2,
              maxMs: 30_000,
              jitter: 0,
            });
            return {
              consecutiveErrors: context.consecutiveErrors + 1,
              lastFull: false,
              delayMs,
              baseDelayMs: delayMs,
              dueAt: null,
              waitFrom: event.at ?? null,
            };
          }),
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
          {
            // No room: a due row cannot start now either; wait the strategy's delay (a zero-length wait
            // for a passed due time would spin), the runtime reports the due time again after the next claim.
            target: "waiting",
            reenter: true,
            actions: assign(({ context }) => ({
              delayMs: context.baseDelayMs,
              dueAt: null,
              waitFrom: context.waitFrom === null ? null : context.waitFrom + context.delayMs,
            })),
          },
        ],
      },
      on: {
        WAKE: [{ guard: "hasRoom", target: "polling" }, { actions: assign({ wakePending: true }) }],
        DUE: {
          guard: "dueSooner",
          target: "waiting",
          reenter: true,
          actions: assign(({ event }) => ({
            delayMs: Math.max(0, event.dueAt - event.at),
            dueAt: event.dueAt,
            waitFrom: event.at,
          })),
        },
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
