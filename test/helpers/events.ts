/**
 * Waiting for a job's event without a race. A started node can run a job before the enqueue call that
 * created it returns, so a listener attached after the enqueue may miss the event. {@link jobEvent}
 * subscribes first and keeps every matching event; the id, known once the enqueue returns, then picks
 * the one that belongs to the job (an event emitted before the id was known counts).
 *
 * @example
 * ```ts
 * const succeeded = jobEvent(node.events, "job:succeeded");
 * const job = await client.enqueue("mail", {});
 * await succeeded.for(job.id);
 * ```
 */
import type { PawlEventEmitter, PawlEventName, PawlEvents } from "../../src/core/events.js";

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
 * Subscribes to `name` on `events` (one node's emitter, or several: the first event of a job on any of
 * them counts) now, before the enqueue, keeping the events that pass `filter`; `.for(id)` then resolves with the job's event. The wait times out `timeoutMs` (default
 * 10 s) after `.for` is called, with a message naming the event and the jobs.
 */
export function jobEvent<E extends JobEventName>(
  events: PawlEventEmitter | readonly PawlEventEmitter[],
  name: E,
  filter: (payload: PawlEvents[E]) => boolean = () => true,
  timeoutMs = 10_000,
): JobEventWait<E> {
  const seen = new Map<string, PawlEvents[E]>();
  let check: (() => void) | undefined;
  const offs = (Array.isArray(events) ? events : [events]).map((emitter: PawlEventEmitter) =>
    emitter.on(name, (payload) => {
      if (!filter(payload)) return;
      const id = idOf(payload as { job: { id: string } } | { jobId: string });
      if (!seen.has(id)) seen.set(id, payload);
      check?.();
    }),
  );
  const off = () => offs.forEach((o) => o());
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
  const forAll = (ids: readonly string[]) =>
    wait(ids, () => (ids.every((i) => seen.has(i)) ? ids.map((i) => seen.get(i)!) : undefined));
  return {
    for: (id) => wait([id], () => seen.get(id)),
    forAll,
    forAny: (ids) => wait(ids, () => [...seen].find(([id]) => ids.includes(id))?.[1]),
    stop: off,
  };
}
