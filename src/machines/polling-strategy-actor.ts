/**
 * The adaptive polling strategy as an actor: a transition actor (no states of its own beyond the pure
 * {@link PollingState}) whose snapshot anyone can inspect. The poller reports each poll (`POLLED`) and each
 * wakeup (`WAKEUP`); the pure reducers in logic/polling-strategy.ts decide the mode (burst, normal, deep
 * idle) and the next delay. A transition actor costs a few microseconds per event, so it stays cheap
 * even when a busy node polls hundreds of times a second.
 */
import { fromTransition } from "xstate";
import {
  afterPoll,
  afterWakeup,
  initialPollingState,
  type PollingConfig,
  type PollingState,
  type PollSample,
} from "../logic/polling-strategy.js";

/** Events the strategy accepts. */
export type PollingStrategyEvent =
  { type: "POLLED"; sample: PollSample; utilization: number } | { type: "WAKEUP"; now: number };

/** Input of the strategy actor. */
export interface PollingStrategyInput {
  config: PollingConfig;
  now: number;
}

/** The strategy's snapshot context: the pure state plus its config. */
export interface PollingStrategyContext extends PollingState {
  config: PollingConfig;
}

/** The polling-strategy actor logic. */
export const pollingStrategyLogic = fromTransition(
  (state: PollingStrategyContext, event: PollingStrategyEvent): PollingStrategyContext => {
    switch (event.type) {
      case "POLLED":
        return { ...afterPoll(state, event.sample, event.utilization, state.config), config: state.config };
      case "WAKEUP":
        return { ...afterWakeup(state, event.now, state.config), config: state.config };
    }
  },
  ({ input }: { input: PollingStrategyInput }) => ({
    ...initialPollingState(input.now, input.config),
    config: input.config,
  }),
);
