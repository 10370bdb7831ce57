/**
 * The AsyncLocalStorage behind JobContext.current(), in its own module so the errors a handler throws and
 * the context can both use it. It holds what those errors need of an attempt ({@link AttemptScope}), which
 * JobContext implements, so neither module imports the other's class.
 */
import { AsyncLocalStorage } from "node:async_hooks";

/** What an error created inside a handler reads of the attempt it runs in. */
export interface AttemptScope {
  /** Identifies the attempt (a fresh object per attempt). */
  readonly attemptToken: object;
  /** Whether the attempt's cancellation has been requested. */
  isCancellationRequested(): boolean;
}

/** @internal The attempt the current async call tree runs in; only JobContexts are stored. */
export const jobContextStorage = new AsyncLocalStorage<AttemptScope>();
