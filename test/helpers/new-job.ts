import type { NewJob } from "../../src/input/enqueue-input.js";

/**
 * A validated job as the store's enqueue takes it (what enqueue-input builds from a call): type `t` in the
 * default queue, an empty payload, priority 10, due now, 25 attempts, no timeout or unique key, with
 * `over` on top.
 */
export function newJob(over: Partial<NewJob> = {}): NewJob {
  return {
    type: "t",
    queue: "default",
    payloadJson: "{}",
    priority: 10,
    runAt: null,
    delayMs: 0,
    timeoutMs: null,
    maxAttempts: 25,
    uniqueKey: null,
    ...over,
  };
}
