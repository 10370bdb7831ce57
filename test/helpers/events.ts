/**
 * Listening to pawl's events in tests, on one node or several (a {@link Source}: a node, its emitter, or a
 * list of either).
 *
 * - {@link jobEvent}: a job's event without a race. A started node can run a job before the enqueue call
 *   that created it returns, so a listener attached after the enqueue may miss the event. `jobEvent`
 *   subscribes first and keeps every matching event; the id, known once the enqueue returns, then picks
 *   the one that belongs to the job (an event emitted before the id was known counts).
 * - {@link onAny}: the next event that matches, on any of the nodes (for events that name no job, or a job
 *   that already exists).
 * - {@link record}: every event that matches from now on, to count or inspect afterwards.
 *
 * @example
 * ```ts
 * const succeeded = jobEvent(node, "job:succeeded");
 * const job = await client.enqueue("mail", {});
 * await succeeded.for(job.id);
 * ```
 */
import type { PawlEventEmitter, PawlEventName, PawlEvents } from "../../src/core/events.js";

/** Where events come from: a node (anything with `events`), an emitter, or several of them. */
export type Source = Emitting | readonly Emitting[];
type Emitting = PawlEventEmitter | { readonly events: PawlEventEmitter };

/** Subscribes `listener` to `name` on every emitter of `from`; returns one function that unsubscribes all. */
function subscribe<E extends PawlEventName>(
  from: Source,
  name: E,
  listener: (payload: PawlEvents[E]) => void,
): () => void {
  const list: readonly Emitting[] = Array.isArray(from) ? from : [from as Emitting];
  const offs = list.map((x) => ("events" in x ? x.events : x).on(name, listener));
  return () => offs.forEach((off) => off());
}

/** The events that name one job: by `job.id` or by `jobId`. */
export type JobEventName = {
  [E in PawlEventName]: PawlEvents[E] extends { job: { id: string } } | { jobId: string } ? E : never;
}[PawlEventName];

/** A subscription made before the enqueue; ask it (once) for the event of a job once its id is known. */
export interface JobEventWait<E extends JobEventName> {
  /** The first `name` event of job `id` since the subscription; rejects after the timeout. */
  for(id: string): Promise<PawlEvents[E]>;
  /** The first `name` event of each job in `ids`, in that order; rejects after the timeout. */
  forAll(ids: readonly string[]): Promise<PawlEvents[E][]>;
  /** The first `name` event of any job in `ids` (the earliest emitted); rejects after the timeout. */
  forAny(ids: readonly string[]): Promise<PawlEvents[E]>;
  /** Unsubscribes (a wait that was never asked for stops listening). */
  stop(): void;
}

const idOf = (payload: { job: { id: string } } | { jobId: string }): string =>
  "job" in payload ? payload.job.id : payload.jobId;

/**
 * Subscribes to `name` on `from` now, before the enqueue, keeping the events that pass `filter` (on
 * several nodes, a job's first event on any of them counts); `.for(id)` then resolves with the job's
 * event. The wait times out `timeoutMs` (default 10 s) after `.for` is called, with a message naming the
 * event and the jobs.
 */
export function jobEvent<E extends JobEventName>(
  from: Source,
  name: E,
  filter: (payload: PawlEvents[E]) => boolean = () => true,
  timeoutMs = 10_000,
): JobEventWait<E> {
  const seen = new Map<string, PawlEvents[E]>();
  let check: (() => void) | undefined;
  const off = subscribe(from, name, (payload) => {
    if (!filter(payload)) return;
    const id = idOf(payload as { job: { id: string } } | { jobId: string });
    if (!seen.has(id)) seen.set(id, payload);
    check?.();
  });
  /** Resolves with `answer()` once it is defined. */
  const wait = <T>(ids: readonly string[], answer: () => T | undefined): Promise<T> =>
    new Promise((resolve, reject) => {
      if (check) throw new Error(`jobEvent(${name}) was already asked for its jobs`);
      const timer = setTimeout(() => {
        off();
        reject(
          new Error(`timed out after ${timeoutMs} ms waiting for event ${name} of job ${ids.join(", ")}`),
        );
      }, timeoutMs);
      check = () => {
        const found = answer();
        if (found === undefined) return;
        clearTimeout(timer);
        off();
        resolve(found);
      };
      check();
    });
  return {
    for: (id) => wait([id], () => seen.get(id)),
    forAll: (ids) =>
      wait(ids, () => (ids.every((i) => seen.has(i)) ? ids.map((i) => seen.get(i)!) : undefined)),
    forAny: (ids) => wait(ids, () => [...seen].find(([id]) => ids.includes(id))?.[1]),
    stop: off,
  };
}

/**
 * Resolves with the first `name` event matching `predicate` on any emitter of `from`, rejecting after
 * `timeoutMs` (default 20 s). Subscribe before causing the event; for a job not yet enqueued, use
 * {@link jobEvent}.
 */
export function onAny<E extends PawlEventName>(
  from: Source,
  name: E,
  predicate: (payload: PawlEvents[E]) => boolean = () => true,
  timeoutMs = 20_000,
): Promise<PawlEvents[E]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      off();
      const count = Array.isArray(from) ? from.length : 1;
      reject(new Error(`timed out after ${timeoutMs} ms waiting for ${name} on ${count} node(s)`));
    }, timeoutMs);
    const off = subscribe(from, name, (payload) => {
      if (!predicate(payload)) return;
      clearTimeout(timer);
      off();
      resolve(payload);
    });
  });
}

/** Every `name` event that matched since {@link record} was called. */
export interface Recording<E extends PawlEventName> {
  /** The events, in the order they were emitted. */
  readonly seen: readonly PawlEvents[E][];
  /** How many there were. */
  readonly n: number;
  /** Stops recording. */
  stop(): void;
}

/** Records the `name` events matching `predicate` on every emitter of `from`, until `stop()`. */
export function record<E extends PawlEventName>(
  from: Source,
  name: E,
  predicate: (payload: PawlEvents[E]) => boolean = () => true,
): Recording<E> {
  const seen: PawlEvents[E][] = [];
  const stop = subscribe(from, name, (payload) => void (predicate(payload) && seen.push(payload)));
  return {
    seen,
    get n() {
      return seen.length;
    },
    stop,
  };
}
