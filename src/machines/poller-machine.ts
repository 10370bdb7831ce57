/**
 * The poller: decides *when* to claim. The runtime's supplied actions do the claiming and hand the jobs
 * to the slots.
 *
 * States:
 * - `idle`: not started.
 * - `polling`: one or two claims are in flight (`claim`; `inFlight` counts them). Entering starts one. While
 *   it is out, the buffer running low (`SLOT_FREED` with the buffer at or below the claim-ahead mark, room
 *   left after what the claims in flight reserved, and the last claim full) starts a second one, so the
 *   next batch is on its way before the buffer runs dry: never more than two. Each claim reports
 *   `CLAIMED` or `CLAIM_FAILED`; the one that is not the last dispatches (or counts its failure) and
 *   stays. A wakeup that arrives now is kept (`wakePending`) and causes another poll right after the last.
 * - `dispatching` (transient): the last claim's jobs are handed to the slots (`dispatch`).
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

/**
 * The longest wait between two claims while they fail (ms). It bounds how long after the database comes
 * back (a restart, a failover's promotion) a node claims again: a claim every 5 s of an outage costs the
 * database nothing, and with 30 s, as before, a failover of 8 s left nodes idle for 16 s after it.
 */
export const claimErrorBackoffMaxMs = 5000;
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
  /** Claims started and not reported yet (0 outside `polling`, at most {@link maxClaimsInFlight}). */
  inFlight: number;
  polls: number;
  consecutiveErrors: number;
}

/**
 * The most claims in flight at once: one to cover the buffer running dry while the other lands. A third
 * would only hold more rows locked and more connections for a batch the slots cannot reach yet.
 */
export const maxClaimsInFlight = 2;

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
      /** Keyed work waited on a concurrency limit in this claim: treat a freed slot as a likely backlog. */
      heldBack?: boolean;
    }
  | { type: "CLAIM_FAILED"; error: unknown; at?: number }
  /** The runtime learned a due time (it wrote a retry, snooze or delayed job); `at` is now. */
  | { type: "DUE"; dueAt: number; at: number }
  | { type: "DRAIN" }
  | { type: "STOP" };

/** What a `CLAIMED` tells the poller: the claim's size, the strategy's next delay, the known due time. */
function recordClaim({ event }: { event: PollerEvent }): Partial<PollerContext> {
  if (event.type !== "CLAIMED") return {};
  return {
    lastClaimed: event.claimed,
    lastLimit: event.limit,
    // A claim held back by concurrency limits also means work waits: a freed slot (perhaps of that key)
    // should claim at once rather than wait out the delay (docs/fairness.md).
    lastFull: (event.limit > 0 && event.claimed >= event.limit) || event.heldBack === true,
    delayMs: event.at === undefined ? event.delayMs : capDelay(event.delayMs, event.dueAt, event.at),
    baseDelayMs: event.delayMs,
    dueAt: event.dueAt ?? null,
    waitFrom: event.at ?? null,
    mode: event.mode,
    consecutiveErrors: 0,
  };
}

/**
 * The poller machine. Supply `claim`, `dispatch` and the `hasRoom` and `bufferLow` guards with `.provide()`.
 */
export const pollerMachine = setup({
  types: { context: {} as PollerContext, events: {} as PollerEvent, input: {} as { delayMs: number } },
  actions: {
    claim: () => {},
    dispatch: () => {},
  },
  guards: {
    hasRoom: () => true,
    /** Supplied: the buffer is at or below the claim-ahead mark (time to have the next batch on its way). */
    bufferLow: () => true,
    canOverlap: ({ context }) => context.inFlight < maxClaimsInFlight,
    othersInFlight: ({ context }) => context.inFlight > 1,
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
    inFlight: 0,
    polls: 0,
    consecutiveErrors: 0,
  }),
  initial: "idle",
  states: {
    idle: {
      on: { START: "polling", STOP: "stopped", DRAIN: "draining" },
    },
    polling: {
      entry: [
        assign({ wakePending: false, inFlight: 1, polls: ({ context }) => context.polls + 1 }),
        "claim",
      ],
      on: {
        CLAIMED: [
          {
            // Another claim is still out: hand these jobs to the slots now and wait for it.
            guard: "othersInFlight",
            actions: [
              assign(recordClaim),
              assign({ inFlight: ({ context }) => context.inFlight - 1 }),
              "dispatch",
            ],
          },
          { target: "dispatching", actions: [assign(recordClaim), assign({ inFlight: 0 })] },
        ],
        CLAIM_FAILED: [
          {
            // The other claim may still bring jobs; the backoff starts if it fails too.
            guard: "othersInFlight",
            actions: assign(({ context }) => ({
              inFlight: context.inFlight - 1,
              consecutiveErrors: context.consecutiveErrors + 1,
              lastFull: false,
            })),
          },
          {
            target: "waiting",
            actions: assign(({ context, event }) => {
              // A due time does not shorten the error backoff: the database is what failed.
              const delayMs = backoffDelayMs(context.consecutiveErrors + 1, {
                baseMs: 500,
                factor: 2,
                maxMs: claimErrorBackoffMaxMs,
                jitter: 0,
              });
              return {
                inFlight: 0,
                consecutiveErrors: context.consecutiveErrors + 1,
                lastFull: false,
                delayMs,
                baseDelayMs: delayMs,
                dueAt: null,
                waitFrom: event.type === "CLAIM_FAILED" ? (event.at ?? null) : null,
              };
            }),
          },
        ],
        // Claim ahead: the buffer runs low while a claim is out and the last one came back full.
        SLOT_FREED: {
          guard: and(["canOverlap", "bufferLow", "hasRoom", "backlogLikely"]),
          actions: [
            assign({
              inFlight: ({ context }) => context.inFlight + 1,
              polls: ({ context }) => context.polls + 1,
            }),
            "claim",
          ],
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
