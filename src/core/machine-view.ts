/**
 * What inspection shows of a durable machine (`getJob(id).machine`, `pawl job <id>`): its state, a
 * sanitized view of its context, its pending timers and its latest events. Plain data, read from the
 * machine's rows (migration 0020); the context view is bounded and hides secret-looking keys.
 */

/** A pending `after` timer of a machine. */
export interface MachineTimerView {
  /** xstate's id of the delayed event (`xstate.after.<delay>.<state id>`). */
  id: string;
  /** The event it delivers. */
  eventType: string;
  /** When it is due. */
  dueAt: Date;
}

/** One event of a machine's history. */
export interface MachineEventView {
  /** The event's number for its machine: the order its send committed in. */
  seq: number;
  type: string;
  /** pending: not delivered yet; consumed: a transition took it; ignored: its state did not accept it. */
  status: "pending" | "consumed" | "ignored";
  sentAt: Date;
  handledAt: Date | null;
  /** The state value after it was handled. */
  stateAfter: unknown;
}

/** A durable machine, as inspection shows it. */
export interface MachineView {
  /** The state value (null before the machine first ran). */
  value: unknown;
  /** The context, sanitized (see src/logic/context-view.ts). */
  context: unknown;
  /** active, done (a final state), error. Null before the first run. */
  status: string | null;
  /** The registered version the machine runs on (null before the first run). */
  version: string | null;
  timers: MachineTimerView[];
  /** The latest events, newest first (at most 50). */
  events: MachineEventView[];
  /** When the machine ended (its final state was saved), or null. */
  finishedAt: Date | null;
}
