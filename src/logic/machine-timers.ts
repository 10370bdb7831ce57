/**
 * The timers of a durable machine (docs/durable-machines.md): what an xstate `after` delay becomes once the
 * machine is persisted. xstate's `getPersistedSnapshot()` keeps no scheduled events, and its scheduler
 * restarts a restored delay from zero, so pawl keeps its own list: each timer is the scheduling record
 * (the `sendId` xstate cancels it by, and the event it delivers) with an absolute due time. The list is
 * pure data saved with the snapshot; these functions decide what fires now, what is delivered first, and
 * when a parked machine must wake.
 *
 * Times are epoch ms of the node's clock (the clock that schedules also compares).
 */

/** An event a machine receives: xstate's shape, kept as JSON. */
export interface MachineEventJson {
  type: string;
  [key: string]: unknown;
}

/** One pending `after` delay of a machine. */
export interface MachineTimer {
  /** xstate's id of the delayed send (`xstate.after.<delay>.<state id>`): what its cancel names. */
  id: string;
  /** The event it delivers when due. */
  event: MachineEventJson;
  /** When it is due (epoch ms). */
  dueAt: number;
}

/** An event waiting in a machine's inbox: its per-machine sequence and when its send committed. */
export interface InboxEvent {
  seq: number;
  sentAt: number;
}

/** What a machine receives next: a due timer, an inbox event, or nothing now. */
export type NextInput = { kind: "timer"; timer: MachineTimer } | { kind: "event"; event: InboxEvent } | null;

/**
 * The timer a scheduling record becomes: due `delay` ms after it was scheduled.
 *
 * @example
 * ```ts
 * timerOf({ id: "xstate.after.2000.order.paying", event: { type: "xstate.after.2000.order.paying" }, delay: 2000 }, 1_000);
 * // { id: ..., event: ..., dueAt: 3_000 }
 * ```
 */
export function timerOf(
  record: { id: string; event: MachineEventJson; delay: number },
  scheduledAt: number,
): MachineTimer {
  const delay = Number.isFinite(record.delay) && record.delay > 0 ? record.delay : 0;
  return { id: record.id, event: record.event, dueAt: scheduledAt + delay };
}

/** The timers ordered by due time (equal times keep their order); the input is left alone. */
export function byDueTime(timers: readonly MachineTimer[]): MachineTimer[] {
  return [...timers].sort((a, b) => a.dueAt - b.dueAt);
}

/**
 * The next input of a machine, in the order the world produced them: the earliest of the due timers (due
 * at or before `now`) and the oldest inbox event (`events` in sequence order), by time. A timer due at the
 * very time an event was sent goes first: it was decided by an earlier transition. Events are never held
 * back for a timer that is not due yet.
 */
export function nextInput(
  timers: readonly MachineTimer[],
  events: readonly InboxEvent[],
  now: number,
): NextInput {
  let timer: MachineTimer | undefined;
  for (const t of timers) if (t.dueAt <= now && (!timer || t.dueAt < timer.dueAt)) timer = t;
  const event = events[0];
  if (timer && (!event || timer.dueAt <= event.sentAt)) return { kind: "timer", timer };
  if (event) return { kind: "event", event };
  return null;
}

/**
 * How long a parked machine may sleep: until its earliest timer (at least 1 ms, as a park's timeout must
 * be), or null when it has none and waits for events only.
 */
export function parkTimeoutMs(timers: readonly MachineTimer[], now: number): number | null {
  if (timers.length === 0) return null;
  let earliest = Infinity;
  for (const t of timers) earliest = Math.min(earliest, t.dueAt);
  return Math.max(1, Math.ceil(earliest - now));
}
