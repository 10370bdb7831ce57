/**
 * Concurrency keys (docs/fairness.md): a job's slot in its key is free only once its outcome has landed
 * (the lease ends in that write), not when its handler returns. A claim held back by a key's limit would
 * otherwise find the key still full and wait out the poll delay; this sink wrapper wakes the poller when an
 * outcome lands while the last claim was held back, so the key's next job is claimed at once.
 */
import type { OutcomeSink } from "../../store/outcomes/outcome-sink.js";

/** `sink`, calling `wake()` after each landed outcome while `heldBack()` says a claim waits on a limit. */
export function wakeOnLanded(sink: OutcomeSink, heldBack: () => boolean, wake: () => void): OutcomeSink {
  const after =
    (done: (accepted: boolean) => void) =>
    (accepted: boolean): void => {
      done(accepted);
      if (heldBack()) wake();
    };
  return {
    complete: (item, done) => sink.complete(item, after(done)),
    retry: (item, done) => sink.retry(item, after(done)),
    kill: (item, done) => sink.kill(item, after(done)),
    reschedule: (item, done) => sink.reschedule(item, after(done)),
    ...(sink.progress ? { progress: (item) => sink.progress?.(item) } : {}),
  };
}
