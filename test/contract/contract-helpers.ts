/**
 * Waiting helpers for the coordinator contract: every wait is on an event (a listener resolving a
 * promise) with a deadline, never a fixed sleep, so the suite is as fast as the transport and a hang
 * fails with a message saying what never happened.
 */
import type { Coordinator, CoordinatorEvents, WakeupHint } from "../../coordinators/index.js";

/** Resolves when `register`'s callback is called, rejects after `timeoutMs` naming `what`. */
export function waitFor<T>(
  what: string,
  timeoutMs: number,
  register: (resolve: (value: T) => void) => () => void,
): Promise<T> {
  return new Promise((resolve, reject) => {
    let unsubscribe: () => void = () => {};
    const timer = setTimeout(() => {
      unsubscribe();
      reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`));
    }, timeoutMs);
    unsubscribe = register((value) => {
      clearTimeout(timer);
      unsubscribe();
      resolve(value);
    });
  });
}

/** The next hint `coordinator` delivers that matches `match`. Register before triggering the send. */
export function nextHint(
  coordinator: Coordinator,
  match: (hint: WakeupHint) => boolean,
  timeoutMs = 5_000,
  what = "a matching hint",
): Promise<WakeupHint> {
  return waitFor(what, timeoutMs, (resolve) =>
    coordinator.onWakeup((hint) => {
      if (match(hint)) resolve(hint);
    }),
  );
}

/** The next `event` from `coordinator`. Register before causing it. */
export function nextEvent<E extends keyof CoordinatorEvents>(
  coordinator: Coordinator,
  event: E,
  timeoutMs: number,
): Promise<Parameters<CoordinatorEvents[E]>> {
  return waitFor(`the ${event} event`, timeoutMs, (resolve) =>
    coordinator.on(event, ((...args: Parameters<CoordinatorEvents[E]>) =>
      resolve(args)) as CoordinatorEvents[E]),
  );
}

/**
 * Polls `condition` until it holds or the deadline passes. Only for state that no event announces
 * (counters bumped by an echo this node suppresses) and for servers coming back.
 */
export async function eventually(
  what: string,
  timeoutMs: number,
  condition: () => boolean | Promise<boolean>,
) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await condition()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Records every hint a coordinator delivers, for counting after a burst. */
export function record(coordinator: Coordinator): WakeupHint[] {
  const hints: WakeupHint[] = [];
  coordinator.onWakeup((hint) => hints.push(hint));
  return hints;
}

/** Median, 95th percentile and maximum of a list of milliseconds, rounded to 0.1 ms. */
export function summarise(samples: number[]): { median: number; p95: number; max: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number): number =>
    Math.round((sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0) * 10) / 10;
  return { median: at(0.5), p95: at(0.95), max: at(1) };
}
