/**
 * The node: the root actor of one pawl runtime. It owns every other actor, so one snapshot (and one
 * xstate inspection stream) covers the whole node.
 *
 * States:
 * - `running`: on entry it spawns the poller, the polling strategy, and one job task plus one watchdog
 *   per slot (`slot-0`..`slot-N`, `watchdog-0`..). Breakers are spawned on first use of a service
 *   (`ADD_BREAKER`). Slots are a fixed pool reused for every job, never spawned per job.
 * - `draining`: shutdown began (`DRAIN`): the node tells the poller (`DRAIN`), so it claims no more; running
 *   jobs get their grace. This state is the node's only record of draining: the runtime reads it from the
 *   snapshot (no room to claim, nothing started from the buffer) and the poller is told by it.
 * - `stopped`: final; the runtime stops the actor tree.
 *
 * The children's implementations are supplied by the runtime with `.provide({ actors })`.
 */
import { enqueueActions, sendTo, setup, spawnChild } from "xstate";
import { breakerMachine, type BreakerInput } from "./breaker-machine.js";
import { jobTaskMachine } from "./job-task-machine.js";
import { pollerMachine } from "./poller-machine.js";
import { pollingStrategyLogic, type PollingStrategyInput } from "./polling-strategy-actor.js";
import { watchdogMachine } from "./watchdog-machine.js";
import type { PollingConfig } from "../logic/polling-strategy.js";
import type { WatchdogConfig } from "../logic/watchdog-schedule.js";

/** Input of the node actor. */
export interface NodeInput {
  nodeId: string;
  concurrency: number;
  polling: PollingConfig;
  watchdog: WatchdogConfig;
  now: () => number;
}

/** The node's context. */
export interface NodeContext extends NodeInput {
  breakers: string[];
}

/** Events the node accepts. */
export type NodeEvent =
  { type: "DRAIN" } | { type: "STOPPED" } | { type: "ADD_BREAKER"; input: BreakerInput };

/** The node machine. */
export const nodeMachine = setup({
  types: { context: {} as NodeContext, events: {} as NodeEvent, input: {} as NodeInput },
  actors: {
    poller: pollerMachine,
    strategy: pollingStrategyLogic,
    jobTask: jobTaskMachine,
    watchdog: watchdogMachine,
    breaker: breakerMachine,
  },
}).createMachine({
  id: "node",
  context: ({ input }) => ({ ...input, breakers: [] }),
  initial: "running",
  entry: [
    spawnChild("strategy", {
      id: "strategy",
      systemId: "strategy",
      input: ({ context }): PollingStrategyInput => ({ config: context.polling, now: context.now() }),
    }),
    spawnChild("poller", {
      id: "poller",
      systemId: "poller",
      input: ({ context }) => ({ delayMs: context.polling.minDelayMs }),
    }),
    enqueueActions(({ context, enqueue }) => {
      for (let slot = 0; slot < context.concurrency; slot++) {
        enqueue.spawnChild("jobTask", {
          id: `slot-${slot}`,
          systemId: `slot-${slot}`,
          input: { slot, now: context.now },
        });
        enqueue.spawnChild("watchdog", {
          id: `watchdog-${slot}`,
          systemId: `watchdog-${slot}`,
          input: { slot, config: context.watchdog, now: context.now },
        });
      }
    }),
  ],
  on: {
    ADD_BREAKER: {
      actions: enqueueActions(({ context, event, enqueue }) => {
        if (context.breakers.includes(event.input.service)) return;
        enqueue.assign({ breakers: [...context.breakers, event.input.service] });
        enqueue.spawnChild("breaker", {
          id: `breaker-${event.input.service}`,
          systemId: `breaker-${event.input.service}`,
          input: event.input,
        });
      }),
    },
  },
  states: {
    running: { on: { DRAIN: "draining" } },
    draining: {
      entry: sendTo("poller", { type: "DRAIN" }),
      on: { STOPPED: "stopped" },
    },
    stopped: { type: "final" },
  },
});
