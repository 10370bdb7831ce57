/**
 * Runs a handler inside its attempt's context (so JobContext.current() works anywhere below it) and
 * reports how it settled. A synchronous throw, a rejected promise and a non-Error all become outcomes;
 * nothing a handler does can throw into the runtime. Shared by the node and pawl/testing.
 */
import { jobContextStorage } from "./context-storage.js";
import { settlementOf } from "./finish-attempt.js";
import type { JobContext } from "./job-context.js";
import type { TaskOutcome } from "../../machines/job-task-machine.js";
import type { Handler } from "../registry.js";

/** Calls `handler(payload, ctx)` and passes its outcome to `settle` (once, asynchronously). */
export function invokeHandler(
  handler: Handler,
  payload: unknown,
  ctx: JobContext,
  settle: (outcome: TaskOutcome) => void,
): void {
  let result: unknown;
  try {
    // run(store, fn, ...args) passes the arguments on: no closure per call.
    result = jobContextStorage.run(ctx, handler, payload, ctx);
  } catch (error) {
    result = Promise.reject(error);
  }
  Promise.resolve(result).then(
    (value) => settle({ kind: "success", result: value }),
    (error: unknown) => settle(settlementOf(error, ctx)),
  );
}
